import Logging
import OfferSignerServer
import Testing

/// When OpenTelemetry traces are on: the OpenTelemetry specification's variables only (the spans themselves are
/// checked against a real OTLP/HTTP receiver by IntegrationTests/trace-check.py).
@Suite struct RequestTracingTests {
    @Test func offWithoutAnExporter() {
        #expect(!RequestTracing.isConfigured([:]))
        #expect(!RequestTracing.isConfigured(["OTEL_SERVICE_NAME": "offer-signer", "OTEL_BSP_SCHEDULE_DELAY": "100"]))
        #expect(!RequestTracing.isConfigured(["OFFER_SIGNER_OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"]))
    }

    @Test func onWithAnEndpointOrAnExporter() {
        #expect(RequestTracing.isConfigured(["OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"]))
        #expect(RequestTracing.isConfigured(["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4318/v1/traces"]))
        #expect(RequestTracing.isConfigured(["OTEL_TRACES_EXPORTER": "console"]))
    }

    @Test func offWhenTheSpecificationSaysSo() {
        #expect(!RequestTracing.isConfigured(["OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318", "OTEL_SDK_DISABLED": "true"]))
        #expect(!RequestTracing.isConfigured(["OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318", "OTEL_SDK_DISABLED": "TRUE"]))
        #expect(!RequestTracing.isConfigured(["OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318", "OTEL_TRACES_EXPORTER": "none"]))
        #expect(RequestTracing.isConfigured(["OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318", "OTEL_SDK_DISABLED": "false"]))
    }

    @Test func aGRPCProtocolIsRefusedBeforeAnythingStarts() {
        for (variable, value) in [("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"), ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "GRPC")] {
            let error = #expect(throws: ConfigurationError.self) {
                _ = try RequestTracing.start(
                    environment: ["OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4317", variable: value],
                    logger: Logger(label: "test")
                )
            }
            #expect(error?.message.contains("OTLP/HTTP only") == true)
        }
        #expect(!RequestTracing.isOn)
    }
}
