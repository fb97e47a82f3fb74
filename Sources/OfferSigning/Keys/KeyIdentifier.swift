/// Rules for App Store Connect key identifiers.
///
/// App Store Connect shows a subscription key's identifier as 10 upper-case letters and digits
/// (`SubscriptionKey_ABC123DEFG.p8`). The service accepts 1 to 64 ASCII letters, digits and `_`,
/// so that test and demo keys can have readable names; a key identifier is part of every signed payload.
public enum KeyIdentifier {
    /// The longest key identifier accepted.
    public static let maximumLength = 64

    /// Whether `value` is an acceptable key identifier.
    public static func isValid(_ value: String) -> Bool {
        guard !value.isEmpty, value.utf8.count <= maximumLength else { return false }
        return value.utf8.allSatisfy { byte in
            (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A) || byte == 0x5F
        }
    }
}
