import ArgumentParser
import Foundation
import OfferSignerServer

struct ConfigCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "config",
        abstract: "Works with the service's configuration.",
        subcommands: [Check.self]
    )

    struct Check: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                """
                Reads the configuration exactly as `serve` does and prints the settings in force (secrets redacted, keys by identifier and \
                fingerprint) and the warnings. Exit status 0 valid, 78 with the message `serve` would stop with.
                """,
            discussion: "Opens neither the store nor a port: a database that cannot be reached, or a port in use, is found by `serve` only."
        )

        @Flag(help: "Check what `serve --demo` would run with.")
        var demo = false

        func run() async throws {
            let environment = ConfigurationVariable.processEnvironment
            let configuration: ServiceConfiguration
            let notes: [String]
            do {
                configuration = try ServeCommand.readConfiguration(demo: demo, environment: environment)
                notes = try await checkStartUp(configuration: configuration)
            } catch {
                FileHandle.standardError.write(Data("cannot start: \(error.message)\n".utf8))
                throw ExitCode(78)  // EX_CONFIG, as serve
            }
            for line in configuration.effectiveSettings(environment: environment) { print(line) }
            for warning in configuration.warnings + notes { print("warning: \(warning)") }
            print("valid: serve would start with this configuration")
        }
    }
}
