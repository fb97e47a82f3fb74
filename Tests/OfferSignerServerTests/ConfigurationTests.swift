import Foundation
import HTTPTypes
import HummingbirdTesting
import Logging
import OfferApplication
import OfferKeys
import OfferSignerDemo
import OfferSignerServer
import OfferSigning
import Testing

@Suite struct ConfigurationTests {
    let pem = try! SigningKey.generate(keyIdentifier: "X").pkcs8PEMRepresentation

    private func temporaryDirectory() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("offer-signer-config-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    @Test func anInlineKeyAndTheBundleIdAreEnough() throws {
        let configuration = try ServiceConfiguration(environment: [
            "OFFER_SIGNER_CLIENT_AUTH": "none", "OFFER_SIGNER_BUNDLE_ID": "com.example.app", "OFFER_SIGNER_KEY_ABC123DEFG": pem,
        ])
        #expect(configuration.host == "127.0.0.1")
        #expect(configuration.port == 8080)
        #expect(try configuration.keyRing.activeKey().keyIdentifier == "ABC123DEFG")
        #expect(configuration.apps.map(\.bundleIdentifier) == ["com.example.app"])
    }

    @Test func keysFromAFileAndAFolderWithKubernetesLayout() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        // A Kubernetes Secret volume: real files in a timestamped folder, `..data` a symlink to it,
        // and the visible names symlinks through `..data`.
        let generation = directory.appendingPathComponent("..2026_11_22_10_00_00.123")
        try FileManager.default.createDirectory(at: generation, withIntermediateDirectories: true)
        try pem.write(to: generation.appendingPathComponent("SubscriptionKey_DIRKEY0001.p8"), atomically: true, encoding: .utf8)
        try "ignored".write(to: generation.appendingPathComponent("README"), atomically: true, encoding: .utf8)
        try FileManager.default.createSymbolicLink(
            atPath: directory.appendingPathComponent("..data").path,
            withDestinationPath: generation.lastPathComponent
        )
        try FileManager.default.createSymbolicLink(
            atPath: directory.appendingPathComponent("SubscriptionKey_DIRKEY0001.p8").path,
            withDestinationPath: "..data/SubscriptionKey_DIRKEY0001.p8"
        )
        let file = directory.appendingPathComponent("other.pem")
        try SigningKey.generate(keyIdentifier: "X").pkcs8PEMRepresentation.write(to: file, atomically: true, encoding: .utf8)

