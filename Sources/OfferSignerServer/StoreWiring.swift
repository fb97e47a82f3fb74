import AppStoreNotifications
import AppStoreServerAPI
import AsyncHTTPClient
import Hummingbird
import Logging
import NIOCore
import OfferApplication
import OfferEligibility
import OfferKeys
import OfferModel
import OfferSigning
import Prometheus
import ServiceLifecycle
import UnixSignals

/// Opens the store `OFFER_SIGNER_DATABASE_URL` names (if any, through ``ApplicationStore/open(databaseURL:timeout:serving:logger:)``)
/// and the App Store verification of every app that can verify (Production needs the app's appAppleId): what `serve`,
/// `eligibility explain` and `notifications import` share. `serving` (the server): PostgreSQL's connections are opened
/// and prepared before the first request and kept open, and a SQLite file is taken for this process (a second server
/// on it stops with the first's PID); the tools open theirs on demand and share the file. Every call waits at most
/// `OFFER_SIGNER_STORE_TIMEOUT` for the database.
/// - Throws: ``DependencyUnavailableError`` when the database does not answer in time, ``ConfigurationError`` when the
///   store cannot be opened or another server holds the SQLite file.
public func openStore(
    configuration: ServiceConfiguration,
    logger: Logger,
    serving: Bool = false
) async throws -> (ApplicationStore?, NotificationIngestor?) {
    guard let url = configuration.databaseURL else { return (nil, nil) }
    let store: ApplicationStore
    do throws(StoreOpeningError) {
        store = try await ApplicationStore.open(databaseURL: url, timeout: configuration.storeTimeout, serving: serving, logger: logger)
    } catch {
        if error.code == .unavailable {
            throw DependencyUnavailableError(.dependencyUnavailable, "\(variable: .databaseUrl): \(error.message)")
        }
        throw ConfigurationError(.invalidConfiguration, "\(variable: .databaseUrl): \(error.message)")
    }
    let verifiers = appStoreVerifiers(configuration: configuration, logger: logger)
    return (
        store,
        verifiers.isEmpty
            ? nil
            : store.notificationIngestor(
                verifiers: verifiers,
                clockSkew: configuration.appStoreClockSkew,
                readableTokens: configuration.addOn?.readableTokens ?? false,
                logger: logger
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
