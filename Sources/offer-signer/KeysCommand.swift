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
            abstract: "Generates a P-256 test key as PKCS#8 PEM (like an App Store Connect .p8). The App Store will not accept it."
        )

        @Option(
            help: "Write the key to this new file (created with mode 0600; an existing path is refused, never replaced) instead of standard output."
        )
        var output: String?

        func run() throws {
            let key = try SigningKey.generate(keyIdentifier: "GENERATED")
            let pem = key.pkcs8PEMRepresentation + "\n"
            guard let output else {
                print(pem, terminator: "")
                return
            }
            try Self.writeExclusively(Data(pem.utf8), to: output)
            // Standard output stays empty (scripts chain on it); what was made goes to standard error.
            FileHandle.standardError.write(
                Data(
                    """
                    wrote a P-256 test key to \(output) (mode 0600); public key fingerprint (SHA-256) \(key.fingerprint), \
                    as `keys inspect` and the service's start-up log show it. The App Store will not accept it. In \
                    \(variable: .keysDir), a key file is named SubscriptionKey_<KEYID>.p8 (10 letters or digits).

                    """.utf8
                )
            )
        }

        /// Creates `path` with mode 0600 and writes `data`, refusing a path that exists (a file, a link, anything):
        /// App Store Connect lets a developer download a key once, so a key file is never replaced. `O_EXCL` with
        /// `O_CREAT` makes the check and the creation one step (no race with another writer, no following a link).
        static func writeExclusively(_ data: Data, to path: String) throws {
            let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
            guard descriptor >= 0 else {
                let reason = errno
                if reason == EEXIST {
                    throw ValidationError(
                        """
                        \(path) already exists; keys generate never replaces a file (it may be the only copy of an App Store key). Choose a new \
                        path.
                        """
                    )
                }
                throw ValidationError("Cannot create \(path): \(String(cString: strerror(reason))).")
            }
            defer { close(descriptor) }
            var written = 0
            try data.withUnsafeBytes { bytes in
                while written < bytes.count {
                    let count = write(descriptor, bytes.baseAddress! + written, bytes.count - written)
                    if count < 0 {
                        if errno == EINTR { continue }
                        let reason = errno
                        unlink(path)
                        throw ValidationError("Cannot write \(path): \(String(cString: strerror(reason))).")
                    }
                    written += count
                }
            }
            guard fsync(descriptor) == 0 else {
                let reason = errno
                throw ValidationError("Cannot write \(path) to disk: \(String(cString: strerror(reason))).")
            }
        }
    }

    struct Inspect: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Prints a key's identifier, fingerprint and public key — never the private key."
        )

        @Argument(help: "A .p8/PEM private key file.")
        var file: String

        @Option(name: .customLong("key-id"), help: "The key identifier (default: from a SubscriptionKey_<KEYID>.p8 file name).")
        var keyIdentifier: String?

        func run() async throws {
            let ring = try await KeyOptions.parse(["--key-file", file] + (keyIdentifier.map { ["--key-id", $0] } ?? [])).keyRing(environment: [:])
            let key = try ring.activeKey()
            try printJSON(
                Inspection(
                    keyIdentifier: key.keyIdentifier,
                    fingerprint: key.fingerprint,
                    publicKeyPEM: key.verificationKey.pemRepresentation,
                    jwk: key.verificationKey.jsonWebKey
                )
            )
        }
    }

    struct Inspection: Encodable {
        var keyIdentifier: String
        var fingerprint: String
        var publicKeyPEM: String
        var jwk: [String: String]
    }
}
