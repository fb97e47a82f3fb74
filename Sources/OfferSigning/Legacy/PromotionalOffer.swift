import Foundation

/// What a customer asks to be signed: an offer of a subscription product of an app, for a customer.
///
/// Field names are the App Store's own. ``validate()`` enforces the bounds below; every signing path calls
/// it, so nothing that could move the boundaries between payload fields is ever signed.
///
/// | field | bound |
/// |---|---|
/// | `bundleIdentifier` | 1–155 characters (App Store Connect's limit for a bundle ID) |
/// | `productIdentifier` | 1–255 characters |
/// | `offerIdentifier` | 1–255 characters |
/// | `applicationUsername` | 1–255 characters; lower-cased before signing |
///
/// No field may contain U+2063 INVISIBLE SEPARATOR (the payload's field separator), a control character or an
/// invisible format or separator character (Unicode categories Cf, Zl, Zp: U+200D, U+202E, U+FEFF, U+2028, …). `applicationUsername` may not
/// contain U+0130 (İ, whose lower case is two characters) or U+03A3 (Σ, whose lower case depends on its
/// position and differs between Swift, Python and JavaScript), and is checked again after lower-casing.
public struct PromotionalOffer: Sendable, Hashable, Codable {
    /// The app's bundle identifier (`appBundleId` in Apple's documentation).
    public var bundleIdentifier: String
    /// The auto-renewable subscription's product identifier.
    public var productIdentifier: String
    /// The promotional offer's identifier, as set up in App Store Connect.
    public var offerIdentifier: String
    /// The customer: a hashed account identifier or an `appAccountToken`, as the app passes it to StoreKit.
    public var applicationUsername: String

    /// Creates an offer request.
    /// Whether an empty `applicationUsername` is refused. The sign API refuses it (every signature is for a
    /// customer); a Retention Messaging V1 answer for a customer known by no appAccountToken signs an empty one,
    /// as Apple's payload allows, and verification accepts one.
    public var requiresApplicationUsername = true

    private enum CodingKeys: String, CodingKey {
        case bundleIdentifier, productIdentifier, offerIdentifier, applicationUsername
    }

    public init(
        bundleIdentifier: String,
        productIdentifier: String,
        offerIdentifier: String,
        applicationUsername: String,
        requiresApplicationUsername: Bool = true
    ) {
        self.bundleIdentifier = bundleIdentifier
        self.productIdentifier = productIdentifier
        self.offerIdentifier = offerIdentifier
        self.applicationUsername = applicationUsername
        self.requiresApplicationUsername = requiresApplicationUsername
    }

    /// The longest values accepted, by field.
    public static let maximumLengths: [String: Int] = [
        "bundleIdentifier": PayloadField.maximumBundleIdentifierLength,
        "productIdentifier": PayloadField.maximumLength,
        "offerIdentifier": PayloadField.maximumLength,
        "applicationUsername": PayloadField.maximumLength,
    ]

    /// Checks every field against the bounds of this type.
    /// - Throws: ``OfferSigningError`` `invalidField`, with the field named.
    public func validate() throws(OfferSigningError) {
        try PayloadField.validate(bundleIdentifier, named: "bundleIdentifier", maximumLength: PayloadField.maximumBundleIdentifierLength)
        try PayloadField.validate(productIdentifier, named: "productIdentifier")
        try PayloadField.validate(offerIdentifier, named: "offerIdentifier")
        if !applicationUsername.isEmpty || requiresApplicationUsername {
            try PayloadField.validateApplicationUsername(applicationUsername)
        }
    }
}

/// Checks that a value can be a field of a signed payload.
public enum PayloadField {
    /// U+2063 INVISIBLE SEPARATOR, the separator of the legacy payload's fields.
    public static let separator: Character = "\u{2063}"
    /// The longest bundle identifier (App Store Connect's limit).
    public static let maximumBundleIdentifierLength = 155
    /// The longest product identifier, offer identifier or applicationUsername.
    public static let maximumLength = 255

