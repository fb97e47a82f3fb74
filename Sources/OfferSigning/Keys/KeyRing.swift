import Foundation

/// The keys the service holds, which one signs, and which are revoked. An immutable value: a reload builds a
/// new ring and swaps it in whole, so a request sees one consistent set of keys.
///
/// ## Usage
///
/// ```swift
/// let ring = try KeyRing(keys: [.init(key: oldKey, source: "env"), .init(key: newKey, source: "env")],
///                        activeKeyIdentifier: "NEWKEY0001")
/// let signer = try ring.activeKey()                 // NEWKEY0001
/// ring.state(of: "OLDKEY0001")                      // .retired: still verifies
/// ```
///
/// A key's state is derived: the active key (per app, or the default) is `active`, a key in
/// ``revokedKeyIdentifiers`` is `revoked`, every other key is `retired`.
public struct KeyRing: Sendable {
    /// A key with where it came from.
    public struct Entry: Sendable {
        /// The key.
        public var key: SigningKey
        /// Where it was read from, for admins: `environment OFFER_SIGNER_KEY_<ID>`, a file path, …
        public var source: String
        /// When it was read.
        public var loadedAt: Date

        /// Creates an entry.
        public init(key: SigningKey, source: String, loadedAt: Date = Date()) {
            self.key = key
            self.source = source
            self.loadedAt = loadedAt
        }
    }

    /// The keys, ordered by key identifier.
    public let entries: [Entry]
    /// The key that signs new offers for apps without an app-specific active key.
    public let activeKeyIdentifier: String?
    /// App-specific active keys, by bundle identifier.
    public let activeKeyIdentifiersByApp: [String: String]
    /// Keys that must neither sign nor verify.
    public let revokedKeyIdentifiers: Set<String>
    /// The public halves of revoked keys whose files are no longer loaded (the key states remember them): still
    /// listed, as revoked, and their signatures reported `key_revoked`, not as made with an unknown key.
    public let revokedKeysNotLoaded: [VerificationKey]
    private let index: [String: Int]

    /// Builds a key ring and checks that it is coherent.
    ///
    /// - Parameters:
    ///   - keys: the keys; two entries with the same identifier must hold the same key.
    ///   - activeKeyIdentifier: the default signing key. `nil` means "the only key that is not revoked", and no
    ///     default signing key when there are several.
    ///   - activeKeyIdentifiersByApp: app-specific signing keys.
    ///   - revokedKeyIdentifiers: compromised keys.
    ///   - revokedKeysNotLoaded: the public keys of revoked keys, remembered; those whose files are among `keys`
    ///     are left out.
    /// - Throws: ``OfferSigningError`` `unknownKey` when an active key is not among `keys`, `noSigningKey` when
    ///   an active key is revoked, `conflictingKey` when one identifier names two different keys.
    public init(
        keys: [Entry],
        activeKeyIdentifier: String? = nil,
        activeKeyIdentifiersByApp: [String: String] = [:],
        revokedKeyIdentifiers: Set<String> = [],
        revokedKeysNotLoaded: [VerificationKey] = []
    ) throws(OfferSigningError) {
        var unique: [String: Entry] = [:]
        for entry in keys {
            if let existing = unique[entry.key.keyIdentifier] {
                guard existing.key.fingerprint == entry.key.fingerprint else {
                    throw OfferSigningError(
                        .conflictingKey,
                        "Key \(entry.key.keyIdentifier) is defined twice with different keys (\(existing.source) and \(entry.source)); remove one."
                    )
                }
                continue
            }
            unique[entry.key.keyIdentifier] = entry
        }
        let sorted = unique.values.sorted { $0.key.keyIdentifier < $1.key.keyIdentifier }
        var index: [String: Int] = [:]
        for (position, entry) in sorted.enumerated() { index[entry.key.keyIdentifier] = position }

        let usable = sorted.filter { !revokedKeyIdentifiers.contains($0.key.keyIdentifier) }
        let defaultActive = activeKeyIdentifier ?? (usable.count == 1 ? usable[0].key.keyIdentifier : nil)
        for (app, keyIdentifier) in [("", defaultActive)] + activeKeyIdentifiersByApp.map({ ($0.key, Optional($0.value)) }) {
            guard let keyIdentifier else { continue }
            let forApp = app.isEmpty ? "" : " for \(app)"
            guard index[keyIdentifier] != nil else {
                throw OfferSigningError(
                    .unknownKey,
                    """
                    The active key\(forApp), \(keyIdentifier), is not among the loaded keys \
                    (\(sorted.map(\.key.keyIdentifier).joined(separator: ", "))); add it or choose another.
                    """
                )
            }
            guard !revokedKeyIdentifiers.contains(keyIdentifier) else {
                throw OfferSigningError(
                    .noSigningKey,
                    "The active key\(forApp), \(keyIdentifier), is revoked; activate another key first."
                )
            }
        }
        self.entries = sorted
        self.index = index
        self.activeKeyIdentifier = defaultActive
        self.activeKeyIdentifiersByApp = activeKeyIdentifiersByApp
        self.revokedKeyIdentifiers = revokedKeyIdentifiers
        self.revokedKeysNotLoaded =
            revokedKeysNotLoaded
            .filter { index[$0.keyIdentifier] == nil && revokedKeyIdentifiers.contains($0.keyIdentifier) }
            .sorted { $0.keyIdentifier < $1.keyIdentifier }
    }

