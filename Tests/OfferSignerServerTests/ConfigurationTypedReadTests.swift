import Configuration
import Foundation
import OfferSignerDemo
import OfferSignerServer
import Testing

/// The typed reads (`integer`, `duration`, `list`): what each accepts, and the one refusal shape naming the variable,
/// the value (cut short, never a secret) and the range.
@Suite struct ConfigurationTypedReadTests {
    private func reader(_ environment: [String: String]) -> ConfigReader { ConfigurationVariable.reader(environment) }

    @Test func anIntegerIsReadWithinItsRange() throws {
        #expect(try reader([:]).integer(.idleTimeout, in: 1...3_600, unit: "seconds") == nil)
        #expect(try reader(["OFFER_SIGNER_IDLE_TIMEOUT": ""]).integer(.idleTimeout, in: 1...3_600, unit: "seconds") == nil)
        #expect(try reader(["OFFER_SIGNER_IDLE_TIMEOUT": "45"]).integer(.idleTimeout, in: 1...3_600, unit: "seconds") == 45)
        #expect(try reader(["OFFER_SIGNER_IDLE_TIMEOUT": " 45 "]).integer(.idleTimeout, in: 1...3_600, unit: "seconds") == 45)
        #expect(try reader(["OFFER_SIGNER_IDLE_TIMEOUT": "3600"]).integer(.idleTimeout, in: 1...3_600, unit: "seconds") == 3_600)
    }

