import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import OfferApplication
import OfferSigning
import OfferStore

/// One signed-in admin of the console.
struct ConsoleSession: Sendable {
    /// The admin's name (the name of the token they signed in with), for the pages and the audit.
    var admin: String
    /// The token every form of this session carries in a hidden field (``ConsoleSessions/csrfField``).
    var csrfToken: String
    /// When the session ends, whatever happens (wall-clock time, which replicas share).
    var expiresAt: Date
}

/// The console's sessions, keyed by the SHA-256 of the cookie's value (the value itself is never kept), each
/// expiring ``lifetime`` after sign-in; at most ``maximumSessions`` (the oldest goes first).
///
/// With a store they are kept in it (``ConsoleSessionRecord``), so a session signed in on one replica works on
/// every replica sharing the store, a sign-out on one ends it on all, and a restart signs no one out: a session
/// is read from the store on each console request (the console is not a hot path). Without a store they live in
/// this process's memory.
actor ConsoleSessions {
    /// The cookie's name.
    static let cookieName = "offer_signer_session"
    /// The hidden field of every console form.
    static let csrfField = "csrf"
    /// How long a session lasts.
    static let lifetime: TimeInterval = 8 * 3600
    /// The most sessions held at once.
    static let maximumSessions = 1000

    private let store: (any ConsoleSessionStore)?
    private var sessions: [SHA256.Digest: ConsoleSession] = [:]

    /// - Parameter store: where replicas share the sessions; `nil` keeps them in memory.
    init(store: (any ConsoleSessionStore)? = nil) {
        self.store = store
    }

    /// Starts a session for `admin`.
    /// - Returns: the cookie's value (32 random bytes, base64url) and the session.
    /// - Throws: ``OfferServiceError`` 503 `store_unavailable` when the store cannot keep it.
    func start(admin: String, now: Date = Date()) async throws -> (cookieValue: String, session: ConsoleSession) {
        let cookieValue = Self.randomToken()
        let session = ConsoleSession(admin: admin, csrfToken: Self.randomToken(), expiresAt: now + Self.lifetime)
        if let store {
            let record = ConsoleSessionRecord(digest: Self.hex(cookieValue), admin: admin, csrfToken: session.csrfToken, expiresAt: session.expiresAt)
            try await storeCall { try await store.saveConsoleSession(record, keepingAtMost: Self.maximumSessions) }
            return (cookieValue, session)
        }
        removeExpired(now: now)
        if sessions.count >= Self.maximumSessions, let oldest = sessions.min(by: { $0.value.expiresAt < $1.value.expiresAt }) {
            sessions[oldest.key] = nil
        }
        sessions[Self.digest(cookieValue)] = session
        return (cookieValue, session)
    }

    /// The session of a cookie value, if it is one and has not expired.
    /// - Throws: ``OfferServiceError`` 503 `store_unavailable` when the store cannot be read.
    func session(_ cookieValue: String, now: Date = Date()) async throws -> ConsoleSession? {
        guard cookieValue.utf8.count <= 128 else { return nil }
        if let store {
            let record = try await storeCall { try await store.consoleSession(digest: Self.hex(cookieValue)) }
            guard let record, record.expiresAt > now else { return nil }
            return ConsoleSession(admin: record.admin, csrfToken: record.csrfToken, expiresAt: record.expiresAt)
        }
        let key = Self.digest(cookieValue)
        guard let session = sessions[key] else { return nil }
        guard session.expiresAt > now else {
            sessions[key] = nil
            return nil
        }
        return session
    }

    /// Ends the session of a cookie value (on every replica, with a store).
    func end(_ cookieValue: String) async throws {
        guard cookieValue.utf8.count <= 128 else { return }
        if let store {
            try await storeCall { try await store.deleteConsoleSession(digest: Self.hex(cookieValue)) }
            return
        }
        sessions[Self.digest(cookieValue)] = nil
    }

    private func removeExpired(now: Date) {
        sessions = sessions.filter { $0.value.expiresAt > now }
    }

    private static func digest(_ value: String) -> SHA256.Digest { SHA256.hash(data: Data(value.utf8)) }

    private static func hex(_ value: String) -> String { digest(value).hexString }

    /// 32 bytes from the system's secure random generator, base64url without padding.
    static func randomToken() -> String {
        SymmetricKey(size: .bits256).withUnsafeBytes { Data($0) }.base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }

    /// Whether two tokens are equal, in time that depends only on their lengths.
    static func constantTimeEqual(_ presented: String, _ expected: String) -> Bool {
        let left = Array(presented.utf8)
        let right = Array(expected.utf8)
        guard left.count == right.count else { return false }
        var difference: UInt8 = 0
        for index in left.indices { difference |= left[index] ^ right[index] }
        return difference == 0
    }

    /// The session cookie's value in a request's `Cookie` header.
    static func cookieValue(in request: Request) -> String? {
        for header in request.headers[values: .cookie] {
            for pair in header.split(separator: ";") {
                let parts = pair.split(separator: "=", maxSplits: 1)
                if parts.count == 2, parts[0].trimmingCharacters(in: .whitespaces) == cookieName {
                    return parts[1].trimmingCharacters(in: .whitespaces)
                }
            }
        }
        return nil
    }

    /// Whether the request reached the service over TLS: through a proxy that says so (`X-Forwarded-Proto: https`)
    /// or, were the listener to terminate TLS itself, its scheme.
    static func isSecure(_ request: Request) -> Bool {
        if request.head.scheme == "https" { return true }
        guard let proto = request.headers[HTTPField.Name("X-Forwarded-Proto")!] else { return false }
        return proto.split(separator: ",").first?.trimmingCharacters(in: .whitespaces).lowercased() == "https"
    }

    /// The `Set-Cookie` value that stores `value` (or, with `nil`, deletes the cookie).
    static func setCookie(_ value: String?, secure: Bool) -> String {
        let maxAge = value == nil ? 0 : Int(lifetime)
        return "\(cookieName)=\(value ?? ""); Path=/console; Max-Age=\(maxAge); HttpOnly; SameSite=Strict\(secure ? "; Secure" : "")"
    }
}
