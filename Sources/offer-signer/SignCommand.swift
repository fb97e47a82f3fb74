import ArgumentParser
import Configuration
import Foundation
import Logging
import OfferApplication
import OfferKeys
import OfferModel
import OfferSignerServer
import OfferSigning

/// Where the CLI gets keys: a key file given on the command line, or the service's own environment.
struct KeyOptions: ParsableArguments {
    @Option(
        name: .customLong("key-file"),
        help: "A .p8/PEM private key (default: the \(ConfigurationVariable.environmentPrefix)* environment, as `serve` reads it)."
    )
    var keyFile: String?

    @Option(name: .customLong("key-id"), help: "The key identifier of --key-file (default: taken from a SubscriptionKey_<KEYID>.p8 file name).")
    var keyIdentifier: String?

    /// The keys as `serve` would use them: from `--key-file`, or from the environment with the states admins saved
    /// applied (the state file, else the store) — so a revoked key verifies nothing and the key an admin activated
    /// signs, as on the server.
    func keyRing(environment: [String: String]) async throws -> KeyRing {
        try await keys(environment: environment).ring
    }

    /// ``keyRing(environment:)``, and whether the ring knows the states admins saved: not with `--key-file`, nor
    /// from the environment without a state file or a store (the key's file alone says nothing of a revoke).
    func keys(environment: [String: String]) async throws -> (ring: KeyRing, statesKnown: Bool) {
        guard let keyFile else {
            let entries = try KeyLoader.load(environment: environment)
            guard !entries.isEmpty else {
                throw ValidationError(
                    """
                    No key: pass --key-file, or set \(ConfigurationVariable.keyVariable("<KEYID>")), \
                    \(ConfigurationVariable.keyFileVariable("<KEYID>")) or \(variable: .keysDir).
                    """
                )
            }
            let reader = ConfigurationVariable.reader(environment)
            let configured = reader.string(.activeKeyId)
            var store: ApplicationStore?
            let stateStore: (any KeyStateStore)?
            if let path = reader.string(.stateFile) {
                stateStore = FileKeyStateStore(path: path)
            } else if let url = reader.string(.databaseUrl) {
                let opened = try await ApplicationStore.open(
                    databaseURL: url,
                    timeout: ApplicationStore.defaultTimeout,
                    serving: false,
                    logger: Logger(label: "offer-signer")
                )
                store = opened
                stateStore = opened.keyStates
            } else {
                stateStore = nil
            }
            defer { if let store { Task { try? await store.close() } } }
            guard let stateStore else { return (try KeyRing(keys: entries, activeKeyIdentifier: configured), false) }
            let manager = try await KeyManager(
                holder: KeyRingHolder(try KeyRing(keys: entries, activeKeyIdentifier: configured)),
                loadKeys: { entries },
                configuredActiveKeyIdentifier: configured,
                stateStore: stateStore,
                logger: Logger(label: "offer-signer")
            )
            let ring = await manager.keyRing
            try? await store?.close()
            store = nil
            return (ring, true)
        }
        let name = URL(fileURLWithPath: keyFile).lastPathComponent
        guard let keyIdentifier = keyIdentifier ?? KeyLoader.keyIdentifier(fromFileName: name) else {
            throw ValidationError(
                """
                Pass --key-id: the key identifier cannot be read from the file name '\(name)' (App Store Connect names it \
                SubscriptionKey_<KEYID>.p8).
                """
            )
        }
        let pem: String
        do {
            pem = try String(contentsOfFile: keyFile, encoding: .utf8)
        } catch {
            throw ValidationError("Cannot read \(keyFile).")
        }
        let key = try SigningKey(keyIdentifier: keyIdentifier, pemRepresentation: pem, source: keyFile)
        return (try KeyRing(keys: [.init(key: key, source: keyFile)]), false)
    }
}

struct SignCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sign",
        abstract: "Signs one promotional offer (legacy bundle or StoreKit 2 JWS) and prints it as JSON.",
        discussion: "No eligibility rules apply: this is for scripts and tests. Exit status 0 on success."
    )

    @Option(name: .customLong("bundle-id"), help: "The app's bundle identifier (default: \(variable: .bundleIdentifier)).")
    var bundleIdentifier: String?

    @Option(name: .customLong("product-id"), help: "The subscription's product identifier.")
    var productIdentifier: String

    @Option(name: .customLong("offer-id"), help: "The promotional offer identifier.")
    var offerIdentifier: String

    @Option(name: .customLong("username"), help: "The applicationUsername (hashed account id or appAccountToken).")
    var applicationUsername: String

    @Option(help: "A fixed nonce (UUID), for reproducible payloads in tests. Default: a fresh UUIDv4.")
    var nonce: String?

    @Option(help: "A fixed timestamp (Unix ms). Default: now.")
    var timestamp: Int64?

    @Option(help: "legacy (default) or jws (StoreKit 2 promotional offer V2).")
    var format: String = "legacy"

    @Option(name: .customLong("issuer-id"), help: "For --format jws: the App Store Connect issuer ID (default: \(variable: .issuerId)).")
    var issuerIdentifier: String?

    @Option(name: .customLong("transaction-id"), help: "For --format jws: a transaction of the customer's (optional).")
    var transactionId: String?

    @OptionGroup var keys: KeyOptions

    func run() async throws {
        let environment = ConfigurationVariable.processEnvironment
        guard let bundle = bundleIdentifier ?? ConfigurationVariable.reader(environment).string(.bundleIdentifier), !bundle.isEmpty else {
            throw ValidationError("Pass --bundle-id or set \(variable: .bundleIdentifier).")
        }
        let ring = try await keys.keyRing(environment: environment)
        var fixedNonce = UUID()
        if let nonce {
            guard let parsed = UUID(uuidString: nonce) else { throw ValidationError("--nonce must be a UUID.") }
            fixedNonce = parsed
        }
        if format == "jws" {
            guard let issuer = issuerIdentifier ?? ConfigurationVariable.reader(environment).string(.issuerId), !issuer.isEmpty else {
                throw ValidationError("--format jws needs --issuer-id or \(variable: .issuerId).")
            }
            let signed = try await JWSOfferSigner.signPromotionalOffer(
                bundleIdentifier: bundle,
                productIdentifier: productIdentifier,
                offerIdentifier: offerIdentifier,
                transactionId: transactionId,
                issuerIdentifier: issuer,
                key: try ring.activeKey(),
                nonce: fixedNonce
            )
            try printJSON(
                SignedJWSOfferResponse(
                    bundleIdentifier: bundle,
                    productIdentifier: productIdentifier,
                    offerIdentifier: offerIdentifier,
                    keyIdentifier: signed.keyIdentifier,
                    nonce: signed.claims.nonce,
                    signature: signed.token
                )
            )
            return
        }
        guard format == "legacy" else { throw ValidationError("--format is legacy or jws.") }
        let offer = PromotionalOffer(
            bundleIdentifier: bundle,
            productIdentifier: productIdentifier,
            offerIdentifier: offerIdentifier,
            applicationUsername: applicationUsername
        )
        let signed = try OfferSigner.signLegacy(
            offer,
            with: try ring.activeKey(),
            nonce: fixedNonce,
            timestamp: timestamp ?? OfferSigner.currentTimestamp()
        )
        try printJSON(signed)
    }
}

func printJSON(_ value: some Encodable) throws {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes, .prettyPrinted]
    print(String(decoding: try encoder.encode(value), as: UTF8.self))
}
