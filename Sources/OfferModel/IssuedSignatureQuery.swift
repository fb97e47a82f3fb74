import Foundation

/// Which issued signatures to return; every field narrows, `nil` means any.
public struct IssuedSignatureQuery: Sendable, Hashable {
    public var bundleIdentifier: String?
    public var applicationUsername: String?
    public var productIdentifier: String?
    public var offerIdentifier: String?
    public var keyIdentifier: String?
    /// Only signatures with `timestamp >= since` (Unix ms).
    public var since: Int64?
    /// Only signatures with `timestamp < until` (Unix ms).
    public var until: Int64?
    /// At most this many, newest first.
    public var limit: Int

    public init(
        bundleIdentifier: String? = nil,
        applicationUsername: String? = nil,
        productIdentifier: String? = nil,
        offerIdentifier: String? = nil,
        keyIdentifier: String? = nil,
        since: Int64? = nil,
        until: Int64? = nil,
        limit: Int = 100
    ) {
        self.bundleIdentifier = bundleIdentifier
        self.applicationUsername = applicationUsername.map { $0.lowercased() }
        self.productIdentifier = productIdentifier
        self.offerIdentifier = offerIdentifier
        self.keyIdentifier = keyIdentifier
        self.since = since
        self.until = until
        self.limit = limit
    }
}
