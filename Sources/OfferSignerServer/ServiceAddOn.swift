import Hummingbird
import OfferApplication
import OfferModel

/// What an embedder adds to the service: routes on the public part, work to do once the store is open, and how
/// App Store data it signs itself is read. `serve --demo` is one (the `OfferSignerDemo` target); a plain
/// configuration has none.
public struct ServiceAddOn: Sendable {
    /// A name for logs and errors (`the demo`).
    public var name: String
    /// Registers the add-on's routes on the public part of the router; `/openapi.yaml` describes the demo's
    /// routes (`/demo/*`) only when ``describesDemoRoutes`` is set.
    public var registerRoutes: @Sendable (Router<OfferSignerRequestContext>, OfferSignerUseCases) -> Void
    /// Runs once the service is built (with a store and App Store data), before it answers: the demo seeds its
    /// customers' history through it.
    public var prepare: @Sendable (OfferSignerUseCases) async throws -> Void
    /// Whether `/openapi.yaml` keeps the document's `/demo/*` paths and `Demo*` schemas.
    public var describesDemoRoutes: Bool
    /// Whether an `appAccountToken` may be any valid customer identifier rather than a UUID (the demo's stand-in
    /// App Store names its customers readably).
    public var readableTokens: Bool

    /// Creates an add-on.
    public init(
        name: String,
        describesDemoRoutes: Bool = false,
        readableTokens: Bool = false,
        registerRoutes: @escaping @Sendable (Router<OfferSignerRequestContext>, OfferSignerUseCases) -> Void = { _, _ in },
        prepare: @escaping @Sendable (OfferSignerUseCases) async throws -> Void = { _ in }
    ) {
        self.name = name
        self.describesDemoRoutes = describesDemoRoutes
        self.readableTokens = readableTokens
        self.registerRoutes = registerRoutes
        self.prepare = prepare
    }
}
