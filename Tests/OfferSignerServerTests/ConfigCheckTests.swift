import Foundation
import Logging
import OfferSignerDemo
import OfferSigning
import Testing

@testable import OfferSignerServer

/// `offer-signer config check`'s logic: the effective settings it prints (secrets redacted, defaults marked, keys by
/// fingerprint) and the start-up checks it shares with `serve`.
@Suite struct ConfigCheckTests {
    static let key = try! SigningKey.generate(keyIdentifier: "ABC123DEFG")
    static let pem = key.pkcs8PEMRepresentation
    static let secrets = [
        "OFFER_SIGNER_ADMIN_TOKENS": "ops:admin-token-0123456789abcdef",
        "OFFER_SIGNER_API_KEYS": "backend:api-key-0123456789abcdef",
        "OFFER_SIGNER_CLIENT_JWT_SECRET": "jwt-secret-0123456789abcdef0123456789",
        "OFFER_SIGNER_DATABASE_URL": "postgres://offers:db-password-0123@db:5432/offers",
        "OFFER_SIGNER_LOG_HASH_KEY": "log-hash-key-0123456789",
        "OFFER_SIGNER_ADMIN_TOKEN": "admin-token-0123456789abcdef",
    ]
    static let environment = secrets.merging([
        "OFFER_SIGNER_BUNDLE_ID": "com.example.app", "OFFER_SIGNER_KEY_ABC123DEFG": pem, "OFFER_SIGNER_IDLE_TIMEOUT": "45",
        "OFFER_SIGNER_APP_APPLE_ID": "1234567890", "OFFER_SIGNER_URL": "https://ops:url-password-0123@offers.internal:9090",
    ]) { $1 }

