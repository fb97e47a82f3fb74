import OfferErrors
import Synchronization
import Tracing

/// The pipeline's OpenTelemetry spans (docs/observability.md, "Traces"). Off until the server's tracing bootstrap
/// turns them on (an `OTEL_*` exporter is configured) before the service answers: off, ``span(_:_:_:)`` runs its
/// body and nothing else — no span, no task-local read — so a request pays one relaxed load per step.
///
/// Attributes carry identifiers of the configuration (app, product, offer, key identifier), counts, outcomes and
/// error codes; never a key, a token or a customer's identifier.
package enum Traces {
    private static let on = Atomic<Bool>(false)

    /// Whether spans are made.
    package static var areOn: Bool { on.load(ordering: .relaxed) }

    /// Turns spans on: once, at start-up, after the tracer is bootstrapped.
    package static func turnOn() { on.store(true, ordering: .relaxed) }

    /// Runs `body` inside a span named `name`, a child of the task's current span; a thrown error marks the span
    /// failed with its code only (an error's message is not the span's).
    package static func span<T, E: Error>(
        _ name: String,
        _ attributes: SpanAttributes = [:],
        isolation: isolated (any Actor)? = #isolation,
        _ body: () async throws(E) -> T
    ) async throws(E) -> T {
        guard areOn else { return try await body() }
        let span = startSpan(name, context: InstrumentationContext.current ?? .topLevel)
        span.attributes = attributes
        defer { span.end() }
        let result: Result<T, E> = await InstrumentationContext.$current.withValue(context(of: span)) {
            do throws(E) { return .success(try await body()) } catch { return .failure(error) }
        }
        if case .failure(let error) = result { fail(span, error) }
        return try result.get()
    }

    /// ``span(_:_:isolation:_:)`` for a body that does not suspend.
    package static func span<T, E: Error>(_ name: String, _ attributes: SpanAttributes = [:], _ body: () throws(E) -> T) throws(E) -> T {
        guard areOn else { return try body() }
        let span = startSpan(name, context: InstrumentationContext.current ?? .topLevel)
        span.attributes = attributes
        defer { span.end() }
        let result: Result<T, E> = InstrumentationContext.$current.withValue(context(of: span)) {
            do throws(E) { return .success(try body()) } catch { return .failure(error) }
        }
        if case .failure(let error) = result { fail(span, error) }
        return try result.get()
    }

    /// Sets attributes on the task's current span (the innermost ``span(_:_:_:)``), when spans are on.
    package static func annotate(_ update: (inout SpanAttributes) -> Void) {
        guard areOn, let context = InstrumentationContext.current, let span = Self.current(context) else { return }
        span.updateAttributes(update)
    }

    /// The span's context, which names the span for ``annotate(_:)``.
    private static func context(of span: any Span) -> InstrumentationContext {
        var context = span.context
        context[CurrentSpanKey.self] = SpanBox(span)
        return context
    }

    /// The span a context belongs to, when the tracer keeps it findable; `nil` otherwise.
    private static func current(_ context: InstrumentationContext) -> (any Span)? {
        context[CurrentSpanKey.self]?.span
    }

    private static func fail(_ span: any Span, _ error: any Error) {
        span.setStatus(SpanStatus(code: .error))
        span.attributes["offer_signer.error"] = errorCode(error)
    }

    /// An error's code (`not_eligible`, `store_unavailable`), never its message.
    package static func errorCode(_ error: any Error) -> String {
        switch error {
        case let error as OfferServiceError: error.code.rawValue
        case let error as any CodedError: codeOf(error)
        case is CancellationError: "cancelled"
        default: "error"
        }
    }

    private static func codeOf<E: CodedError>(_ error: E) -> String { error.code.rawValue }
}

/// Where ``Traces`` keeps the span of a context, so that ``Traces/annotate(_:)`` finds it.
private enum CurrentSpanKey: InstrumentationContextKey {
    typealias Value = SpanBox
}

private final class SpanBox: Sendable {
    let span: any Span
    init(_ span: any Span) { self.span = span }
}