    @Test(
        "an integer outside its range, or not one, is refused in one shape",
        arguments: ["0", "3601", "thirty", "1.5", String(repeating: "9", count: 40)]
    )
    func anIntegerOutsideItsRangeIsRefused(_ value: String) {
        let error = #expect(throws: ConfigurationError.self) {
            try reader(["OFFER_SIGNER_IDLE_TIMEOUT": value]).integer(.idleTimeout, in: 1...3_600, unit: "seconds", note: "a note")
        }
        #expect(error?.message == "OFFER_SIGNER_IDLE_TIMEOUT=\(value.prefix(20)) is not a whole number of seconds from 1 to 3600 (a note).")
    }

    @Test func aPortIsAWholeNumberFrom0To65535() {
        let error = #expect(throws: ConfigurationError.self) { try ServiceConfiguration.demo(environment: ["OFFER_SIGNER_PORT": "65536"]) }
        #expect(error?.message == "OFFER_SIGNER_PORT=65536 is not a whole number from 0 to 65535 (a port number; 0 picks a free one).")
        #expect((try? ServiceConfiguration.demo(environment: ["OFFER_SIGNER_PORT": "0"]))?.port == 0)
    }

    @Test func theAdminPortMayNotBeThePublicOne() {
        let error = #expect(throws: ConfigurationError.self) {
            try ServiceConfiguration.demo(environment: ["OFFER_SIGNER_PORT": "9000", "OFFER_SIGNER_ADMIN_PORT": "9000"])
        }
        #expect(error?.message == "OFFER_SIGNER_ADMIN_PORT=9000 is OFFER_SIGNER_PORT too; give the operations listener a port of its own.")
        #expect(
            (try? ServiceConfiguration.demo(environment: ["OFFER_SIGNER_PORT": "0", "OFFER_SIGNER_ADMIN_PORT": "0"]))?.operationsListener?.port == 0
        )
    }

    @Test func aSecretsValueIsNeverRepeated() {
        let error = #expect(throws: ConfigurationError.self) {
            try reader(["OFFER_SIGNER_LOG_HASH_KEY": "not-a-number-but-a-secret"]).integer(.logHashKey, in: 1...2)
        }
        #expect(error?.message == "OFFER_SIGNER_LOG_HASH_KEY is not a whole number from 1 to 2.")
    }

    @Test func aDurationIsSecondsOrMilliseconds() throws {
        let range: ClosedRange<Duration> = .milliseconds(100)...(.seconds(30))
        #expect(try reader(["OFFER_SIGNER_APP_STORE_API_TIMEOUT": "2s"]).duration(.appStoreApiTimeout, in: range) == .seconds(2))
        #expect(try reader(["OFFER_SIGNER_APP_STORE_API_TIMEOUT": "1500ms"]).duration(.appStoreApiTimeout, in: range) == .milliseconds(1_500))
        #expect(try reader(["OFFER_SIGNER_APP_STORE_API_TIMEOUT": "1.5"]).duration(.appStoreApiTimeout, in: range) == .milliseconds(1_500))
        #expect(try reader(["OFFER_SIGNER_APP_STORE_API_TIMEOUT": " 30S "]).duration(.appStoreApiTimeout, in: range) == .seconds(30))
        #expect(try reader([:]).duration(.appStoreApiTimeout, in: range) == nil)
        for value in ["99ms", "31s", "forever", "-1s"] {
            let error = #expect(throws: ConfigurationError.self) {
                try reader(["OFFER_SIGNER_APP_STORE_API_TIMEOUT": value]).duration(.appStoreApiTimeout, in: range, note: "for example 2s or 1500ms")
            }
            #expect(error?.message == "OFFER_SIGNER_APP_STORE_API_TIMEOUT=\(value) is not a duration from 100ms to 30s (for example 2s or 1500ms).")
        }
    }

    @Test func aListDropsEmptyItemsAndTrims() {
        #expect(reader([:]).list(.environments) == nil)
        #expect(reader(["OFFER_SIGNER_ENVIRONMENTS": ""]).list(.environments) == nil)
        #expect(reader(["OFFER_SIGNER_ENVIRONMENTS": "Sandbox, Production ,"]).list(.environments) == ["Sandbox", "Production"])
        #expect(reader(["OFFER_SIGNER_ENVIRONMENTS": " , "]).list(.environments) == [])
    }

    @Test func numbersOfTheServiceKeepTheirRangesAndDefaults() throws {
        let base = ["OFFER_SIGNER_PORT": "0"]
        let defaults = try ServiceConfiguration.demo(environment: base)
        #expect(defaults.connectionLimits.idleTimeout == .seconds(30))
        #expect(defaults.connectionLimits.requestTimeout == .seconds(10))
        #expect(defaults.retentionDeadline == .milliseconds(500))
        #expect(defaults.appStoreClockSkew == 300)
        let set = try ServiceConfiguration.demo(
            environment: base.merging([
                "OFFER_SIGNER_IDLE_TIMEOUT": "5", "OFFER_SIGNER_REQUEST_TIMEOUT": "600", "OFFER_SIGNER_MAX_CONNECTIONS": "64",
                "OFFER_SIGNER_RETENTION_DEADLINE": "10", "OFFER_SIGNER_APP_STORE_CLOCK_SKEW": "3600",
            ]) { $1 }
        )
        #expect(set.connectionLimits == ConnectionLimits(idleTimeout: .seconds(5), requestTimeout: .seconds(600), maximumConnections: 64))
        #expect(set.retentionDeadline == .milliseconds(10))
        #expect(set.appStoreClockSkew == 3_600)
        for (name, value, expected) in [
            ("OFFER_SIGNER_REQUEST_TIMEOUT", "601", "a whole number of seconds from 1 to 600"),
            ("OFFER_SIGNER_MAX_CONNECTIONS", "0", "a whole number of connections from 1 to 1000000"),
            ("OFFER_SIGNER_RETENTION_DEADLINE", "5001", "a whole number of milliseconds from 10 to 5000 (Apple gives up after 700)"),
            ("OFFER_SIGNER_APP_STORE_CLOCK_SKEW", "9", "a whole number of seconds from 10 to 3600"),
        ] {
            let error = #expect(throws: ConfigurationError.self) { try ServiceConfiguration.demo(environment: base.merging([name: value]) { $1 }) }
            #expect(error?.message == "\(name)=\(value) is not \(expected).")
        }
    }
}
