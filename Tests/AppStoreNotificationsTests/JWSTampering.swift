import Foundation
import Testing

/// Rewrites parts of a compact JWS for tests, leaving the signature as it was.
enum JWSTampering {
    /// The JSON object of segment `index` (0 header, 1 payload).
    static func json(of jws: String, segment index: Int) throws -> [String: Any] {
        let segments = jws.split(separator: ".", omittingEmptySubsequences: false)
        var base64 = segments[index].replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        let data = try #require(Data(base64Encoded: base64))
        return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    /// `jws` with segment `index` replaced by `object`, re-encoded; the signature is kept.
    static func replacing(segment index: Int, of jws: String, with object: [String: Any]) throws -> String {
        var segments = jws.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        let data = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
        segments[index] = data.base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
        return segments.joined(separator: ".")
    }

    /// `jws` with its header edited by `edit`.
    static func editingHeader(of jws: String, _ edit: (inout [String: Any]) -> Void) throws -> String {
        var header = try json(of: jws, segment: 0)
        edit(&header)
        return try replacing(segment: 0, of: jws, with: header)
    }

    /// `jws` with its payload edited by `edit`.
    static func editingPayload(of jws: String, _ edit: (inout [String: Any]) -> Void) throws -> String {
        var payload = try json(of: jws, segment: 1)
        edit(&payload)
        return try replacing(segment: 1, of: jws, with: payload)
    }
}
