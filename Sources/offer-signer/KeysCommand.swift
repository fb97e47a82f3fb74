import ArgumentParser
import Foundation
import OfferSignerServer
import OfferSigning

struct KeysCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keys",
        abstract: "Generates and inspects keys; lists, reloads, activates, retires and revokes the keys of a running service.",
        subcommands: [Generate.self, Inspect.self, List.self, Reload.self, Activate.self, Retire.self, Revoke.self]
    )

    struct Generate: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Generates a P-256 test key as PKCS#8 PEM (like an App Store Connect .p8). The App Store will not accept it.")

        @Option(help: "Write the key to this file (created with mode 0600) instead of standard output.")
        var output: String?

        func run() throws {
            let pem = try SigningKey.generate(keyIdentifier: "GENERATED").pkcs8PEMRepresentation + "\n"
            guard let output else {
                print(pem, terminator: "")
                return
            }
            guard FileManager.default.createFile(atPath: output, contents: Data(pem.utf8), attributes: [.posixPermissions: 0o600]) else {
                throw ValidationError("Cannot write \(output).")
            }
        }
    }

    struct Inspect: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Prints a key's identifier, fingerprint and public key — never the private key.")

        @Argument(help: "A .p8/PEM private key file.")
        var file: String

        @Option(name: .customLong("key-id"), help: "The key identifier (default: from a SubscriptionKey_<KEYID>.p8 file name).")
        var keyIdentifier: String?

        func run() throws {
            let ring = try KeyOptions.parse(["--key-file", file] + (keyIdentifier.map { ["--key-id", $0] } ?? [])).keyRing(environment: [:])
            let key = try ring.activeKey()
            try printJSON(Inspection(keyIdentifier: key.keyIdentifier, fingerprint: key.fingerprint, publicKeyPEM: key.verificationKey.pemRepresentation, jwk: key.verificationKey.jsonWebKey))
        }
    }

    struct Inspection: Encodable {
        var keyIdentifier: String
        var fingerprint: String
        var publicKeyPEM: String
        var jwk: [String: String]
    }
}
