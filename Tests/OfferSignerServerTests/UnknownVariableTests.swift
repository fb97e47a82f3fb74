import Foundation
import OfferSignerDemo
import OfferSignerServer
import OfferSigning
import Testing

/// An `OFFER_SIGNER_*` variable the service does not read (a typo, most often) is a start-up warning naming the
/// nearest variable, never silently ignored (issue 24).
@Suite struct UnknownVariableTests {
    static let pem = try! SigningKey.generate(keyIdentifier: "X").pkcs8PEMRepresentation
    static let valid = ["OFFER_SIGNER_BUNDLE_ID": "com.example.app", "OFFER_SIGNER_KEY_ABC123DEFG": pem, "OFFER_SIGNER_CLIENT_AUTH": "none"]

    @Test(
        "a typo is a warning naming the nearest variable",
        arguments: [
            ("OFFER_SIGNER_BUNDLEID", "OFFER_SIGNER_BUNDLE_ID"),
            ("OFFER_SIGNER_PROT", "OFFER_SIGNER_PORT"),
            ("OFFER_SIGNER_KEYS_DIRECTORY", "OFFER_SIGNER_KEYS_DIR"),
            ("OFFER_SIGNER_ADMIN_TOKEN_LIST", "OFFER_SIGNER_ADMIN_TOKENS"),
            ("OFFER_SIGNER_RATELIMIT_CUSTOMER", "OFFER_SIGNER_RATE_LIMIT_CUSTOMER"),
        ]
    )
    func aTypoNamesTheNearestVariable(_ typo: String, _ meant: String) throws {
        let configuration = try ServiceConfiguration(environment: Self.valid.merging([typo: "secret-value-0123"]) { $1 })
        let warnings = configuration.warnings.filter { $0.contains(typo) }
        #expect(warnings == ["\(typo) is not a variable offer-signer reads, so it is ignored: did you mean \(meant)?"])
        #expect(!configuration.warnings.joined().contains("secret-value-0123"))
    }

    @Test func aNameNearNothingStillWarns() throws {
        let configuration = try ServiceConfiguration(environment: Self.valid.merging(["OFFER_SIGNER_ZZZZZZZZZZZZZZZZZZZZZZZZZ": "1"]) { $1 })
        #expect(
            configuration.warnings.contains(
                """
                OFFER_SIGNER_ZZZZZZZZZZZZZZZZZZZZZZZZZ is not a variable offer-signer reads, so it is ignored; the variables are listed in \
                docs/configuration.md.
                """
            )
        )
    }

    @Test func knownVariablesKeysAndTheProjectsToolsAreNotReported() throws {
        let environment = Self.valid.merging([
            "OFFER_SIGNER_PORT": "0", "OFFER_SIGNER_KEY_SECOND0001": Self.pem, "OFFER_SIGNER_ACTIVE_KEY_ID": "ABC123DEFG",
            "OFFER_SIGNER_TEST_DATABASE_URL": "postgres://x", "OFFER_SIGNER_VENV": ".venv", "LOG_LEVELS": "debug", "HOME": "/root",
        ]) { $1 }
        #expect(ConfigurationVariable.unknownVariableWarnings(in: environment) == [])
        #expect(ConfigurationVariable.isKnown("OFFER_SIGNER_KEY_ANYTHING_FILE"))
        #expect(!ConfigurationVariable.isKnown("OFFER_SIGNER_KEYS"))
    }

    @Test func theDemoWarnsToo() throws {
        let configuration = try ServiceConfiguration.demo(environment: ["OFFER_SIGNER_PORT": "0", "OFFER_SIGNER_IDLE_TIMOUT": "5"])
        #expect(configuration.warnings.contains { $0.contains("did you mean OFFER_SIGNER_IDLE_TIMEOUT?") })
    }
}