        let configuration = try ServiceConfiguration(environment: [
            "OFFER_SIGNER_CLIENT_AUTH": "none",
            "OFFER_SIGNER_BUNDLE_ID": "com.example.app",
            "OFFER_SIGNER_KEYS_DIR": directory.path,
            "OFFER_SIGNER_KEY_FILEKEY001_FILE": file.path,
            "OFFER_SIGNER_ACTIVE_KEY_ID": "DIRKEY0001",
        ])
        #expect(configuration.keyRing.entries.map(\.key.keyIdentifier) == ["DIRKEY0001", "FILEKEY001"])
        #expect(configuration.keyRing.state(of: "FILEKEY001") == .retired)
        #expect(try configuration.keyRing.activeKey().keyIdentifier == "DIRKEY0001")
    }

    struct Failure: Sendable, CustomTestStringConvertible {
        let name: String
        let environment: [String: String]
        let mentions: [String]
        var testDescription: String { name }
    }

    static let validPEM = try! SigningKey.generate(keyIdentifier: "X").pkcs8PEMRepresentation

    static let failures: [Failure] = [
        Failure(name: "no bundle id", environment: ["OFFER_SIGNER_KEY_K1": validPEM], mentions: ["OFFER_SIGNER_BUNDLE_ID", "--demo"]),
        Failure(name: "no key", environment: ["OFFER_SIGNER_BUNDLE_ID": "a"], mentions: ["OFFER_SIGNER_KEY_<KEYID>"]),
        Failure(
            name: "bad inline key",
            environment: [
                "OFFER_SIGNER_BUNDLE_ID": "a",
                "OFFER_SIGNER_KEY_BROKEN01": "-----BEGIN PRIVATE KEY-----\nSECRETSECRETSECRET\n-----END PRIVATE KEY-----",
            ],
            mentions: ["BROKEN01", "OFFER_SIGNER_KEY_BROKEN01"]
        ),
        Failure(
            name: "missing key file",
            environment: ["OFFER_SIGNER_BUNDLE_ID": "a", "OFFER_SIGNER_KEY_GONE01_FILE": "/nonexistent/key.p8"],
            mentions: ["GONE01", "/nonexistent/key.p8"]
        ),
        Failure(
            name: "missing folder",
            environment: ["OFFER_SIGNER_BUNDLE_ID": "a", "OFFER_SIGNER_KEYS_DIR": "/nonexistent/keys"],
            mentions: ["OFFER_SIGNER_KEYS_DIR", "/nonexistent/keys"]
        ),
        Failure(
            name: "unknown active key",
            environment: ["OFFER_SIGNER_BUNDLE_ID": "a", "OFFER_SIGNER_KEY_K1": validPEM, "OFFER_SIGNER_ACTIVE_KEY_ID": "K2"],
            mentions: ["K2", "K1"]
        ),
        Failure(
            name: "bad port",
            environment: ["OFFER_SIGNER_BUNDLE_ID": "a", "OFFER_SIGNER_KEY_K1": validPEM, "OFFER_SIGNER_PORT": "eighty"],
            mentions: ["OFFER_SIGNER_PORT"]
        ),
        Failure(
            name: "bad host",
            environment: ["OFFER_SIGNER_BUNDLE_ID": "a", "OFFER_SIGNER_KEY_K1": validPEM, "OFFER_SIGNER_HOST": "not a host!"],
            mentions: ["OFFER_SIGNER_HOST", "IPv4 or IPv6"]
        ),
        Failure(
            name: "not an IPv4 address",
            environment: ["OFFER_SIGNER_BUNDLE_ID": "a", "OFFER_SIGNER_KEY_K1": validPEM, "OFFER_SIGNER_HOST": "999.1.1.1"],
            mentions: ["OFFER_SIGNER_HOST"]
        ),
        Failure(
            name: "bad admin host",
            environment: [
                "OFFER_SIGNER_BUNDLE_ID": "a", "OFFER_SIGNER_KEY_K1": validPEM, "OFFER_SIGNER_ADMIN_PORT": "9090", "OFFER_SIGNER_ADMIN_HOST": "-bad-",
                "OFFER_SIGNER_CLIENT_AUTH": "none",
            ],
            mentions: ["OFFER_SIGNER_ADMIN_HOST"]
        ),
        Failure(
            name: "no client authentication",
            environment: ["OFFER_SIGNER_BUNDLE_ID": "a", "OFFER_SIGNER_KEY_K1": validPEM],
            mentions: ["OFFER_SIGNER_API_KEYS", "OFFER_SIGNER_CLIENT_JWT_SECRET", "OFFER_SIGNER_CLIENT_AUTH=none"]
        ),
        Failure(
            name: "an API key without a name",
            environment: ["OFFER_SIGNER_BUNDLE_ID": "a", "OFFER_SIGNER_KEY_K1": validPEM, "OFFER_SIGNER_API_KEYS": "0123456789abcdef0123"],
            mentions: ["OFFER_SIGNER_API_KEYS", "name:token"]
        ),
        Failure(
            name: "a short API key",
            environment: ["OFFER_SIGNER_BUNDLE_ID": "a", "OFFER_SIGNER_KEY_K1": validPEM, "OFFER_SIGNER_API_KEYS": "backend:short"],
            mentions: ["OFFER_SIGNER_API_KEYS", "backend", "16"]
        ),
        Failure(
            name: "a short JWT secret",
            environment: ["OFFER_SIGNER_BUNDLE_ID": "a", "OFFER_SIGNER_KEY_K1": validPEM, "OFFER_SIGNER_CLIENT_JWT_SECRET": "tiny"],
            mentions: ["OFFER_SIGNER_CLIENT_JWT_SECRET", "32"]
        ),
        Failure(
            name: "an unknown client auth mode",
            environment: ["OFFER_SIGNER_BUNDLE_ID": "a", "OFFER_SIGNER_KEY_K1": validPEM, "OFFER_SIGNER_CLIENT_AUTH": "maybe"],
            mentions: ["OFFER_SIGNER_CLIENT_AUTH", "none"]
        ),
        Failure(
            name: "a rate that is not one",
            environment: [
                "OFFER_SIGNER_BUNDLE_ID": "a", "OFFER_SIGNER_KEY_K1": validPEM, "OFFER_SIGNER_CLIENT_AUTH": "none",
                "OFFER_SIGNER_RATE_LIMIT_CUSTOMER": "lots",
            ],
            mentions: ["OFFER_SIGNER_RATE_LIMIT_CUSTOMER", "20/min"]
        ),
        Failure(
            name: "OFFER_SIGNER_KEY_FILE, which names no key ID",
            environment: [
                "OFFER_SIGNER_BUNDLE_ID": "a", "OFFER_SIGNER_CLIENT_AUTH": "none", "OFFER_SIGNER_KEY_K1": validPEM,
                "OFFER_SIGNER_KEY_FILE": "/keys/SubscriptionKey_ABC123DEFG.p8",
            ],
            mentions: ["OFFER_SIGNER_KEY_FILE names no key ID", "OFFER_SIGNER_KEY_<KEYID>_FILE", "OFFER_SIGNER_KEY_ABC123DEFG_FILE"]
        ),
        Failure(
            name: "OFFER_SIGNER_KEY_FILE holding a PEM",
            environment: ["OFFER_SIGNER_BUNDLE_ID": "a", "OFFER_SIGNER_CLIENT_AUTH": "none", "OFFER_SIGNER_KEY_FILE": validPEM],
            mentions: ["OFFER_SIGNER_KEY_FILE", "OFFER_SIGNER_KEY_<KEYID>"]
        ),
        Failure(
            name: "a key variable with an empty key ID",
            environment: ["OFFER_SIGNER_BUNDLE_ID": "a", "OFFER_SIGNER_CLIENT_AUTH": "none", "OFFER_SIGNER_KEY__FILE": "/keys/k.p8"],
            mentions: ["OFFER_SIGNER_KEY__FILE names no key ID"]
        ),
        Failure(
            name: "an empty key file path",
            environment: ["OFFER_SIGNER_BUNDLE_ID": "a", "OFFER_SIGNER_CLIENT_AUTH": "none", "OFFER_SIGNER_KEY_EMPTY01_FILE": ""],
            mentions: ["OFFER_SIGNER_KEY_EMPTY01_FILE"]
        ),
        Failure(
            name: "an admin token without a name",
            environment: [
                "OFFER_SIGNER_BUNDLE_ID": "a", "OFFER_SIGNER_KEY_K1": validPEM, "OFFER_SIGNER_CLIENT_AUTH": "none",
                "OFFER_SIGNER_ADMIN_TOKENS": "0123456789abcdef0123",
            ],
            mentions: ["OFFER_SIGNER_ADMIN_TOKENS", "name:"]
        ),
        Failure(
            name: "a database URL of another kind",
            environment: [
                "OFFER_SIGNER_BUNDLE_ID": "a", "OFFER_SIGNER_KEY_K1": validPEM, "OFFER_SIGNER_CLIENT_AUTH": "none",
                "OFFER_SIGNER_DATABASE_URL": "mysql://db/offers",
            ],
            mentions: ["OFFER_SIGNER_DATABASE_URL", "sqlite:", "postgres://"]
        ),
        Failure(
            name: "an unknown App Store environment",
            environment: [
                "OFFER_SIGNER_BUNDLE_ID": "a", "OFFER_SIGNER_KEY_K1": validPEM, "OFFER_SIGNER_CLIENT_AUTH": "none",
                "OFFER_SIGNER_ENVIRONMENTS": "Staging",
            ],
            mentions: ["OFFER_SIGNER_ENVIRONMENTS", "Sandbox"]
        ),
        Failure(
            name: "an unreadable trusted root",
            environment: [
                "OFFER_SIGNER_BUNDLE_ID": "a", "OFFER_SIGNER_KEY_K1": validPEM, "OFFER_SIGNER_CLIENT_AUTH": "none",
                "OFFER_SIGNER_TRUSTED_ROOTS": "/nonexistent/root.pem",
            ],
            mentions: ["OFFER_SIGNER_TRUSTED_ROOTS", "/nonexistent/root.pem"]
        ),
        Failure(
            name: "a retention deadline past Apple's",
            environment: [
                "OFFER_SIGNER_BUNDLE_ID": "a", "OFFER_SIGNER_KEY_K1": validPEM, "OFFER_SIGNER_CLIENT_AUTH": "none",
                "OFFER_SIGNER_RETENTION_DEADLINE": "2 seconds",
            ],
            mentions: ["OFFER_SIGNER_RETENTION_DEADLINE", "milliseconds"]
        ),
        Failure(
            name: "the admin port is the public port",
            environment: [
                "OFFER_SIGNER_BUNDLE_ID": "a", "OFFER_SIGNER_KEY_K1": validPEM, "OFFER_SIGNER_CLIENT_AUTH": "none", "OFFER_SIGNER_PORT": "9000",
                "OFFER_SIGNER_ADMIN_PORT": "9000",
            ],
            mentions: ["OFFER_SIGNER_ADMIN_PORT"]
        ),
    ]

    @Test("configuration problems stop start-up with a message that names the culprit and no key", arguments: failures)
    func failuresAreExplained(_ failure: Failure) {
        let error = #expect(throws: ConfigurationError.self) { try ServiceConfiguration(environment: failure.environment) }
        for mention in failure.mentions {
            #expect(error?.message.contains(mention) == true, "\(error?.message ?? "") should mention \(mention)")
        }
        #expect(error?.message.contains("SECRETSECRET") == false)
        #expect(error?.message.contains(Self.validPEM.split(separator: "\n")[1]) == false)
    }

    @Test(
        "a listen host is an IPv4 or IPv6 address or a host name",
        arguments: [
            "127.0.0.1", "0.0.0.0", "::", "::1", "fe80::1%lo", "localhost", "offers-1.internal.example.com", "offer_signer", "host.example.com.",
        ]
    )
    func listenHostsThatAreAddressesOrNames(_ host: String) throws {
        let configuration = try ServiceConfiguration(environment: [
            "OFFER_SIGNER_BUNDLE_ID": "a", "OFFER_SIGNER_KEY_K1": Self.validPEM, "OFFER_SIGNER_CLIENT_AUTH": "none", "OFFER_SIGNER_HOST": host,
        ])
        #expect(configuration.host == host)
    }

    @Test("the open mode with credentials configured says they are not required")
    func openModeWithCredentialsWarns() throws {
        let configuration = try ServiceConfiguration(environment: [
            "OFFER_SIGNER_BUNDLE_ID": "a", "OFFER_SIGNER_KEY_K1": Self.validPEM, "OFFER_SIGNER_CLIENT_AUTH": "none",
            "OFFER_SIGNER_API_KEYS": "backend:0123456789abcdef0123",
        ])
        #expect(configuration.warnings.contains { $0.contains("OPEN CLIENT MODE") && $0.contains("not required") })
        #expect(!configuration.warnings.joined().contains("0123456789abcdef0123"))
    }

    @Test func twoKeysWithoutAnActiveOneStopStartUp() async throws {
        let configuration = try ServiceConfiguration(environment: [
            "OFFER_SIGNER_CLIENT_AUTH": "none", "OFFER_SIGNER_BUNDLE_ID": "a", "OFFER_SIGNER_KEY_K1": Self.validPEM, "OFFER_SIGNER_KEY_K2": pem,
            "OFFER_SIGNER_DATABASE_URL": "sqlite::memory:",
        ])
        let error = await #expect(throws: ConfigurationError.self) {
            _ = try await buildApplication(configuration: configuration, logger: Logger(label: "test"))
        }
        #expect(error?.message.contains("OFFER_SIGNER_ACTIVE_KEY_ID") == true)
    }

    @Test func theAdminsSavedActiveKeyWinsOverTheConfiguredOne() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let stateFile = directory.appendingPathComponent("states.json").path
        #expect(try await FileKeyStateStore(path: stateFile).save(KeyStates(version: 1, activeKeyIdentifier: "K2", revokedKeyIdentifiers: ["K1"])))
        let configuration = try ServiceConfiguration(environment: [
            "OFFER_SIGNER_CLIENT_AUTH": "none",
            "OFFER_SIGNER_BUNDLE_ID": "a", "OFFER_SIGNER_KEY_K1": Self.validPEM, "OFFER_SIGNER_KEY_K2": pem, "OFFER_SIGNER_STATE_FILE": stateFile,
            "OFFER_SIGNER_DATABASE_URL": "sqlite::memory:",
        ])
        let app = try await buildApplication(configuration: configuration, logger: Logger(label: "test"))
        try await app.test(.router) { client in
            let response = try await client.post("/v1/offers/sign", json: SignRouteTests.validBody)
            #expect(try response.decode(SignedLegacyOffer.self).keyIdentifier == "K2")
            let keys = try await client.execute(uri: "/v1/keys", method: .get).decode([PublishedKey].self)
            #expect(keys.first { $0.keyIdentifier == "K1" }?.state == "revoked")
        }
    }

    @Test func demoConfigurationHasAThrowAwayKeyAndSaysSo() throws {
        let configuration = try ServiceConfiguration.demo(environment: ["OFFER_SIGNER_PORT": "0"])
        #expect(configuration.isDemo)
        #expect(configuration.port == 0)
        #expect(configuration.apps.map(\.bundleIdentifier) == [ServiceConfiguration.demoBundleIdentifier])
        #expect(configuration.warnings.contains { $0.contains("DEMO") })
        #expect(try configuration.keyRing.activeKey().keyIdentifier == "DEMOKEY001")
    }

    /// The appAppleId warning is a configuration warning (serve prints those), not a log line of
    /// every command that opens the store.
    @Test func anAppThatCannotVerifyAppStoreDataIsAConfigurationWarning() throws {
        let base = ["OFFER_SIGNER_BUNDLE_ID": "com.example.app", "OFFER_SIGNER_KEY_K1": Self.validPEM, "OFFER_SIGNER_CLIENT_AUTH": "none"]
        let without = try ServiceConfiguration(environment: base).warnings.filter { $0.contains("OFFER_SIGNER_APP_APPLE_ID") }
        #expect(
            without == [
                """
                App Store notifications and signed transactions for com.example.app are refused: accepting Production needs the app's Apple ID, \
                OFFER_SIGNER_APP_APPLE_ID (App Store Connect > App Information > Apple ID) or appAppleId in the policy.
                """
            ]
        )
        #expect(
            !(try ServiceConfiguration(environment: base.merging(["OFFER_SIGNER_APP_APPLE_ID": "1234567890"]) { $1 }).warnings.contains {
                $0.contains("are refused")
            })
        )
        #expect(
            !(try ServiceConfiguration(environment: base.merging(["OFFER_SIGNER_ENVIRONMENTS": "Sandbox"]) { $1 }).warnings.contains {
                $0.contains("are refused")
            })
        )
    }
}
