import Foundation
import Logging
import OfferEligibility
import OfferErrors
import OfferKeys
import OfferModel
import OfferStore
import ServiceLifecycle

/// The fleet's policy, kept in the store as the document `policy` (its text as applied; the document's version is
/// the policy's revision). Every replica sharing the store runs it (``PolicyRefresher``).
///
/// How it meets `OFFER_SIGNER_POLICY`: the file is the policy of a process until a policy is applied to the store
/// (`offer-signer policy apply`, `PUT /admin/policy`, the console); from then on the store's policy is in force on
/// every replica, and a file that differs is reported at start-up, never written. A replica started with an old
/// file during a rolling deploy so never changes the fleet's policy, and a service that never applies one runs its
/// file as before.
public struct StorePolicy: Sendable {
    /// The document the fleet's policy is kept in.
    public static let defaultDocumentName = "policy"
    let store: any SharedDocuments
    let documentName: String

    /// - Parameters:
    ///   - store: the shared store.
    ///   - documentName: the document (tests use their own).
    public init(store: any SharedDocuments, documentName: String = StorePolicy.defaultDocumentName) {
        self.store = store
        self.documentName = documentName
    }

    /// The policy applied to the store, with its revision; `nil` when none was ever applied.
    /// - Throws: ``OfferServiceError`` `store_unavailable`, or `invalid_policy` when the stored text no longer reads
    ///   as a policy (a later release's rule, say): apply one again.
    public func load() async throws(OfferServiceError) -> PolicyInForce? {
        guard let document = try await storeCall({ try await store.document(named: documentName) }) else { return nil }
        do {
            return PolicyInForce(policy: try OfferPolicy(text: document.text), revision: document.version)
        } catch {
            throw OfferServiceError(
                .invalidPolicy,
                """
                The policy in the store (revision \(document.version)) cannot be read: \(error.message) Apply a valid one (offer-signer policy \
                apply FILE).
                """
            )
        }
    }

    /// The policy a service on this store runs, as `serve` chooses it: the one applied to the store, else `file`
    /// (`OFFER_SIGNER_POLICY`). Tools that run beside the service (`offer-signer policy dry-run`) use it.
    public func inForce(file: OfferPolicy?) async throws(OfferServiceError) -> OfferPolicy? {
        try await load()?.policy ?? file
    }

    /// What ``apply(_:)`` did.
    public struct Applied: Sendable, Hashable {
        /// The revision now in the store.
        public var revision: Int64
        /// The version in force before (`nil`: none was applied).
        public var previousVersion: String?
        /// Whether the store changed (`false`: the same policy was in force already).
        public var changed: Bool

        public init(revision: Int64, previousVersion: String?, changed: Bool) {
            (self.revision, self.previousVersion, self.changed) = (revision, previousVersion, changed)
        }
    }

    /// Applies `policy` to the store, by compare-and-set on the document's revision: a concurrent apply makes this
    /// one read again and retry, so two applies never both win one revision.
    /// - Throws: ``OfferServiceError`` `store_unavailable`, or `policy_conflict` after 16 lost races.
    public func apply(_ policy: OfferPolicy) async throws(OfferServiceError) -> Applied {
        for _ in 0..<16 {
            let stored = try await storeCall { try await store.document(named: documentName) }
            let previous = stored.flatMap { try? OfferPolicy(text: $0.text) }
            if let stored, previous?.version == policy.version {
                return Applied(revision: stored.version, previousVersion: policy.version, changed: false)
            }
            let revision = (stored?.version ?? 0) + 1
            if try await storeCall({ try await store.replaceDocument(named: documentName, version: revision, text: policy.text) }) {
                return Applied(revision: revision, previousVersion: previous?.version, changed: true)
            }
        }
        throw OfferServiceError(.policyConflict, "Other policies were being applied at the same time; check GET /admin/policy and apply again.")
    }
}

/// Puts the policy applied to the store in force on this replica: at once when the store pushes the change
/// (PostgreSQL's LISTEN/NOTIFY: `changes`), and every `interval` in any case (the backstop, should a notification be
/// lost while the listener reconnects). A stored policy that does not read is logged and the one in force kept.
public struct PolicyRefresher: Service {
    let holder: PolicyHolder
    let document: StorePolicy
    let interval: Duration
    let changes: (@Sendable () -> AsyncStream<String>)?
    let servedApps: Set<String>
    let logger: Logger

    /// - Parameters:
    ///   - holder: the policy in force (``SigningPipeline/policyHolder``).
    ///   - document: the store's policy document.
    ///   - changes: the names of documents other processes change, as they commit (`"*"`: any may have changed).
    ///   - servedApps: the apps this process serves (a policy naming another is logged: it needs a restart).
    public init(
        holder: PolicyHolder,
        document: StorePolicy,
        interval: Duration = .seconds(5),
        changes: (@Sendable () -> AsyncStream<String>)? = nil,
        servedApps: Set<String>,
        logger: Logger
    ) {
        self.holder = holder
        self.document = document
        self.interval = interval
        self.changes = changes
        self.servedApps = servedApps
        self.logger = logger
    }

    public func run() async throws {
        await followDocument(named: document.documentName, changes: changes, every: interval) { await refresh() }
    }

    /// Reads the store's policy and puts it in force when it is a later revision than the one in force.
    public func refresh() async {
        let loaded: PolicyInForce?
        do {
            loaded = try await document.load()
        } catch {
            if error.code == .invalidPolicy { logger.error("\(error.message)") }
            return  // store_unavailable: the poll tries again
        }
        guard let loaded, holder.replace(with: loaded) else { return }
        Self.announce(loaded, servedApps: servedApps, logger: logger)
    }

    /// Logs the policy now in force, and the apps it names that this process does not serve (until a restart).
    public static func announce(_ inForce: PolicyInForce, servedApps: Set<String>, logger: Logger) {
        logger.notice(
            "policy in force",
            metadata: [
                "version": "\(inForce.policy?.version ?? "none")", "revision": "\(inForce.revision)", "source": "\(inForce.source)",
            ]
        )
        let unserved = (inForce.policy?.apps ?? []).map(\.bundleIdentifier).filter { !servedApps.contains($0) }
        if !unserved.isEmpty {
            logger.warning(
                "the policy names apps this replica does not serve until it is restarted",
                metadata: ["apps": "\(unserved.joined(separator: ", "))"]
            )
        }
    }
}
