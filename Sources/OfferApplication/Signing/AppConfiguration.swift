/// One app the service signs for.
public struct AppConfiguration: Sendable, Hashable {
    /// The app's bundle identifier.
    public var bundleIdentifier: String
    /// The App Store Connect issuer ID, for JWS signatures.
    public var issuerIdentifier: String?
    /// The app's Apple ID, which Production notifications must carry.
    public var appAppleId: Int64?

    /// Creates an app configuration.
    public init(bundleIdentifier: String, issuerIdentifier: String? = nil, appAppleId: Int64? = nil) {
        self.bundleIdentifier = bundleIdentifier
        self.issuerIdentifier = issuerIdentifier
        self.appAppleId = appAppleId
    }
}
