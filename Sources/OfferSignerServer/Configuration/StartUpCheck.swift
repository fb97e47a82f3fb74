import Logging
import OfferApplication
import OfferKeys
import OfferModel
import OfferSigning

/// The start-up checks of ``buildApplication(configuration:logger:metricsRegistry:keysDirectoryPollInterval:)`` that
/// need neither the store nor the network, for `offer-signer config check`: the App Store Server API clients
/// (``makeAppStoreClients(configuration:verifiers:httpClient:logger:)``) and the client authenticator (the login
/// tokens' public keys). Which key signs when several are loaded and none is configured is settled by the admins'
/// saved states, which live in the store or the state file; that is reported, not decided.
/// - Returns: what is worth saying beyond ``ServiceConfiguration/warnings``.
/// - Throws: ``ConfigurationError`` with the message `serve` would stop with.
public func checkStartUp(configuration: ServiceConfiguration) async throws(ConfigurationError) -> [String] {
    let quiet = Logger(label: "offer-signer", factory: { _ in SwiftLogNoOpLogHandler() })
    _ = try makeAppStoreClients(
        configuration: configuration,
        verifiers: appStoreVerifiers(configuration: configuration, logger: quiet),
        logger: quiet
    )
    _ = try await ClientAuthenticator(configuration.clientAuth)
    // What serve checks before it listens, without opening anything: the store's URL, the key state file.
    if let databaseURL = configuration.databaseURL {
        do throws(StoreOpeningError) {
            try ApplicationStore.check(databaseURL: databaseURL)
        } catch {
            throw ConfigurationError(.invalidConfiguration, error.message)
        }
    }
    if let path = configuration.stateFilePath {
        do { _ = try await FileKeyStateStore(path: path).load() } catch let error as KeyManagementError {
            throw ConfigurationError(.invalidConfiguration, error.message)
        } catch {
            throw ConfigurationError(.invalidConfiguration, "\(variable: .stateFile)=\(path) cannot be read.")
        }
    }
    var notes: [String] = []
    if configuration.keyRing.activeKeyIdentifier == nil, configuration.keyRing.entries.count > 1 {
        notes.append(
            "Several keys are loaded and \(variable: .activeKeyId) is not set: serve signs with the key an admin activated "
                + "(saved in \(configuration.stateFilePath == nil ? "the store" : "\(variable: .stateFile)")), and refuses to start if none was."
        )
    }
    return notes
}
