import ArgumentParser
import OfferSignerServer

/// `offer-signer`: the service and the tools around it. Thin: every command calls the library targets.
@main
struct OfferSignerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "offer-signer",
        abstract: "Signs App Store promotional offers.",
        discussion:
            "Configuration comes from \(ConfigurationVariable.environmentPrefix)* environment variables; see keys.example and docs/configuration.md.",
        version: OfferSignerCommand.version,
        subcommands: [
            ServeCommand.self, ConfigCommand.self, SignCommand.self, VerifyCommand.self, KeysCommand.self, PolicyCommand.self,
            EligibilityCommand.self, NotificationsCommand.self, OutcomesCommand.self, ExperimentsCommand.self, RetentionCommand.self,
            CustomersCommand.self,
        ]
    )

    /// The release, printed by `offer-signer --version` and logged at start and stop.
    static let version = ServiceVersion.current
}
