import Foundation
import Logging
import Metrics
import OfferErrors
import OfferSigning

/// A key-management failure. Messages say what to do and never contain key material.
public struct KeyManagementError: CodedError, Hashable, Sendable, CustomStringConvertible {

    /// What kind of failure.
    public var code: Code
    /// What is wrong and what to do.
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }

    /// The key states could not be read or saved: nothing changed, the current keys keep serving.
    static let stateStoreUnavailable = KeyManagementError(
        .stateStoreUnavailable,
        "The key states could not be read or saved; nothing was changed and the current keys keep serving. Try again shortly."
    )
}

/// Owns the key set: loads it, applies admins' states, reloads it all-or-nothing, and swaps it into the
/// ``KeyRingHolder`` that the signing path reads without waiting on this actor.
///
/// ## Usage
///
/// ```swift
/// let manager = try await KeyManager(holder: service.keys, loadKeys: { try KeyLoader.load(environment: env) },
///                                    configuredActiveKeyIdentifier: env["OFFER_SIGNER_ACTIVE_KEY_ID"],
///                                    stateStore: FileKeyStateStore(path: "/var/lib/offer-signer/keys.json"),
///                                    logger: logger)
/// try await manager.activate("NEWKEY0001", by: "alice")   // new offers are signed with NEWKEY0001
/// try await manager.revoke("OLDKEY0001", by: "alice")     // OLDKEY0001 neither signs nor verifies
/// ```
public actor KeyManager {
    /// Reads the key sources (files are re-read on every call).
    public typealias KeyLoading = @Sendable () throws -> [KeyRing.Entry]

    private let holder: KeyRingHolder
    private let loadKeys: KeyLoading
    private let configuredActiveKeyIdentifier: String?
    private let appActiveKeyIdentifiers: [String: String]
    private let stateStore: any KeyStateStore
    private var states: KeyStates
    private var entries: [KeyRing.Entry]
    private let logger: Logger
    private let reloadFailures = Counter(label: "offer_signer_key_reload_failures_total")
    private let reloads = Counter(label: "offer_signer_key_reloads_total")

    /// Loads the keys, applies the saved states and installs the ring in `holder`.
    /// - Throws: ``KeyManagementError`` when the keys or the saved states cannot be used.
    public init(
        holder: KeyRingHolder,
        loadKeys: @escaping KeyLoading,
        configuredActiveKeyIdentifier: String?,
        appActiveKeyIdentifiers: [String: String] = [:],
        stateStore: any KeyStateStore,
        logger: Logger
    ) async throws {
        self.appActiveKeyIdentifiers = appActiveKeyIdentifiers
        self.holder = holder
        self.loadKeys = loadKeys
        self.configuredActiveKeyIdentifier = configuredActiveKeyIdentifier
        self.stateStore = stateStore
        self.logger = logger
        self.states = try await stateStore.load()
        do {
            self.entries = try loadKeys()
        } catch {
            throw KeyManagementError(.keyReloadFailed, Self.describe(error))
        }
        let ring: KeyRing
        do {
            ring = try Self.ring(
                entries,
                states: states,
                configured: configuredActiveKeyIdentifier,
                byApp: appActiveKeyIdentifiers,
                previous: nil,
                logger: logger
            )
        } catch {
            throw KeyManagementError(.keyStateConflict, error.message)
        }
        holder.replace(with: ring)
    }

    /// The current ring.
    public var keyRing: KeyRing { holder.current }

    /// The saved states, with their history.
    public var keyStates: KeyStates { states }

    /// Re-reads every key source and swaps the new set in — or, if anything is wrong with it (a corrupt file,
    /// a wrong curve, the active key gone), keeps the old set serving and throws.
    /// - Parameter reason: why (`SIGHUP`, `admin alice`, `keys directory changed`), for the log.
    @discardableResult
    public func reload(reason: String) throws(KeyManagementError) -> KeyRing {
        do {
            let newEntries = try loadKeys()
            let current = holder.current
            if let active = current.activeKeyIdentifier, !newEntries.contains(where: { $0.key.keyIdentifier == active }) {
                throw KeyManagementError(
                    .keyReloadFailed,
                    "the active key \(active) is missing from the new key set; activate another key before removing its file."
                )
            }
            let ring = try Self.ring(
                newEntries,
                states: states,
                configured: configuredActiveKeyIdentifier,
                byApp: appActiveKeyIdentifiers,
                previous: current.activeKeyIdentifier,
                logger: logger
            )
            let before = Set(holder.current.entries.map { "\($0.key.keyIdentifier)/\($0.key.fingerprint)" })
            let after = Set(ring.entries.map { "\($0.key.keyIdentifier)/\($0.key.fingerprint)" })
            entries = newEntries
            holder.replace(with: ring)
            reloads.increment()
            logger.notice(
                "keys reloaded",
                metadata: [
                    "reason": "\(reason)", "keys": "\(ring.entries.map(\.key.keyIdentifier).joined(separator: ","))",
                    "active": "\(ring.activeKeyIdentifier ?? "-")", "changed": "\(before != after)",
                ]
            )
            return ring
        } catch {
            reloadFailures.increment()
            let message = Self.describe(error)
            logger.error("key reload rejected; the previous keys keep serving", metadata: ["reason": "\(reason)", "error": "\(message)"])
            throw KeyManagementError(.keyReloadFailed, "Reload rejected, the previous keys keep serving: \(message)")
        }
    }

    /// Makes `keyIdentifier` the key that signs new offers; the previous active key becomes retired.
    public func activate(_ keyIdentifier: String, by admin: String) async throws -> KeyRing {
        try requireKnown(keyIdentifier)
        return try await change(action: "activate", keyIdentifier: keyIdentifier, admin: admin) { states, _ throws(KeyManagementError) in
            guard !states.revokedKeyIdentifiers.contains(keyIdentifier) else {
                throw KeyManagementError(.keyStateConflict, "Key \(keyIdentifier) is revoked; revocation is final. Activate another key.")
            }
            states.activeKeyIdentifier = keyIdentifier
        }
    }

    /// Takes `keyIdentifier` out of signing; its signatures still verify. The active key cannot be retired:
    /// activate its successor instead, which retires it.
    public func retire(_ keyIdentifier: String, by admin: String) async throws -> KeyRing {
        try requireKnown(keyIdentifier)
        return try await change(action: "retire", keyIdentifier: keyIdentifier, admin: admin) { states, ring throws(KeyManagementError) in
            if states.revokedKeyIdentifiers.contains(keyIdentifier) {
                throw KeyManagementError(.keyStateConflict, "Key \(keyIdentifier) is revoked; revocation is final.")
            }
            if ring.state(of: keyIdentifier) == .active {
                throw KeyManagementError(.keyStateConflict, "Key \(keyIdentifier) is the active key; activate its successor first (that retires it).")
            }
        }
    }

    /// Revokes a compromised key: it neither signs nor verifies as valid, now and after restarts. The active
    /// key cannot be revoked before another key is activated, so that apps keep getting offers.
    public func revoke(_ keyIdentifier: String, by admin: String) async throws -> KeyRing {
        try requireKnown(keyIdentifier)
        return try await change(action: "revoke", keyIdentifier: keyIdentifier, admin: admin) { states, ring throws(KeyManagementError) in
            if ring.state(of: keyIdentifier) == .active {
                throw KeyManagementError(
                    .keyStateConflict,
                    "Key \(keyIdentifier) is the active key; activate another key first (POST /admin/keys/<KEYID>/activate), then revoke this one."
                )
            }
            states.revokedKeyIdentifiers.insert(keyIdentifier)
            states.revokedPublicKeys[keyIdentifier] = ring.entry(for: keyIdentifier)?.key.verificationKey.pemRepresentation
        }
    }

    /// Re-reads the saved states (another replica may have changed them) and applies them when they are newer
    /// than the ones served: a refresh never moves a key's state backwards.
    /// - Returns: whether anything changed.
    @discardableResult
    public func refreshStates() async -> Bool {
        guard let saved = try? await stateStore.load() else { return false }
        return adopt(saved, reason: "key states changed by another replica applied")
    }

    /// Serves `saved` if it is newer than the states served now (and its ring can be built).
    private func adopt(_ saved: KeyStates, reason: String) -> Bool {
        guard saved.version > states.version else { return false }
        do {
            let ring = try Self.ring(
                entries,
                states: saved,
                configured: configuredActiveKeyIdentifier,
                byApp: appActiveKeyIdentifiers,
                previous: holder.current.activeKeyIdentifier,
                logger: logger
            )
            states = saved
            holder.replace(with: ring)
            logger.notice("\(reason)", metadata: ["version": "\(saved.version)", "active": "\(ring.activeKeyIdentifier ?? "-")"])
            return true
        } catch {
            logger.error(
                "key states saved by another replica cannot be applied here; keeping the current ones",
                metadata: ["error": "\(error.message)"]
            )
            return false
        }
    }

    /// Records a reload asked for by an admin in the history.
    public func recordReload(by admin: String) async throws {
        _ = try await change(action: "reload", keyIdentifier: nil, admin: admin) { _, _ throws(KeyManagementError) in }
    }

    private func requireKnown(_ keyIdentifier: String) throws(KeyManagementError) {
        guard holder.current.entry(for: keyIdentifier) != nil else {
            throw KeyManagementError(
                .unknownKey,
                "No key \(keyIdentifier) is loaded; add its file and reload first (POST /admin/keys/reload or SIGHUP)."
            )
        }
    }

    /// A loading or ring error in words: the message of errors that carry one (`LocalizedError`: key sources
    /// and the signing core describe themselves without key material), never a type name.
    public static func describe(_ error: any Error) -> String {
        if let error = error as? OfferSigningError { return error.message }
        if let error = error as? KeyManagementError { return error.message }
        if let error = error as? any LocalizedError, let description = error.errorDescription { return description }
        return "the new key set is not usable"
    }

    /// How many times a change is retried when another writer saved first.
    static let compareAndSetAttempts = 8

    /// Applies `mutate` to the **saved** states (re-read from the state store, not this actor's copy: another
    /// admin call on this replica or another replica may have changed them across an `await`), checks the
    /// result builds a usable ring, saves it by compare-and-set on its version, and only then serves it. When
    /// another writer saved first, starts again from what it saved. A state that could not be saved is never
    /// served, and a change never overwrites one it did not see.
    private func change(
        action: String,
        keyIdentifier: String?,
        admin: String,
        _ mutate: (inout KeyStates, KeyRing) throws(KeyManagementError) -> Void
    ) async throws -> KeyRing {
        for _ in 0..<Self.compareAndSetAttempts {
            let base: KeyStates
            do {
                base = try await stateStore.load()
            } catch {
                throw KeyManagementError.stateStoreUnavailable
            }
            _ = adopt(base, reason: "key states saved meanwhile applied")
            let current = try Self.ringOrConflict(
                entries,
                states: base,
                configured: configuredActiveKeyIdentifier,
                byApp: appActiveKeyIdentifiers,
                previous: holder.current.activeKeyIdentifier,
                logger: logger
            )
            var next = base
            try mutate(&next, current)
            next.version = base.version + 1
            next.history.append(.init(at: Date(), admin: admin, action: action, keyIdentifier: keyIdentifier))
            next.history.removeFirst(max(0, next.history.count - KeyStates.historyLimit))
            let ring = try Self.ringOrConflict(
                entries,
                states: next,
                configured: configuredActiveKeyIdentifier,
                byApp: appActiveKeyIdentifiers,
                previous: holder.current.activeKeyIdentifier,
                logger: logger
            )
            let saved: Bool
            do {
                saved = try await stateStore.save(next)
            } catch {
                throw KeyManagementError.stateStoreUnavailable
            }
            guard saved else { continue }
            // Another call on this actor may have adopted a newer version across the awaits above; never step back.
            if next.version > states.version {
                states = next
                holder.replace(with: ring)
            }
            logger.notice(
                "audit: key state changed",
                metadata: [
                    "admin": "\(admin)", "action": "\(action)", "keyIdentifier": "\(keyIdentifier ?? "-")",
                    "version": "\(next.version)", "active": "\(holder.current.activeKeyIdentifier ?? "-")",
                ]
            )
            return holder.current
        }
        throw KeyManagementError(
            .keyStateConflict,
            "The key states kept changing while this change was being saved (other admins or replicas); try again."
        )
    }

    private static func ringOrConflict(
        _ entries: [KeyRing.Entry],
        states: KeyStates,
        configured: String?,
        byApp: [String: String],
        previous: String?,
        logger: Logger
    ) throws(KeyManagementError) -> KeyRing {
        do {
            return try ring(entries, states: states, configured: configured, byApp: byApp, previous: previous, logger: logger)
        } catch {
            throw KeyManagementError(.keyStateConflict, error.message)
        }
    }

    /// The ring for `entries` under `states`. The active key is, in this order: the one an admin activated
    /// (when loaded), the configured one, the one that was active before this reload (when loaded), or the only
    /// key. So adding a second key file never leaves the service without an active key.
    /// Apps with an active key of their own (`activeKeyIdentifier` in the policy) keep it whatever the default.
    static func ring(
        _ entries: [KeyRing.Entry],
        states: KeyStates,
        configured: String?,
        byApp: [String: String] = [:],
        previous: String?,
        logger: Logger
    ) throws(OfferSigningError) -> KeyRing {
        let loaded = Set(entries.map(\.key.keyIdentifier))
        var active = configured ?? previous.flatMap { loaded.contains($0) ? $0 : nil }
        if let chosen = states.activeKeyIdentifier {
            if loaded.contains(chosen) {
                active = chosen
            } else {
                logger.warning("the key an admin activated is not loaded; using the configured active key", metadata: ["keyIdentifier": "\(chosen)"])
            }
        }
        // Only the revoked keys whose files are gone are parsed (the ring leaves out the others): every replica builds
        // a ring at each change another one makes, and parsing each remembered PEM every time made that the slowest step
        // of a revocation reaching the fleet (docs/deployment.md).
        let remembered = states.revokedPublicKeys.filter { !loaded.contains($0.key) }
            .compactMap { try? VerificationKey(keyIdentifier: $0.key, publicKeyPEM: $0.value) }
        let ring = try KeyRing(
            keys: entries,
            activeKeyIdentifier: active,
            activeKeyIdentifiersByApp: byApp,
            revokedKeyIdentifiers: states.revokedKeyIdentifiers,
            revokedKeysNotLoaded: remembered
        )
        _ = try ring.activeKey()
        return ring
    }
}

extension KeyManagementError {
    /// The codes of this error type: a closed set, each a case of ``Kind`` (``ErrorCode``).
    public struct Code: KindedErrorCode {
        /// Every code of this type: a code exists only as a case here, so a switch over `kind` is exhaustive.
        package enum Kind: String, CaseIterable, Sendable {
            case unknownKey = "unknown_key"
            case keyStateConflict = "key_state_conflict"
            case keyReloadFailed = "key_reload_failed"
            case stateStoreUnavailable = "store_unavailable"
            case invalidKeyStates = "invalid_key_states"
        }

        /// Which code this is.
        package let kind: Kind

        package init(_ kind: Kind) { self.kind = kind }

        /// No such key is loaded.
        public static let unknownKey = Self(.unknownKey)

        /// The change contradicts the current states (revoking the active key, activating a revoked one).
        public static let keyStateConflict = Self(.keyStateConflict)

        /// A reload was rejected; the previous keys keep serving.
        public static let keyReloadFailed = Self(.keyReloadFailed)

        /// The key states could not be read or saved.
        public static let stateStoreUnavailable = Self(.stateStoreUnavailable)

        /// The saved key states cannot be read as key states.
        public static let invalidKeyStates = Self(.invalidKeyStates)
    }
}
