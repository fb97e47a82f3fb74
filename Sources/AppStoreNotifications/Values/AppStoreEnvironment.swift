/// The App Store server environment that signed data comes from.
///
/// [environment](https://developer.apple.com/documentation/appstoreserverapi/environment)
///
/// A raw-value struct rather than an enum: a value the App Store adds later decodes as-is (compare it with the
/// constants below; never assume the list is complete).
public struct AppStoreEnvironment: RawRepresentable, Codable, Hashable, Sendable, CustomStringConvertible {
    /// The value exactly as the App Store sends it, e.g. `"Production"`.
    public let rawValue: String

    /// Wraps a value as the App Store sends it; unknown values are kept.
    public init(rawValue: String) {
        self.rawValue = rawValue
    }

    /// The raw value, for logs and error messages.
    public var description: String { rawValue }

    /// `Production`: The production App Store.
    public static let production = Self(rawValue: "Production")

    /// `Sandbox`: The sandbox (TestFlight, sandbox testers).
    public static let sandbox = Self(rawValue: "Sandbox")

    /// `Xcode`: StoreKit Testing in Xcode (signed by Xcode's local certificate, not by Apple).
    public static let xcode = Self(rawValue: "Xcode")

    /// `LocalTesting`: Local testing of the App Store Server Library.
    public static let localTesting = Self(rawValue: "LocalTesting")
}