    /// An empty ring: nothing signs, nothing verifies.
    public static let empty: KeyRing = {
        do { return try KeyRing(keys: []) } catch { preconditionFailure("an empty key ring is always coherent") }
    }()

    /// The entry for a key identifier, whatever its state.
    public func entry(for keyIdentifier: String) -> Entry? {
        index[keyIdentifier].map { entries[$0] }
    }

    /// The state of a key, or `nil` if the ring does not hold it.
    public func state(of keyIdentifier: String) -> KeyState? {
        // A revoked key stays revoked when its file is removed: its old signatures say so.
        if revokedKeyIdentifiers.contains(keyIdentifier) { return .revoked }
        guard index[keyIdentifier] != nil else { return nil }
        if keyIdentifier == activeKeyIdentifier || activeKeyIdentifiersByApp.values.contains(keyIdentifier) {
            return .active
        }
        return .retired
    }

    /// The key that signs new offers for an app.
    /// - Parameter bundleIdentifier: the app; `nil` for the default active key.
    /// - Throws: ``OfferSigningError`` `noSigningKey` when there is none.
    public func activeKey(forApp bundleIdentifier: String? = nil) throws(OfferSigningError) -> SigningKey {
        let keyIdentifier = bundleIdentifier.flatMap { activeKeyIdentifiersByApp[$0] } ?? activeKeyIdentifier
        guard let keyIdentifier, let entry = entry(for: keyIdentifier) else {
            throw OfferSigningError(
                .noSigningKey,
                entries.isEmpty
                    ? "No signing key is loaded; set OFFER_SIGNER_KEY_<KEYID>, OFFER_SIGNER_KEY_<KEYID>_FILE or OFFER_SIGNER_KEYS_DIR."
                    : """
                    Several keys are loaded and none is active; set OFFER_SIGNER_ACTIVE_KEY_ID to one of \
                    \(entries.map(\.key.keyIdentifier).joined(separator: ", ")).
                    """
            )
        }
        return entry.key
    }

    /// The key that verifies signatures made under `keyIdentifier`, or `nil` if unknown. Revoked keys are
    /// returned too; callers decide (``LegacyOfferVerifier`` reports them as not valid).
    public func verificationKey(for keyIdentifier: String) -> VerificationKey? {
        entry(for: keyIdentifier)?.key.verificationKey ?? revokedKeysNotLoaded.first { $0.keyIdentifier == keyIdentifier }
    }
}
