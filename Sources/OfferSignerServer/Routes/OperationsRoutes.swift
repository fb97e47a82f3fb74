import AppStoreServerAPI
import Hummingbird
import NIOCore
import OfferApplication
import OfferKeys
import OfferModel
import OfferSigning
import Prometheus

struct HealthResponse: ResponseEncodable {
    var status: String
    var activeKeyIdentifier: String?
    /// `/readyz` only: the policy this replica runs (its version and revision in the store).
    var policy: PolicyInForceResponse?
}

/// `GET /healthz`, `GET /readyz`, `GET /metrics`.
struct OperationsRoutes<Context: RequestContext> {
    /// How long `/readyz` waits for the store's answer before it says 503: within a second of losing the database,
    /// whatever `OFFER_SIGNER_STORE_TIMEOUT` allows a request.
    static var readinessTimeout: Duration { .milliseconds(800) }

    let signing: Signing
    /// Whether the store answers (`/readyz`).
    let health: StoreHealth
    let metricsRegistry: PrometheusCollectorRegistry?
    /// Whether `/openapi.yaml` is served here (the public port, or the only one).
    var servesDocuments = true
    /// Whether the document describes the demo's routes: only when this router registers them.
    var describesDemo = false

    func register(on router: Router<Context>) {
        router.get("/healthz") { _, _ in HealthResponse(status: "ok") }
        // Without the resource folder beside the binary there is no document to serve: the route is left out (404).
        if servesDocuments, !OpenAPIDocument.yaml.isEmpty {
            let document = ByteBuffer(string: OpenAPIDocument.yaml(describingDemo: describesDemo))  // read once, at start
            router.get("/openapi.yaml") { _, _ -> Response in
                Response(status: .ok, headers: [.contentType: "application/yaml; charset=utf-8"], body: .init(byteBuffer: document))
            }
        }
        router.get("/readyz") { _, _ -> HealthResponse in
            let key = try signing.keys.current.activeKey()
            do throws(OfferServiceError) { try await health.checkReady(within: Self.readinessTimeout) } catch { throw APIError.storeUnavailable }
            return HealthResponse(
                status: "ready",
                activeKeyIdentifier: key.keyIdentifier,
                policy: PolicyInForceResponse(signing.policyHolder.current)
            )
        }
        if let metricsRegistry {
            router.get("/metrics") { _, _ -> Response in
                var bytes: [UInt8] = []
                metricsRegistry.emit(into: &bytes)
                return Response(
                    status: .ok,
                    headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                    body: .init(byteBuffer: ByteBuffer(bytes: bytes))
                )
            }
        }
    }
}
