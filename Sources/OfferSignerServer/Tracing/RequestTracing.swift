import AsyncHTTPClient
import HTTPTypes
import Hummingbird
import Logging
import OTel
import OfferApplication
import ServiceLifecycle
import Tracing

/// OpenTelemetry traces (docs/observability.md, "Traces"): the one place the tracer is started. Off unless the
/// environment configures an exporter with the OpenTelemetry specification's variables — `OTEL_EXPORTER_OTLP_ENDPOINT`
/// or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (OTLP/HTTP with protobuf; this build has no gRPC exporter), or
/// `OTEL_TRACES_EXPORTER` — and `OTEL_SDK_DISABLED` is not `true`. The other `OTEL_*` variables (service name,
/// headers, timeouts, sampler, batch delays) are read by swift-otel as the specification names them.
///
/// On, every request the router serves gets a server span (``RequestTracingMiddleware``) continuing an incoming
/// W3C `traceparent`, the pipeline's steps are its children, and `POST /v1/offers/sign` is served by the router
/// rather than the event-loop path, so that each request is traced whole. Off, nothing of this is in the request's
/// way.
public enum RequestTracing {
    /// Whether `environment` asks for traces.
    public static func isConfigured(_ environment: [String: String]) -> Bool {
        if ["true", "1", "yes", "on"].contains(environment["OTEL_SDK_DISABLED"]?.lowercased() ?? "") { return false }
        let exporter = environment["OTEL_TRACES_EXPORTER"]?.lowercased()
        if exporter == "none" { return false }
        return exporter != nil || environment["OTEL_EXPORTER_OTLP_ENDPOINT"] != nil || environment["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"] != nil
    }

    /// Starts the tracer when `environment` asks for traces (``isConfigured(_:)``): bootstraps the process's
    /// instrumentation and turns the pipeline's spans on. Returns the exporter's service, to run beside the server
    /// and listed first so that it stops last (the last answers' spans are exported); `nil` when traces are off.
    /// Call once, before the service answers.
    /// - Throws: ``ConfigurationError`` for an `OTEL_*` value swift-otel refuses (a gRPC protocol, a bad endpoint).
    public static func start(environment: [String: String], logger: Logger) throws(ConfigurationError) -> (any Service)? {
        guard isConfigured(environment) else { return nil }
        // swift-otel stops the process on a gRPC protocol when built without its gRPC exporter: refused here instead.
        let protocolVariable =
            environment["OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"] != nil ? "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL" : "OTEL_EXPORTER_OTLP_PROTOCOL"
        if let value = environment[protocolVariable], value.lowercased() == "grpc",
            (environment["OTEL_TRACES_EXPORTER"] ?? "otlp").lowercased() == "otlp"
        {
            throw ConfigurationError(
                .invalidConfiguration,
                """
                \(protocolVariable)=\(value): this build exports traces over OTLP/HTTP only; set http/protobuf (the default, port 4318) or \
                http/json.
                """
            )
        }
        var configuration = OTel.Configuration.default
        // Its own notes at warning and above (OTEL_LOG_LEVEL changes it): not a line per variable read at start-up.
        configuration.diagnosticLogLevel = .warning
        configuration.serviceName = "offer-signer"
        configuration.logs.enabled = false
        configuration.metrics.enabled = false
        configuration.traces.enabled = true
        configuration.diagnosticLogger = .custom(logger)
        // AsyncHTTPClient traces each request itself, with the URL (a transaction identifier in its path) as an
        // attribute, using the tracer bootstrapped when a client is made: the shared client, made now, keeps none.
        // The App Store calls have their own span, `app_store_api.request`.
        _ = HTTPClient.shared
        let service: any Service
        do {
            let backend = try OTel.makeTracingBackend(configuration: configuration)
            InstrumentationSystem.bootstrap(backend.factory)
            service = backend.service
        } catch {
            throw ConfigurationError(
                .invalidConfiguration,
                "OpenTelemetry traces cannot start (\(error)); check the OTEL_* variables (docs/observability.md: OTLP/HTTP only)."
            )
        }
        Traces.turnOn()
        let endpoint = environment["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"] ?? environment["OTEL_EXPORTER_OTLP_ENDPOINT"] ?? "-"
        logger.notice(
            "OpenTelemetry traces on",
            metadata: [
                "exporter": "\(environment["OTEL_TRACES_EXPORTER"] ?? "otlp")", "endpoint": "\(endpoint)",
            ]
        )
        return service
    }

    /// Whether the pipeline makes spans (``start(environment:logger:)`` turned them on).
    public static var isOn: Bool { Traces.areOn }
}

/// The server span of a request the router serves: named `METHOD route` (the route's pattern, never the path a
/// client sent), a child of the caller's span when the request carries a W3C `traceparent`. Attributes: the method,
/// the route, the status and the request ID; no header, query or path value.
struct RequestTracingMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var parent = InstrumentationContext.current ?? .topLevel
        InstrumentationSystem.instrument.extract(request.headers, into: &parent, using: HTTPFieldsExtractor())
        let span = startSpan(request.method.rawValue, context: parent, ofKind: .server)
        span.attributes["http.request.method"] = request.method.rawValue
        do {
            let response = try await InstrumentationContext.$current.withValue(span.context) { try await next(request, context) }
            end(
                span,
                request: request,
                context: context,
                status: Int(response.status.code),
                requestID: response.headers[RequestLoggingMiddleware.header]
            )
            return response
        } catch {
            end(span, request: request, context: context, status: Int((error as? any HTTPResponseError)?.status.code ?? 500), requestID: nil)
            throw error
        }
    }

    private func end(_ span: any Span, request: Request, context: Context, status: Int, requestID: String?) {
        let route = context.endpointPath ?? "unmatched"
        span.operationName = "\(request.method.rawValue) \(route)"
        span.attributes["http.route"] = route
        span.attributes["http.response.status_code"] = status
        if let requestID { span.attributes["offer_signer.request_id"] = requestID }
        if status >= 500 { span.setStatus(SpanStatus(code: .error)) }
        span.end()
    }
}

/// Reads a trace's propagation headers (W3C `traceparent`, `tracestate`) from a request.
private struct HTTPFieldsExtractor: Extractor {
    func extract(key name: String, from headers: HTTPFields) -> String? {
        HTTPField.Name(name).flatMap { headers[$0] }
    }
}
