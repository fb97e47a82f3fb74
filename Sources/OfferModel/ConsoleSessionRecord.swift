import Foundation

/// A console session as the store keeps it, so that every replica sharing the store knows it: signed in on one, it
/// works on any; signed out on one, it is gone on all. Keyed by the SHA-256 of the cookie's value (hex): the value
/// itself is never stored.
public struct ConsoleSessionRecord: Sendable, Hashable {
    /// The SHA-256 of the session cookie's value, in lower-case hex.
    public var digest: String
    /// The admin's name (the name of the token they signed in with).
    public var admin: String
    /// The token every form of the session carries.
    public var csrfToken: String
    /// When the session ends, whatever happens (wall-clock time: replicas share it).
    public var expiresAt: Date

    public init(digest: String, admin: String, csrfToken: String, expiresAt: Date) {
        self.digest = digest
        self.admin = admin
        self.csrfToken = csrfToken
        self.expiresAt = expiresAt
    }
}
