import ArgumentParser
import Foundation
import OfferApplication
import OfferSignerServer
import OfferSigning

struct VerifyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Verifies a legacy bundle (the JSON `sign` prints) or an offer JWS. Exit status 0 valid, 1 invalid.",
        discussion:
            """
            Input: a legacy bundle as JSON, a compact JWS, or {\"signature\": <compact JWS>}. Prints what was checked: the exact legacy payload \
            with separators shown as \\u2063, or the decoded JWS header and claims.
            """
    )

    @Argument(help: "A file holding the bundle JSON; - or nothing reads standard input.")
    var file: String?

    @Option(name: .customLong("public-key-file"), help: "Verify with this public key (PEM, as GET /v1/keys publishes it) instead of private keys.")
    var publicKeyFile: String?

    @OptionGroup var keys: KeyOptions

    func run() async throws {
        let data: Data
        if let file, file != "-" {
            guard let read = FileManager.default.contents(atPath: file) else { throw ValidationError("Cannot read \(file).") }
            data = read
        } else {
            data = FileHandle.standardInput.readDataToEndOfFile()
        }
        let text = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        // A JSON input is read as the HTTP API reads it: a key named twice is refused, never one copy picked.
        if text.hasPrefix("{"), let problem = StrictJSON.problem(in: data) {
            throw ValidationError("The input is not strict JSON: \(problem)")
        }
        if let token = Self.jwsToken(in: text) {
            guard publicKeyFile == nil else {
                throw ValidationError("--public-key-file verifies legacy bundles; for a JWS, use --key-file or the environment.")
            }
            let (ring, statesKnown) = try await keys.keys(environment: ConfigurationVariable.processEnvironment)
            var result = await JWSOfferVerifier.verify(token, keyRing: ring)
            if !statesKnown {
                result.keyState = nil
                result.warnings.append(Self.offlineWarning)
                if result.reason == "unknown_key" { result.message = Self.unknownKeyMessage(result.keyIdentifier) }
            }
            try printJSON(result)
            if !result.valid { throw ExitCode(1) }
            return
        }
        let bundle: SignedLegacyOffer
        do {
            bundle = try JSONDecoder().decode(SignedLegacyOffer.self, from: data)
        } catch {
            throw ValidationError("The input is not a legacy bundle: expected the JSON object `offer-signer sign` or POST /v1/offers/sign returns.")
        }
        var result: LegacyOfferVerification
        let statesKnown: Bool
        if let publicKeyFile {
            guard let pem = try? String(contentsOfFile: publicKeyFile, encoding: .utf8) else {
                throw ValidationError("Cannot read \(publicKeyFile).")
            }
            let key = try VerificationKey(keyIdentifier: bundle.keyIdentifier, publicKeyPEM: pem)
            result = LegacyOfferVerifier.verify(bundle, key: key)
            statesKnown = false
        } else {
            let keys = try await keys.keys(environment: ConfigurationVariable.processEnvironment)
            result = LegacyOfferVerifier.verify(bundle, keyRing: keys.ring)
            statesKnown = keys.statesKnown
        }
        if !statesKnown {
            result.keyState = nil
            result.warnings.append(Self.offlineWarning)
            if result.reason == "unknown_key" { result.message = Self.unknownKeyMessage(result.keyIdentifier) }
        }
        try printJSON(result)
        if !result.valid { throw ExitCode(1) }
    }

    /// What an offline check cannot know: whether the service has since revoked or retired the key.
    static let offlineWarning =
        """
        Checked against the key given only: this command does not know the key's state on the service (revoked, retired). Set \
        \(variable: .databaseUrl) (or \(variable: .stateFile)) as the service has it, or ask the service: POST /v1/offers/verify, or \
        offer-signer keys list --url.
        """

    /// An unknown key, offline: unknown to the keys given, not to the service.
    static func unknownKeyMessage(_ keyIdentifier: String?) -> String {
        """
        No key \(keyIdentifier ?? "(none named)") is among the keys given (--key-file, --public-key-file or the \
        \(ConfigurationVariable.keyVariable("*")) and \(variable: .keysDir) environment); the service may still know it — ask it with POST \
        /v1/offers/verify.
        """
    }

    /// A compact JWS given bare, as `{"signature": …}`, or as the JWS answer `sign` and POST /v1/offers/sign return
    /// (`"format": "jws"`); a legacy bundle (its timestamp, a base64 signature) is not one.
    static func jwsToken(in text: String) -> String? {
        if !text.hasPrefix("{") {
            return text.split(separator: ".", omittingEmptySubsequences: false).count == 3 ? text : nil
        }
        struct Wrapper: Decodable {
            var signature: String?
            var format: String?
            var timestamp: Int64?
        }
        guard let wrapper = try? JSONDecoder().decode(Wrapper.self, from: Data(text.utf8)), let token = wrapper.signature,
            wrapper.format == "jws" || (wrapper.format == nil && wrapper.timestamp == nil && token.contains("."))
        else { return nil }
        return token
    }
}
