import ArgumentParser
import AsyncHTTPClient
import Configuration
import Foundation
import NIOCore
import NIOHTTP1
import OfferSignerServer

/// Where and as whom the admin commands talk to a running service.
struct AdminOptions: ParsableArguments {
    @Option(help: "The service's base URL (default: \(variable: .url), else http://127.0.0.1:8080).")
    var url: String?

    @Option(help: "An admin token (default: \(variable: .adminToken)). Prefer the variable: options show up in `ps`.")
    var token: String?

    /// Sends one admin request; prints the JSON answer; exits 1 with the service's message on an error.
    func call(_ method: HTTPMethod, _ path: String) async throws {
        print(Self.pretty(try await answer(method, path)))
    }

    /// Sends one admin request and returns the answer's body; exits 1 with the service's message on an error.
    /// - Parameter body: the request's body (sent as `contentType`), or none.
    func answer(_ method: HTTPMethod, _ path: String, body requestBody: Data? = nil, contentType: String = "application/json") async throws -> String
    {
        let config = ConfigurationVariable.reader(ConfigurationVariable.processEnvironment)
        let base = (url ?? config.string(.url) ?? "http://127.0.0.1:8080").trimmingCharacters(in: CharacterSet(charactersIn: "/"))
        guard let token = token ?? config.string(.adminToken), !token.isEmpty else {
            throw ValidationError("Pass --token or set \(variable: .adminToken) (one of the service's \(variable: .adminTokens)).")
        }
        var request = HTTPClientRequest(url: base + path)
        request.method = method
        request.headers.add(name: "Authorization", value: "Bearer \(token)")
        if let requestBody {
            request.headers.add(name: "Content-Type", value: contentType)
            request.body = .bytes(ByteBuffer(bytes: requestBody))
        }
        let response: HTTPClientResponse
        let body: ByteBuffer
        // A refused or unreachable address is said at once (5 s to connect, no retries), not after the request's 30 s.
        var configuration = HTTPClient.Configuration()
        configuration.connectionPool.retryConnectionEstablishment = false
        configuration.timeout.connect = .seconds(5)
        do {
            (response, body) = try await HTTPClient.withHTTPClient(configuration: configuration) { client in
                let response = try await client.execute(request, timeout: .seconds(30))
                return (response, try await response.body.collect(upTo: 1 << 20))
            }
        } catch {
            FileHandle.standardError.write(
                Data(
                    """
                    offer-signer: cannot reach \(base): \(Self.reason(error)). Is the service running there? Set --url or \(variable: .url) to \
                    its operations address (\(variable: .adminHost):\(variable: .adminPort) when the admin API has its own port).\n
                    """
                    .utf8
                )
            )
            throw ExitCode(2)
        }
        let text = String(buffer: body)
        if (200..<300).contains(response.status.code) {
            return text
        }
        let refusal = Self.refusal(in: text)
        if response.status.code == 404, path.hasPrefix("/admin/"), refusal == nil || refusal?.code == "not_found" {
            FileHandle.standardError.write(
                Data(
                    """
                    offer-signer: \(base) serves no admin API (404). With \(variable: .adminPort) set, the admin API is on the operations port, \
                    not the public one: point --url or \(variable: .url) at it.\n
                    """
                    .utf8
                )
            )
        } else if let refusal {
            // The service's own answer: its message and code (an unknown key, app or experiment is a 404 too).
            FileHandle.standardError.write(Data("offer-signer: \(refusal.message) (\(response.status.code) \(refusal.code))\n".utf8))
        } else {
            FileHandle.standardError.write(Data("offer-signer: \(response.status.code) \(text.prefix(2_000))\n".utf8))
        }
        throw ExitCode(1)
    }

    /// The API's error envelope, `{"error": {"code", "message"}}`, if the body is one.
    static func refusal(in text: String) -> (code: String, message: String)? {
        guard let object = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any],
            let error = object["error"] as? [String: Any], let code = error["code"] as? String, let message = error["message"] as? String
        else { return nil }
        return (code, message)
    }
}

extension AdminOptions {
    /// Why a connection failed, in plain words (no NIO error dump).
    static func reason(_ error: any Error) -> String {
        let text = String(describing: error).lowercased()
        if text.contains("refused") { return "connection refused" }
        if text.contains("timeout") || text.contains("timed out") { return "no answer in time" }
        if text.contains("reset") { return "the connection was reset" }
        if text.contains("name") && text.contains("resolv") { return "the host name does not resolve" }
        if text.contains("tls") || text.contains("ssl") || text.contains("certificate") { return "the TLS handshake failed" }
        return "the connection failed"
    }

    /// A JSON answer indented with sorted keys, for people; anything else as it came.
    static func pretty(_ text: String) -> String {
        guard let object = try? JSONSerialization.jsonObject(with: Data(text.utf8)),
            let data = try? JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes])
        else { return text }
        return String(decoding: data, as: UTF8.self)
    }
}

extension KeysCommand {
    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Lists the service's keys: state, fingerprint, source, signatures issued (GET /admin/keys)."
        )
        @OptionGroup var admin: AdminOptions
        func run() async throws { try await admin.call(.GET, "/admin/keys") }
    }

    struct Reload: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Makes the service re-read its key files, all or nothing (POST /admin/keys/reload)."
        )
        @OptionGroup var admin: AdminOptions
        func run() async throws { try await admin.call(.POST, "/admin/keys/reload") }
    }

    struct Activate: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Makes a key sign new offers; the previous active key is retired.")
        @Argument(help: "The key identifier.") var keyIdentifier: String
        @OptionGroup var admin: AdminOptions
        func run() async throws { try await admin.call(.POST, "/admin/keys/\(keyIdentifier)/activate") }
    }

    struct Retire: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Stops a key from signing; its signatures still verify.")
        @Argument(help: "The key identifier.") var keyIdentifier: String
        @OptionGroup var admin: AdminOptions
        func run() async throws { try await admin.call(.POST, "/admin/keys/\(keyIdentifier)/retire") }
    }

    struct Revoke: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Revokes a compromised key: it neither signs nor verifies. Final.")
        @Argument(help: "The key identifier.") var keyIdentifier: String
        @OptionGroup var admin: AdminOptions
        func run() async throws { try await admin.call(.POST, "/admin/keys/\(keyIdentifier)/revoke") }
    }
}