    /// Refuses an empty value, one longer than `maximumLength` characters, or one that contains U+2063 or a
    /// control character.
    /// - Throws: ``OfferSigningError`` `invalidField` naming `field`.
    public static func validate(_ value: String, named field: String, maximumLength: Int = PayloadField.maximumLength) throws(OfferSigningError) {
        // Printable ASCII (a byte a scalar, no separator, no format character): valid when not empty and short
        // enough, decided in one pass over the bytes; anything else takes the checks below, which say what is wrong.
        if isPrintableASCII(value), !value.isEmpty, value.utf8.count <= maximumLength { return }
        if value.isEmpty {
            throw .invalidField(field, "\(field) is required and must not be empty.")
        }
        if value.unicodeScalars.count > maximumLength {
            throw .invalidField(field, "\(field) is longer than \(maximumLength) characters.")
        }
        for scalar in value.unicodeScalars {
            if scalar == "\u{2063}" {
                throw .invalidField(
                    field,
                    "\(field) contains U+2063 INVISIBLE SEPARATOR, which separates the fields of the signed payload; remove it."
                )
            }
            if scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value) {
                throw .invalidField(field, "\(field) contains a control character; remove it.")
            }
            if scalar.isASCII { continue }  // no ASCII character is a format or separator character (the lookup is not free)
            switch scalar.properties.generalCategory {
            case .format, .lineSeparator, .paragraphSeparator:
                throw .invalidField(
                    field,
                    """
                    \(field) contains the invisible character U+\(String(scalar.value, radix: 16, uppercase: true)) (a format or separator \
                    character); remove it.
                    """
                )
            default:
                break
            }
        }
    }

    /// Validates a customer identifier: as ``validate(_:named:maximumLength:)``, and refuses characters whose
    /// lower case is not one character or depends on the context (İ U+0130, Σ U+03A3: Swift, Python and
    /// JavaScript disagree on them), then checks the lower-cased form, which is what is signed; refuses a value that
    /// is not in Unicode NFC (`cape` + U+0301 where `capé` is meant), so one visible name is one customer for caps,
    /// grants, rate limits and the log alike. The service never rewrites it: StoreKit is handed the exact bytes.
    /// - Throws: ``OfferSigningError`` `invalidField` naming `field`.
    public static func validateApplicationUsername(_ value: String, named field: String = "applicationUsername") throws(OfferSigningError) {
        try validate(value, named: field)
        // ASCII: its lower case is the same length with the same characters but letters, so it passes `validate`
        // as `value` did, and ASCII is in NFC; the checks below would find nothing (a signing request's common case).
        if value.utf8.allSatisfy({ $0 < 0x80 }) { return }
        for scalar in value.unicodeScalars where !scalar.isASCII && (scalar == "\u{03A3}" || String(scalar).lowercased().unicodeScalars.count != 1) {
            throw .invalidField(
                field,
                """
                \(field) contains U+\(String(scalar.value, radix: 16, uppercase: true)), whose lower case is not one fixed character; use its \
                lower-case form or an ASCII identifier such as the appAccountToken UUID.
                """
            )
        }
        try validate(value.lowercased(), named: field)
        if !value.utf8.allSatisfy({ $0 < 0x80 }), !isNFC(value) || !isNFC(value.lowercased()) {
            throw .invalidField(
                field,
                """
                \(field) is not in Unicode normalization form C (NFC): the same visible name can be spelled with other code points, and the \
                signature covers the exact ones. Normalize it to NFC in the app and on the server before sending it.
                """
            )
        }
    }

    /// Whether every byte of `value` is printable ASCII (0x20 to 0x7E).
    static func isPrintableASCII(_ value: String) -> Bool {
        var value = value
        return value.withUTF8 { bytes in
            for byte in bytes where byte < 0x20 || byte >= 0x7F { return false }
            return true
        }
    }

    /// Whether a string's code points are already in Unicode normalization form C.
    static func isNFC(_ value: String) -> Bool {
        value.precomposedStringWithCanonicalMapping.unicodeScalars.elementsEqual(value.unicodeScalars)
    }
}
