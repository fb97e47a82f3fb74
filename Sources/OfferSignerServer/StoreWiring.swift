import AppStoreNotifications
import AppStoreServerAPI
import AsyncHTTPClient
import Hummingbird
import Logging
import NIOCore
import OfferApplication
import OfferEligibility
import OfferKeys
import OfferSigning
import OfferStore
import Prometheus
import ServiceLifecycle
import UnixSignals

/// How long start-up waits for the database before giving up (exit 69).
public let storeStartupTimeout: Duration = .seconds(15)

/// How long a server's start-up waits at most for its database connections to be opened and prepared
/// (``OfferStore/warmUp()``); past it, the rest prepare at their first use.
let storeWarmUpTimeout: Duration = .seconds(5)

/// Opens the store `OFFER_SIGNER_DATABASE_URL` names (if any) and the App Store verification of every app
/// that can verify (Production needs the app's appAppleId): what `serve`, `eligibility explain` and
/// `notifications import` share. `serving` (the server): PostgreSQL's connections are opened and prepared before
/// the first request and kept open (``OfferStore/warmUp()``), and a SQLite file is taken for this process
/// (``SQLiteFileLock``: a second server on it stops with the first's PID); the tools open theirs on demand and share
/// the file. Every call waits at most `OFFER_SIGNER_STORE_TIMEOUT` for the database (``makeOfferStore``).
/// - Throws: ``ConfigurationError`` when the store cannot be opened or another server holds the SQLite file.
public func openStore(
    configuration: ServiceConfiguration,
    logger: Logger,
    serving: Bool = false
) async throws -> ((any OfferStore)?, NotificationIngestor?) {
    guard let url = configuration.databaseURL else { return (nil, nil) }
    let store: any OfferStore
    do {
        guard
            let opened = try await withDeadline(
                storeStartupTimeout,
                { () async throws -> any OfferStore in
                    let store = try await makeOfferStore(
                        databaseURL: url,
                        logger: logger,
                        migrating: false,
                        keepingConnectionsOpen: serving,
                        timeout: configuration.storeTimeout,
                        exclusive: serving
                    )
                    try await store.ping()
                    return store
                }
            )
        else {
            throw DependencyUnavailableError(
                .dependencyUnavailable,
                """
                \(variable: .databaseUrl): the database did not answer within \(storeStartupTimeout.components.seconds) seconds; check that it \
                runs, that this host can reach it, and the host and port in the URL.
                """
            )
        }
        // The migrations are not under the deadline: the first start after an upgrade may have a large log to roll
        // up (schema version 11: minutes for 10 million signatures, docs/PERFORMANCE.md "The outcome report").
        do {
            try await opened.migrate()
        } catch {
            try? await opened.close()
            throw error
        }
        if serving {
            // Bounded: a database that refuses connections delays start-up by this much at most (warmUp logs it).
            _ = try? await withDeadline(storeWarmUpTimeout) { await opened.warmUp() }
        }
        store = opened
    } catch let error as OfferStoreError {
        if error.code == .unavailable {
            throw DependencyUnavailableError(.dependencyUnavailable, "\(variable: .databaseUrl): \(error.message)")
        }
        throw ConfigurationError(.invalidConfiguration, "\(variable: .databaseUrl): \(error.message)")
    }
    logger.info("customer store open", metadata: ["backend": "\(url.hasPrefix("sqlite:") ? "sqlite" : "postgres")"])
    let verifiers = appStoreVerifiers(configuration: configuration, logger: logger)
    return (
        store,
        verifiers.isEmpty
            ? nil
            : NotificationIngestor(
                verifiers: verifiers,
                store: store,
                logger: logger,
                clockSkew: configuration.appStoreClockSkew,
                readableTokens: configuration.addOn?.readableTokens ?? false
            )
    )
}

/// The App Store signed-data verifier of every app that can verify (Production needs the app's appAppleId), by
/// bundle identifier: what notifications, signed transactions and the App Store Server API's answers are checked with.
public func appStoreVerifiers(configuration: ServiceConfiguration, logger: Logger) -> [String: SignedDataVerifier] {
    var verifiers: [String: SignedDataVerifier] = [:]
    for app in configuration.apps {
        do {
            verifiers[app.bundleIdentifier] = try SignedDataVerifier(
                bundleIdentifier: app.bundleIdentifier,
                appAppleId: app.appAppleId,
                environments: configuration.environments,
                trustedRoots: configuration.trustedRoots
            )
        } catch {
            // ServiceConfiguration's warnings say it once at start-up (serve, config check); the tools stay quiet.
            logger.debug(
                "App Store notifications and signed transactions for this app are refused",
                metadata: [
                    "bundleIdentifier": "\(app.bundleIdentifier)", "reason": "\(error.message)",
                ]
            )
        }
    }
    return verifiers
}
