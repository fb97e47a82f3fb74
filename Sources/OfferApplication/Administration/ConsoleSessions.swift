import Crypto
import Foundation
import OfferModel
import OfferSigning
import OfferStore

/// One signed-in admin of the console.
public struct ConsoleSession: Sendable {
    /// The admin's name (the name of the token they signed in with), for the pages and the audit.
    public var admin: String
    /// The token every form of this session carries in a hidden field.
    public var csrfToken: String
    /// When the session ends, whatever happens (wall-clock time, which replicas share).
    public var expiresAt: Date

    /// A session.
    public init(admin: String, csrfToken: String, expiresAt: Date) {
        self.admin = admin
        self.csrfToken = csrfToken
        self.expiresAt = expiresAt
    }
}

/// The console's sessions, keyed by the SHA-256 of the cookie's value (the value itself is never kept), each
/// expiring ``lifetime`` after sign-in; at most ``maximumSessions`` (the oldest goes first). A sign-in is audited
/// (`console.signin`) when there is an audit log.
///
/// With a store they are kept in it (``ConsoleSessionRecord``), so a session signed in on one replica works on
/// every replica sharing the store, a sign-out on one ends it on all, and a restart signs no one out: a session
/// is read from the store on each console request (the console is not a hot path). Without a store they live in
/// this process's memory.
public actor ConsoleSessions {
    /// How long a session lasts.
    public static let lifetime: TimeInterval = 8 * 3600
    /// The most sessions held at once.
    public static let maximumSessions = 1000
    /// The longest cookie value looked up; a longer one is no session.
    static let maximumCookieLength = 128

    private let store: (any ConsoleSessionStore)?
    private let audit: (any AuditLog)?
    private var sessions: [SHA256.Digest: ConsoleSession] = [:]

    /// - Parameters:
    ///   - store: where replicas share the sessions; `nil` keeps them in memory.
    ///   - audit: where sign-ins are audited; `nil`: not audited.
    public init(store: (any ConsoleSessionStore)? = nil, audit: (any AuditLog)? = nil) {
        self.store = store
        self.audit = audit
    }

    /// Starts a session for `admin`, and audits the sign-in (an audit that cannot be written does not stop it).
    /// - Returns: the cookie's value (32 random bytes, base64url) and the session.
    /// - Throws: ``OfferServiceError`` 503 `store_unavailable` when the store cannot keep it.
    public func start(admin: String, now: Date = Date()) async throws(OfferServiceError) -> (cookieValue: String, session: ConsoleSession) {
        let cookieValue = Self.randomToken()
        let session = ConsoleSession(admin: admin, csrfToken: Self.randomToken(), expiresAt: now + Self.lifetime)
        if let store {
            let record = ConsoleSessionRecord(digest: Self.hex(cookieValue), admin: admin, csrfToken: session.csrfToken, expiresAt: session.expiresAt)
            try await storeCall { try await store.saveConsoleSession(record, keepingAtMost: Self.maximumSessions) }
        } else {
            removeExpired(now: now)
            if sessions.count >= Self.maximumSessions, let oldest = sessions.min(by: { $0.value.expiresAt < $1.value.expiresAt }) {
                sessions[oldest.key] = nil
            }
            sessions[Self.digest(cookieValue)] = session
        }
        if let audit {
            try? await audit.appendAudit(AuditEvent(at: now, actor: admin, action: "console.signin", target: "console"))
        }
        return (cookieValue, session)
    }

    /// The session of a cookie value, if it is one and has not expired.
    /// - Throws: ``OfferServiceError`` 503 `store_unavailable` when the store cannot be read.
    public func session(_ cookieValue: String, now: Date = Date()) async throws(OfferServiceError) -> ConsoleSession? {
        guard cookieValue.utf8.count <= Self.maximumCookieLength else { return nil }
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
    /// - Throws: ``OfferServiceError`` 503 `store_unavailable` when the store cannot be written.
    public func end(_ cookieValue: String) async throws(OfferServiceError) {
        guard cookieValue.utf8.count <= Self.maximumCookieLength else { return }
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
    public static func randomToken() -> String {
        SymmetricKey(size: .bits256).withUnsafeBytes { Data($0) }.base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }

    /// Whether two tokens are equal, in time that depends only on their lengths.
    public static func constantTimeEqual(_ presented: String, _ expected: String) -> Bool {
        let left = Array(presented.utf8)
        let right = Array(expected.utf8)
        guard left.count == right.count else { return false }
        var difference: UInt8 = 0
        for index in left.indices { difference |= left[index] ^ right[index] }
        return difference == 0
    }
}
