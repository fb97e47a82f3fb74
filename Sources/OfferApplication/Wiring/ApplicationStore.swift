import AppStoreNotifications
import AppStoreServerAPI
import Foundation
import Logging
import OfferEligibility
import OfferErrors
import OfferKeys
import OfferModel
import OfferSigning
import OfferStore
import ServiceLifecycle

/// The customer store as the server holds it: opened, migrated and closed by the application, and handed to the
/// signing pipeline (``SigningPipeline/init(apps:keyRing:policy:policyRevision:applicationStore:notifications:appStoreClients:)``),
/// the key states, the policy in force and the background services without its type leaving `OfferApplication`.
///
/// ## Usage
///
/// ```swift
/// let store = try await ApplicationStore.open(databaseURL: url, timeout: .seconds(2), serving: true, logger: logger)
/// let pipeline = SigningPipeline(apps: apps, keyRing: ring, policy: nil, policyRevision: 0, applicationStore: store, notifications: nil,
///                                appStoreClients: [:])
/// services += store.services(keyManager: manager, policy: pipeline.policyHolder, servedApps: Set(pipeline.apps.keys), …)
/// ```
public struct ApplicationStore: Sendable {
    /// The store itself: the application's own (its use cases, and the tools'
    /// ``OfferSignerUseCases/forTools(apps:policy:store:notifications:retentionMessaging:)``).
    package let store: any OfferStore
    /// `sqlite` or `postgres`, for logs.
    public let backend: String

    package init(store: any OfferStore, backend: String) {
        self.store = store
        self.backend = backend
    }

    /// How long each call waits for the database when `OFFER_SIGNER_STORE_TIMEOUT` is not set.
    public static let defaultTimeout: Duration = defaultStoreTimeout
    /// How long ``open(databaseURL:timeout:serving:logger:)`` waits for the database before giving up.
    public static let startupTimeout: Duration = .seconds(15)
    /// How long a server's start-up waits at most for its database connections to be opened and prepared; past it,
    /// the rest prepare at their first use.
    static let warmUpTimeout: Duration = .seconds(5)

    /// Opens the store `databaseURL` names, checks within ``startupTimeout`` that it answers, then runs its
    /// migrations (not under the deadline: the first start after an upgrade may have a large log to roll up).
    /// `serving` (the server): PostgreSQL's connections are opened and prepared before the first request and kept
    /// open, and a SQLite file is taken for this process (a second server on it stops with the first's PID); the
    /// tools open theirs on demand and share the file.
    /// - Parameters:
    ///   - databaseURL: `sqlite:PATH`, `sqlite::memory:` or `postgres://…` (`OFFER_SIGNER_DATABASE_URL`).
    ///   - timeout: how long each call waits for the database (`OFFER_SIGNER_STORE_TIMEOUT`).
    ///   - serving: whether a server opens it (see above).
    ///   - logger: where the store logs.
    /// - Throws: ``StoreOpeningError`` `unavailable` when the database does not answer, `invalid_store` when the URL,
    ///   the migrations or another server's hold on the file stop it (the message never repeats a password).
    public static func open(
        databaseURL: String,
        timeout: Duration,
        serving: Bool,
        logger: Logger
    ) async throws(StoreOpeningError) -> ApplicationStore {
        do {
            guard
                let opened = try await withDeadline(
                    startupTimeout,
                    { () async throws -> any OfferStore in
                        let store = try await makeOfferStore(
                            databaseURL: databaseURL,
                            logger: logger,
                            migrating: false,
                            keepingConnectionsOpen: serving,
                            timeout: timeout,
                            exclusive: serving
                        )
                        try await store.ping()
                        return store
                    }
                )
            else {
                throw StoreOpeningError(
                    .unavailable,
                    """
                    the database did not answer within \(startupTimeout.components.seconds) seconds; check that it runs, that this host \
                    can reach it, and the host and port in the URL.
                    """
                )
            }
            do {
                try await opened.migrate()
            } catch {
                try? await opened.close()
                throw error
            }
            if serving {
                // Bounded: a database that refuses connections delays start-up by this much at most (warmUp logs it).
                _ = try? await withDeadline(warmUpTimeout) { await opened.warmUp() }
            }
            let backend = databaseURL.hasPrefix("sqlite:") ? "sqlite" : "postgres"
            logger.info("customer store open", metadata: ["backend": "\(backend)"])
            return ApplicationStore(store: opened, backend: backend)
        } catch let error as StoreOpeningError {
            throw error
        } catch let error as OfferStoreError {
            throw StoreOpeningError(error.code == .unavailable ? .unavailable : .invalidStore, error.message)
        } catch {
            throw StoreOpeningError(.invalidStore, "the store could not be opened (\(type(of: error))).")
        }
    }

    /// Checks that `databaseURL` names a store ``open(databaseURL:timeout:serving:logger:)`` can open, without
    /// opening it (`offer-signer config check`): the scheme, a SQLite path, a PostgreSQL URL's parts.
    /// - Throws: ``StoreOpeningError`` `invalid_store`, with the message opening it would give.
    public static func check(databaseURL: String) throws(StoreOpeningError) {
        do throws(OfferStoreError) { try checkDatabaseURL(databaseURL) } catch { throw StoreOpeningError(.invalidStore, error.message) }
    }

    /// Closes the store, flushing what is queued (the group commit, the decision log).
    public func close() async throws {
        try await store.close()
    }

    /// The rate limits every replica on this store shares (PostgreSQL); `nil` on SQLite: each replica its own.
    public var sharedLimits: FleetRateLimits? {
        store.sharedLimits.map(FleetRateLimits.init)
    }

