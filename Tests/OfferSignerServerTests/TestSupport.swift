import Foundation
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import OfferApplication
import OfferSignerServer
import OfferSigning
import Testing

/// A service with one generated key for `com.example.app`, and helpers to call it.
struct TestService {
    let key: SigningKey
    let service: SigningPipeline

    init(apps: [String] = ["com.example.app"], keys: [SigningKey]? = nil, active: String? = nil) throws {
        let keys = try keys ?? [SigningKey.generate(keyIdentifier: "TESTKEY001")]
        self.key = keys[0]
        self.service = SigningPipeline(
            apps: apps.map { AppConfiguration(bundleIdentifier: $0) },
            keyRing: try KeyRing(keys: keys.map { .init(key: $0, source: "test") }, activeKeyIdentifier: active)
        )
    }

    var application: some ApplicationProtocol {
        Application(router: buildRouter(useCases: OfferSignerUseCases(pipeline: service, keyManager: nil)), logger: Logger(label: "test"))
    }

    /// The service's application served by `frontEnd` (open mode, no rate limits).
    func application(_ frontEnd: FrontEnd) -> Application<RouterResponder<OfferSignerRequestContext>> {
        frontEnd.application(router: buildRouter(useCases: OfferSignerUseCases(pipeline: service, keyManager: nil)), service: service)
    }
}

/// The two front ends of the public listener, for the HTTP tests of `POST /v1/offers/sign`: Hummingbird's router
/// (in process), and the event-loop signing path in front of it on a live socket, as `serve` runs it. A test run
/// against both checks that the event-loop path answers as the router does.
enum FrontEnd: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case router
    case eventLoop

    var testDescription: String { rawValue }

    /// How HummingbirdTesting runs it.
    var setup: TestingSetup { self == .router ? .router : .live }

    /// The application of `router` (built over `service`, `authenticator` and `limits`) for this front end.
    func application(
        router: Router<OfferSignerRequestContext>,
        service: SigningPipeline,
        authenticator: ClientAuthenticator? = nil,
        limits: RateLimits = RateLimits(.none),
        logger: Logger = Logger(label: "test")
    ) -> Application<RouterResponder<OfferSignerRequestContext>> {
        switch self {
        case .router:
            return Application(router: router, logger: logger)
        case .eventLoop:
            return makeApplication(
                router: router,
                signing: EventLoopSigning(
                    signing: Signing(pipeline: service),
                    authenticator: authenticator,
                    limits: limits,
                    serverName: "offer-signer"
                ),
                logger: logger
            )
        }
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
