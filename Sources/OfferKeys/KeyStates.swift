import Foundation

/// Key states set by admins, which outlive a restart: the active key and the revoked keys, plus the history
/// of changes (who, what, when).
///
/// Kept in `OFFER_SIGNER_STATE_FILE` (JSON) by ``FileKeyStateStore``, or in the shared store by the server's
/// `StoreKeyStateStore`. An admin's decision wins over
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

    /// Incremented by every saved change: a change is written only over the version it was made from
    /// (compare-and-set), and a replica applies only versions newer than the one it serves.
    public var version: Int
    /// The key an admin activated, if any.
    public var activeKeyIdentifier: String?
    /// Keys an admin revoked. Revocation is final.
    public var revokedKeyIdentifiers: Set<String>
    /// The latest changes (at most ``historyLimit``), oldest first. Every change is also in the store's audit.
    public var history: [Change]
    /// How many changes ``history`` keeps: every replica reads and decodes the whole document at each change
    /// another one makes, so it must not grow with every reload and rotation of the service's life.
    public static let historyLimit = 100
    /// The public key (PEM) of each key revoked, kept with the revocation: a revoked key stays listed, and its
    /// signatures are reported `key_revoked`, after its file is removed.
    public var revokedPublicKeys: [String: String]

    public init(
        version: Int = 0,
        activeKeyIdentifier: String? = nil,
        revokedKeyIdentifiers: Set<String> = [],
        history: [Change] = [],
        revokedPublicKeys: [String: String] = [:]
    ) {
        self.version = version
        self.activeKeyIdentifier = activeKeyIdentifier
        self.revokedKeyIdentifiers = revokedKeyIdentifiers
        self.history = history
        self.revokedPublicKeys = revokedPublicKeys
    }

    private enum CodingKeys: String, CodingKey {
        case version, activeKeyIdentifier, revokedKeyIdentifiers, history, revokedPublicKeys
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        // Files written before versions existed read as version 0.
        version = try container.decodeIfPresent(Int.self, forKey: .version) ?? 0
        activeKeyIdentifier = try container.decodeIfPresent(String.self, forKey: .activeKeyIdentifier)
        revokedKeyIdentifiers = try container.decodeIfPresent(Set<String>.self, forKey: .revokedKeyIdentifiers) ?? []
        history = try container.decodeIfPresent([Change].self, forKey: .history) ?? []
        revokedPublicKeys = try container.decodeIfPresent([String: String].self, forKey: .revokedPublicKeys) ?? [:]
    }

    public static func decode(_ data: Data) throws -> KeyStates {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return try decoder.decode(KeyStates.self, from: data)
    }

    public func encoded() throws -> Data {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        return try encoder.encode(self)
    }
}

/// Where ``KeyStates`` live between restarts: a versioned value changed only by compare-and-set, so that two
/// admin calls — on one replica or on two sharing a store — never overwrite each other.
public protocol KeyStateStore: Sendable {
    /// The saved states (version 0 and empty when nothing was saved yet).
    func load() async throws -> KeyStates
    /// Saves `states` durably, only if the saved version is still `states.version - 1`.
    /// - Returns: `false` when another writer saved a newer version first (nothing was written).
    func save(_ states: KeyStates) async throws -> Bool
}

/// Keeps key states in memory only: they do not survive a restart (the service warns at start-up).
public actor InMemoryKeyStateStore: KeyStateStore {
    private var states = KeyStates()

    public init() {}

    public func load() async throws -> KeyStates { states }

    public func save(_ states: KeyStates) async throws -> Bool {
        guard states.version == self.states.version + 1 else { return false }
        self.states = states
        return true
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
            throw KeyManagementError(.stateStoreUnavailable, "OFFER_SIGNER_STATE_FILE=\(path) cannot be read; check its permissions.")
        }
        do {
            return try KeyStates.decode(data)
        } catch {
            throw KeyManagementError(
                .invalidKeyStates,
                "OFFER_SIGNER_STATE_FILE=\(path) is not a key state file written by offer-signer; restore it or move it away."
            )
        }
    }

    /// Compare-and-set under an exclusive `flock` on `PATH.lock`, so that two processes sharing the file (two
    /// services on one host) cannot both write over the same version.
    public func save(_ states: KeyStates) async throws -> Bool {
        let lock = open(path + ".lock", O_CREAT | O_RDWR | O_CLOEXEC, 0o600)
        guard lock >= 0 else {
            throw KeyManagementError(.stateStoreUnavailable, "Cannot open \(path).lock (OFFER_SIGNER_STATE_FILE); check the folder's permissions.")
        }
        defer { close(lock) }
        guard flock(lock, LOCK_EX) == 0 else {
            throw KeyManagementError(
                .stateStoreUnavailable,
                "Cannot lock \(path).lock (OFFER_SIGNER_STATE_FILE): \(String(cString: strerror(errno)))."
            )
        }
        defer { flock(lock, LOCK_UN) }
        guard try await load().version == states.version - 1 else { return false }
        try write(states)
        return true
    }

    private func write(_ states: KeyStates) throws {
        let data = try states.encoded()
        let temporary = path + ".tmp-\(getpid())"
        guard FileManager.default.createFile(atPath: temporary, contents: data, attributes: [.posixPermissions: 0o600]) else {
            throw KeyManagementError(.stateStoreUnavailable, "Cannot write \(temporary) (OFFER_SIGNER_STATE_FILE); check the folder's permissions.")
        }
        let handle = try FileHandle(forUpdating: URL(fileURLWithPath: temporary))
        try handle.synchronize()
        try handle.close()
        guard rename(temporary, path) == 0 else {
            throw KeyManagementError(.stateStoreUnavailable, "Cannot replace \(path) (OFFER_SIGNER_STATE_FILE): \(String(cString: strerror(errno))).")
        }
    }
}
