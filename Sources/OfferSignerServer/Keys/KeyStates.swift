import Foundation
import OfferStore

/// Key states set by admins, which outlive a restart: the active key and the revoked keys, plus the history
/// of changes (who, what, when).
///
/// Kept in `OFFER_SIGNER_STATE_FILE` (JSON) by ``FileKeyStateStore``. An admin's decision wins over
/// `OFFER_SIGNER_ACTIVE_KEY_ID` at start-up, as long as the key it names is loaded.
public struct KeyStates: Sendable, Codable, Equatable {
    /// One admin action on keys.
    public struct Change: Sendable, Codable, Equatable {
        /// When.
        public var at: Date
        /// The admin (the name of their token).
        public var admin: String
        /// `activate`, `retire`, `revoke` or `reload`.
        public var action: String
        /// The key acted on (`nil` for a reload).
        public var keyIdentifier: String?

        public init(at: Date, admin: String, action: String, keyIdentifier: String?) {
            self.at = at
            self.admin = admin
            self.action = action
            self.keyIdentifier = keyIdentifier
        }
    }

    /// The key an admin activated, if any.
    public var activeKeyIdentifier: String?
    /// Keys an admin revoked. Revocation is final.
    public var revokedKeyIdentifiers: Set<String>
    /// Every change, oldest first.
    public var history: [Change]

    public init(activeKeyIdentifier: String? = nil, revokedKeyIdentifiers: Set<String> = [], history: [Change] = []) {
        self.activeKeyIdentifier = activeKeyIdentifier
        self.revokedKeyIdentifiers = revokedKeyIdentifiers
        self.history = history
    }
}

/// Where ``KeyStates`` live between restarts.
public protocol KeyStateStore: Sendable {
    /// The saved states (empty when nothing was saved yet).
    func load() async throws -> KeyStates
    /// Saves the states durably before returning.
    func save(_ states: KeyStates) async throws
}

/// Keeps key states in memory only: they do not survive a restart (the service warns at start-up).
public actor InMemoryKeyStateStore: KeyStateStore {
    private var states = KeyStates()

    public init() {}

    public func load() async throws -> KeyStates { states }

    public func save(_ states: KeyStates) async throws { self.states = states }
}

/// Keeps key states in the customer store, shared by every replica that uses it (the default when a store is
/// configured and `OFFER_SIGNER_STATE_FILE` is not set). Replicas pick up each other's changes: see
/// ``KeyStateRefresher``.
public struct StoreKeyStateStore: KeyStateStore {
    static let documentName = "key-states"
    let store: any OfferStore

    public init(store: any OfferStore) {
        self.store = store
    }

    public func load() async throws -> KeyStates {
        guard let text = try await store.document(named: Self.documentName) else { return KeyStates() }
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        guard let states = try? decoder.decode(KeyStates.self, from: Data(text.utf8)) else {
            throw ConfigurationError("The key states in the store cannot be read; restore them or delete the 'key-states' document.")
        }
        return states
    }

    public func save(_ states: KeyStates) async throws {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = [.sortedKeys]
        try await store.saveDocument(named: Self.documentName, String(decoding: try encoder.encode(states), as: UTF8.self))
    }
}

/// Keeps key states in a JSON file, replaced atomically (written beside it, flushed, renamed).
public actor FileKeyStateStore: KeyStateStore {
    /// The file.
    public let path: String

    public init(path: String) {
        self.path = path
    }

    public func load() async throws -> KeyStates {
        guard FileManager.default.fileExists(atPath: path) else { return KeyStates() }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ConfigurationError("OFFER_SIGNER_STATE_FILE=\(path) cannot be read; check its permissions.")
        }
        do {
            let decoder = JSONDecoder()
            decoder.dateDecodingStrategy = .iso8601
            return try decoder.decode(KeyStates.self, from: data)
        } catch {
            throw ConfigurationError("OFFER_SIGNER_STATE_FILE=\(path) is not a key state file written by offer-signer; restore it or move it away.")
        }
    }

    public func save(_ states: KeyStates) async throws {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        let data = try encoder.encode(states)
        let temporary = path + ".tmp-\(getpid())"
        guard FileManager.default.createFile(atPath: temporary, contents: data, attributes: [.posixPermissions: 0o600]) else {
            throw ConfigurationError("Cannot write \(temporary) (OFFER_SIGNER_STATE_FILE); check the folder's permissions.")
        }
        let handle = try FileHandle(forUpdating: URL(fileURLWithPath: temporary))
        try handle.synchronize()
        try handle.close()
        guard rename(temporary, path) == 0 else {
            throw ConfigurationError("Cannot replace \(path) (OFFER_SIGNER_STATE_FILE): \(String(cString: strerror(errno))).")
        }
    }
}
