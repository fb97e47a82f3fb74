import Crypto
import Foundation

/// Named bearer tokens — the admin tokens of `OFFER_SIGNER_ADMIN_TOKENS` and the client API keys of
/// `OFFER_SIGNER_API_KEYS`: `name:token` pairs, comma-separated. Tokens must be at least 16 characters and every
/// token needs its name (the credential's name in logs, metrics and the audit).
///
/// Only the SHA-256 of each token is kept. A presented token is hashed and compared with every configured
/// digest, without stopping at a match, using swift-crypto's constant-time digest comparison.
public struct BearerTokens: Sendable {
    private let digests: [(name: String, digest: SHA256.Digest)]

    /// The shortest token accepted.
    public static let minimumLength = 16

    /// No admin tokens: the admin API refuses everyone.
    public static let none = BearerTokens(digests: [])

    private init(digests: [(name: String, digest: SHA256.Digest)]) {
        self.digests = digests
    }

    /// Parses a `name:token,…` list.
    /// - Parameters:
    ///   - value: the variable's value.
    ///   - variable: its name, for messages.
    ///   - requireNames: refuse an entry without `name:`.
    /// - Throws: ``ConfigurationError`` for a token shorter than ``minimumLength``, a missing or repeated name
    ///   (the message names the entry by position and name, never the token).
    public init(
        parsing value: String,
        variable: String = ConfigurationVariable.adminTokens.environmentName,
        requireNames: Bool = true
    ) throws(ConfigurationError) {
        var parsed: [(String, SHA256.Digest)] = []
        for (position, entry) in value.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) }).enumerated() where !entry.isEmpty {
            let name: String
            let token: String
            if let colon = entry.firstIndex(of: ":") {
                name = String(entry[..<colon])
                token = String(entry[entry.index(after: colon)...])
            } else {
                guard !requireNames else {
                    throw ConfigurationError(
                        .invalidConfiguration,
                        """
                        \(variable) entry \(position + 1) has no name; write name:token (the name appears in logs and metrics, the token never \
                        does).
                        """
                    )
                }
                name = "admin\(position + 1)"
                token = entry
            }
            guard !name.isEmpty, name.count <= 64, name.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" || $0 == "." }) else {
                throw ConfigurationError(
                    .invalidConfiguration,
                    "\(variable) entry \(position + 1) has a name that is not 1–64 letters, digits, '-', '_' or '.'."
                )
            }
            guard token.count >= Self.minimumLength else {
                throw ConfigurationError(
                    .invalidConfiguration,
                    """
                    \(variable) entry \(position + 1) (\(name)) is shorter than \(Self.minimumLength) characters; use a long random token \
                    (openssl rand -hex 32).
                    """
                )
            }
            guard !parsed.contains(where: { $0.0 == name }) else {
                throw ConfigurationError(.invalidConfiguration, "\(variable) names \(name) twice; give each its own name.")
            }
            parsed.append((name, SHA256.hash(data: Data(token.utf8))))
        }
        self.init(digests: parsed.map { (name: $0.0, digest: $0.1) })
    }

    /// Whether any token is configured.
    public var isEmpty: Bool { digests.isEmpty }

    /// The name of the holder of this token, or `nil`.
    public func admin(presenting token: String) -> String? {
        var token = token
        let presented = token.withUTF8 { SHA256.hash(data: UnsafeRawBufferPointer($0)) }  // no copy into a Data
        var match: String?
        for entry in digests where entry.digest == presented {  // Digest == is constant-time
            match = entry.name
        }
        return match
    }
}
