import Foundation
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import OfferSignerServer
import OfferSigning

/// A service with one generated key for `com.example.app`, and helpers to call it.
struct TestService {
    let key: SigningKey
    let service: OfferService

    init(apps: [String] = ["com.example.app"], keys: [SigningKey]? = nil, active: String? = nil) throws {
        let keys = try keys ?? [SigningKey.generate(keyIdentifier: "TESTKEY001")]
        self.key = keys[0]
        self.service = OfferService(
            apps: apps.map { AppConfiguration(bundleIdentifier: $0) },
            keyRing: try KeyRing(keys: keys.map { .init(key: $0, source: "test") }, activeKeyIdentifier: active))
    }

    var application: some ApplicationProtocol {
        Application(router: buildRouter(service: service), logger: Logger(label: "test"))
    }
}

extension TestClientProtocol {
    /// POSTs a JSON body given as a string.
    func post(_ uri: String, json: String) async throws -> TestResponse {
        try await execute(uri: uri, method: .post, headers: [.contentType: "application/json"], body: ByteBuffer(string: json))
    }
}

/// The API's error body.
struct ErrorBody: Decodable {
    struct Detail: Decodable {
        var code: String
        var message: String
        var field: String?
    }
    var error: Detail
}

extension TestResponse {
    func decode<T: Decodable>(_ type: T.Type) throws -> T {
        try JSONDecoder().decode(T.self, from: Data(body.readableBytesView))
    }

    var text: String { String(buffer: body) }
}