    /// Where admins' key states are kept in this store (shared by every replica on it).
    public var keyStates: any KeyStateStore {
        StoreKeyStateStore(store: store)
    }

    /// The policy applied to the store (`offer-signer policy apply`), if any: the fleet's.
    /// - Throws: ``OfferServiceError`` when the store cannot be read or its policy does not read.
    public func storedPolicy() async throws(OfferServiceError) -> PolicyInForce? {
        try await StorePolicy(store: store).load()
    }

    /// The App Store notification ingestion into this store, for the apps that can verify App Store data.
    /// - Parameters:
    ///   - verifiers: each app's verifier, by bundle identifier.
    ///   - clockSkew: how far App Store times may be ahead of this host's clock.
    ///   - readableTokens: whether an `appAccountToken` may be any customer identifier (the demo).
    public func notificationIngestor(
        verifiers: [String: SignedDataVerifier],
        clockSkew: TimeInterval,
        readableTokens: Bool,
        logger: Logger
    ) -> NotificationIngestor {
        NotificationIngestor(verifiers: verifiers, store: store, logger: logger, clockSkew: clockSkew, readableTokens: readableTokens)
    }

    /// The services a server runs beside its listeners on this store: closing it at shutdown (flushing queued
    /// records), the purge of expired rows, and — pushed as they commit (PostgreSQL's NOTIFY), polled as a backstop —
    /// other replicas' key states (when they are kept in the store) and the policy applied to the fleet.
    /// - Parameters:
    ///   - keyManager: the key manager to refresh with other replicas' key states; `nil` when they are in a file.
    ///   - policy: the policy in force (``SigningPipeline/policyHolder``).
    ///   - servedApps: the apps this process serves.
    ///   - clockSkew: as the notification ingestion's (how long stored answers and processed notifications are kept).
    ///   - decisionLogDays: how many days the decision log keeps.
    public func services(
        keyManager: KeyManager?,
        policy: PolicyHolder,
        servedApps: Set<String>,
        clockSkew: TimeInterval,
        decisionLogDays: Int,
        logger: Logger
    ) -> [any Service] {
        let store = self.store
        var services: [any Service] = [
            StoreCloser(store: store, logger: logger),
            StorePurge(store: store, clockSkew: clockSkew, decisionLogDays: decisionLogDays, logger: logger),
        ]
        if let keyManager {
            services.append(
                KeyStateRefresher(manager: keyManager, changes: { store.documentChanges() }, documentName: StoreKeyStateStore.defaultDocumentName)
            )
        }
        services.append(
            PolicyRefresher(
                holder: policy,
                document: StorePolicy(store: store),
                changes: { store.documentChanges() },
                servedApps: servedApps,
                logger: logger
            )
        )
        return services
    }
}

/// Closes the store (flushing queued records) when the service shuts down.
struct StoreCloser: Service {
    let store: any OfferStore
    let logger: Logger

    func run() async throws {
        try? await gracefulShutdown()
        // Closed outside this task: when start-up fails (a port in use) the group cancels its services, and a
        // cancelled close would stop before the queued records are flushed.
        let store = self.store
        do {
            try await Task.detached { try await store.close() }.value
        } catch {
            logger.error("closing the customer store failed; records still queued may not be written", metadata: ["error": "\(type(of: error))"])
        }
    }
}

/// The store could not be opened: what `serve` and the tools stop with (the server maps `unavailable` to exit 69, the
/// rest to a configuration error). The message names no password.
public struct StoreOpeningError: CodedError {
    /// `unavailable` or `invalid_store`.
    public var code: Code
    /// What is wrong and what to check.
    public var message: String

    /// Creates an error.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}

extension StoreOpeningError {
    /// The codes of this error type: a closed set, each a case of ``Kind`` (``ErrorCode``).
    public struct Code: KindedErrorCode {
        /// Every code of this type: a code exists only as a case here, so a switch over `kind` is exhaustive.
        package enum Kind: String, CaseIterable, Sendable {
            case unavailable = "store_unavailable"
            case invalidStore = "invalid_store"
        }

        /// Which code this is.
        package let kind: Kind

        package init(_ kind: Kind) { self.kind = kind }

        /// The database did not answer in time.
        public static let unavailable = Self(.unavailable)
        /// The URL, the migrations or another server's hold on a SQLite file stop the store from opening.
        public static let invalidStore = Self(.invalidStore)
    }
}

extension SigningPipeline {
    /// A service over an opened store (``ApplicationStore``); the parameters are those of
    /// ``init(apps:keyRing:policy:policyRevision:store:introductoryOfferDecision:notifications:appStoreClients:)``.
    public convenience init(
        apps: [AppConfiguration],
        keyRing: KeyRing,
        policy: OfferPolicy?,
        policyRevision: Int64,
        applicationStore: ApplicationStore?,
        notifications: NotificationIngestor?,
        appStoreClients: [String: AppStoreServerAPIClient]
    ) {
        self.init(
            apps: apps,
            keyRing: keyRing,
            policy: policy,
            policyRevision: policyRevision,
            store: applicationStore?.store,
            notifications: notifications,
            appStoreClients: appStoreClients
        )
    }
}

extension RetentionMessagingSetup {
    /// The set-up of `configurations`' apps, recording in the store a tool opened (``ApplicationStore``); `nil`:
    /// nothing is recorded. See ``init(configurations:options:store:logger:)``.
    public init(
        configurations: [String: AppStoreServerAPIConfiguration],
        applicationStore: ApplicationStore?,
        logger: Logger
    ) throws(RetentionMessagingError) {
        try self.init(configurations: configurations, store: applicationStore?.store, logger: logger)
    }
}
