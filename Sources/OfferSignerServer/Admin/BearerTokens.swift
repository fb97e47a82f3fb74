import Crypto
import Foundation

/// The admin bearer tokens of `OFFER_SIGNER_ADMIN_TOKENS`: `name:token` pairs, comma-separated (a token
/// without a name is called `admin1`, `admin2`, … in the audit). Tokens must be at least 16 characters.
///
/// Only the SHA-256 of each token is kept. A presented token is hashed and compared with every configured
/// digest, without stopping at a match, using swift-crypto's constant-time digest comparison.
public struct AdminTokens: Sendable {
    private let digests: [(name: String, digest: SHA256.Digest)]

    /// The shortest token accepted.
    public static let minimumLength = 16

    /// No admin tokens: the admin API refuses everyone.
    public static let none = AdminTokens(digests: [])

    private init(digests: [(name: String, digest: SHA256.Digest)]) {
        self.digests = digests
    }

    /// Parses `OFFER_SIGNER_ADMIN_TOKENS`.
    /// - Throws: ``ConfigurationError`` for a token shorter than ``minimumLength`` or a name used twice (the
    ///   message names the entry by position and name, never the token).
    public init(parsing value: String) throws(ConfigurationError) {
        var parsed: [(String, SHA256.Digest)] = []
        for (position, entry) in value.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) }).enumerated() where !entry.isEmpty {
            let name: String
            let token: String
            if let colon = entry.firstIndex(of: ":") {
                name = String(entry[..<colon])
                token = String(entry[entry.index(after: colon)...])
            } else {
                name = "admin\(position + 1)"
                token = entry
            }
            guard token.count >= Self.minimumLength else {
                throw ConfigurationError("OFFER_SIGNER_ADMIN_TOKENS entry \(position + 1) (\(name)) is shorter than \(Self.minimumLength) characters; use a long random token (openssl rand -hex 32).")
            }
            guard !parsed.contains(where: { $0.0 == name }) else {
                throw ConfigurationError("OFFER_SIGNER_ADMIN_TOKENS names \(name) twice; give each admin their own name.")
            }
            parsed.append((name, SHA256.hash(data: Data(token.utf8))))
        }
        self.init(digests: parsed.map { (name: $0.0, digest: $0.1) })
    }

    /// Whether any token is configured.
    public var isEmpty: Bool { digests.isEmpty }

    /// The name of the admin whose token this is, or `nil`.
    public func admin(presenting token: String) -> String? {
        let presented = SHA256.hash(data: Data(token.utf8))
        var match: String?
        for entry in digests where entry.digest == presented {  // Digest == is constant-time
            match = entry.name
        }
        return match
    }
}
