import ArgumentParser
import Foundation
import OfferSignerServer
import OfferSigning

struct VerifyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Verifies a legacy bundle (the JSON `sign` prints). Exit status 0 valid, 1 invalid.",
        discussion: "Prints what was checked, including the exact payload with separators shown as \\u2063."
    )

    @Argument(help: "A file holding the bundle JSON; - or nothing reads standard input.")
    var file: String?

    @Option(name: .customLong("public-key-file"), help: "Verify with this public key (PEM, as GET /v1/keys publishes it) instead of private keys.")
    var publicKeyFile: String?

    @OptionGroup var keys: KeyOptions

    func run() throws {
        let data: Data
        if let file, file != "-" {
            guard let read = FileManager.default.contents(atPath: file) else { throw ValidationError("Cannot read \(file).") }
            data = read
        } else {
            data = FileHandle.standardInput.readDataToEndOfFile()
        }
        let bundle: SignedLegacyOffer
        do {
            bundle = try JSONDecoder().decode(SignedLegacyOffer.self, from: data)
        } catch {
            throw ValidationError("The input is not a legacy bundle: expected the JSON object `offer-signer sign` or POST /v1/offers/sign returns.")
        }
        let result: LegacyOfferVerification
        if let publicKeyFile {
            guard let pem = try? String(contentsOfFile: publicKeyFile, encoding: .utf8) else { throw ValidationError("Cannot read \(publicKeyFile).") }
            let key = try VerificationKey(keyIdentifier: bundle.keyIdentifier, publicKeyPEM: pem)
            result = LegacyOfferVerifier.verify(bundle, key: key)
        } else {
            result = LegacyOfferVerifier.verify(bundle, keyRing: try keys.keyRing(environment: ProcessInfo.processInfo.environment))
        }
        try printJSON(result)
        if !result.valid { throw ExitCode(1) }
    }
}