    @Test func everyVariableIsOneLineWithSecretsRedactedAndDefaultsMarked() throws {
        let lines = try ServiceConfiguration(environment: Self.environment).effectiveSettings(environment: Self.environment)
        let text = lines.joined(separator: "\n")
        for (name, value) in Self.secrets {
            #expect(lines.contains("\(name) = <redacted>"))
            #expect(!text.contains(value))
        }
        #expect(!text.contains("db-password"))
        #expect(!text.contains("url-password") && lines.contains("OFFER_SIGNER_URL = https://ops:<redacted>@offers.internal:9090"), "\(lines)")
        #expect(ServiceConfiguration.withoutPassword("https://ops:p@ss word@host") == "<redacted>")
        #expect(!text.contains("PRIVATE KEY"))
        for line in Self.pem.split(separator: "\n") { #expect(!text.contains(line)) }
        #expect(lines.contains("OFFER_SIGNER_BUNDLE_ID = com.example.app"))
        #expect(lines.contains("OFFER_SIGNER_IDLE_TIMEOUT = 45"))
        #expect(lines.contains("OFFER_SIGNER_HOST = 127.0.0.1 (default)"))
        #expect(lines.contains("OFFER_SIGNER_REQUEST_TIMEOUT = 10 (default)"))
        #expect(lines.contains("OFFER_SIGNER_RETENTION_DEADLINE = 500 (default)"))
        #expect(lines.contains("OFFER_SIGNER_ENVIRONMENTS = Production (default)"))
        #expect(lines.contains("app com.example.app = issuer ID none, Apple ID 1234567890"))
        #expect(lines.contains("key ABC123DEFG = active, fingerprint \(Self.key.fingerprint), source: environment OFFER_SIGNER_KEY_ABC123DEFG"))
        // One line per variable, in ConfigurationVariable's order, then the app and the key.
        #expect(lines.count == ConfigurationVariable.allCases.count + 2)
        #expect(zip(lines, ConfigurationVariable.allCases).allSatisfy { $0.hasPrefix("\($1.environmentName) = ") })
    }

    @Test func theDemoSaysWhichVariablesItDoesNotRead() throws {
        let environment = ["OFFER_SIGNER_PORT": "0", "OFFER_SIGNER_BUNDLE_ID": "com.example.app"]
        let lines = try ServiceConfiguration.demo(environment: environment).effectiveSettings(environment: environment)
        #expect(lines.contains("OFFER_SIGNER_PORT = 0"))
        #expect(lines.contains("OFFER_SIGNER_BUNDLE_ID = com.example.app (ignored by --demo)"))
        #expect(lines.contains("OFFER_SIGNER_POLICY = (not read by --demo)"))
        #expect(lines.contains { $0.hasPrefix("key DEMOKEY001 = active, fingerprint ") })
    }

    @Test("what the demo prints is what it runs with: its own admin token, the decision log's days it reads")
    func theDemoPrintsWhatItRunsWith() throws {
        let environment = ["OFFER_SIGNER_PORT": "0", "OFFER_SIGNER_DECISION_LOG_DAYS": "5"]
        let configuration = try ServiceConfiguration.demo(environment: environment)
        #expect(configuration.decisionLogDays == 5)
        let lines = configuration.effectiveSettings(environment: environment)
        #expect(lines.contains("OFFER_SIGNER_DECISION_LOG_DAYS = 5"))
        #expect(lines.contains { $0.hasPrefix("OFFER_SIGNER_ADMIN_TOKENS = the demo's own admin") }, "\(lines)")
        #expect(!lines.joined().contains(ServiceConfiguration.demoAdminToken))
    }

    @Test(
        "config check refuses what serve would: a state file that is a folder, a PostgreSQL URL whose port is not one",
        arguments: [
            ["OFFER_SIGNER_STATE_FILE": "/tmp"],
            ["OFFER_SIGNER_DATABASE_URL": "postgres://u:p@db:notaport/offers"],
            ["OFFER_SIGNER_DATABASE_URL": "postgres://u:p@db:99999/offers"],
            ["OFFER_SIGNER_DATABASE_URL": "sqlite:"],
        ]
    )
    func whatServeRefusesConfigCheckRefuses(_ extra: [String: String]) async throws {
        let environment = ["OFFER_SIGNER_BUNDLE_ID": "a", "OFFER_SIGNER_KEY_K1": Self.pem, "OFFER_SIGNER_CLIENT_AUTH": "none"].merging(extra) { $1 }
        let error = await #expect(throws: ConfigurationError.self) {
            _ = try await checkStartUp(configuration: try ServiceConfiguration(environment: environment))
        }
        let variable = try #require(extra.keys.first)
        #expect(error?.message.contains(variable) == true, "\(error?.message ?? "")")
        #expect(error?.message.contains(":p@") == false)
    }

    @Test func theStartUpChecksGiveServesMessage() async throws {
        let environment = [
            "OFFER_SIGNER_BUNDLE_ID": "a", "OFFER_SIGNER_KEY_K1": Self.pem, "OFFER_SIGNER_CLIENT_JWT_KEYS": "/nonexistent/jwks.json",
            "OFFER_SIGNER_DATABASE_URL": "sqlite::memory:",
        ]
        let configuration = try ServiceConfiguration(environment: environment)
        let checked = await #expect(throws: ConfigurationError.self) { _ = try await checkStartUp(configuration: configuration) }
        let served = await #expect(throws: ConfigurationError.self) {
            _ = try await buildApplication(configuration: configuration, logger: Logger(label: "test"))
        }
        #expect(checked?.message.contains("OFFER_SIGNER_CLIENT_JWT_KEYS=/nonexistent/jwks.json") == true)
        #expect(checked?.message == served?.message)
    }

    @Test func severalKeysWithoutAnActiveOneAreANote() async throws {
        let environment = [
            "OFFER_SIGNER_BUNDLE_ID": "a", "OFFER_SIGNER_KEY_K1": Self.pem, "OFFER_SIGNER_KEY_K2": Self.pem, "OFFER_SIGNER_CLIENT_AUTH": "none",
        ]
        let notes = try await checkStartUp(configuration: ServiceConfiguration(environment: environment))
        #expect(notes.count == 1)
        #expect(notes.first?.contains("OFFER_SIGNER_ACTIVE_KEY_ID is not set") == true)
        #expect(try await checkStartUp(configuration: ServiceConfiguration(environment: Self.environment)) == [])
    }
}
