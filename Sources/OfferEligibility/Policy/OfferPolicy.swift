import Crypto
import Foundation
import OfferSigning

/// The offer catalogue and eligibility policy (`OFFER_SIGNER_POLICY`, YAML or JSON): apps → products →
/// offers → rules, and an introductory-offer policy per product. See docs/policy.md.
///
/// ## Usage
///
/// ```swift
/// let policy = try OfferPolicy(contentsOf: "/etc/offer-signer/policy.yaml")
/// switch policy.lookup(bundleIdentifier: "com.example.app", productIdentifier: "com.example.monthly", offerIdentifier: "winback_50") {
/// case .found(let app, let product, let offer):
///     let decision = offer.rule.evaluate(context)   // .eligible or .notEligible(reasons)
/// case .unknownApp, .unknownProduct, .unknownOffer: …   // 404
/// }
/// ```
public struct OfferPolicy: Sendable {
    /// One offer and the rules that decide who gets it (all must hold).
    public struct Offer: Sendable {
        public var offerIdentifier: String
        public var rule: AllRules
    }

    /// One subscription product.
    public struct Product: Sendable {
        public var productIdentifier: String
        public var subscriptionGroupIdentifier: String?
        public var offers: [Offer]
        /// Who may have the product's introductory offer; `nil` allows everyone.
        public var introductoryOffer: AllRules?
        /// What to answer the App Store's real-time retention requests for this product, in order (empty: no
        /// answer, Apple shows its default message). See ``RetentionEntry``.
        public var retention: [RetentionEntry] = []

        public func offer(_ offerIdentifier: String) -> Offer? { offers.first { $0.offerIdentifier == offerIdentifier } }
    }

    /// One app.
    public struct App: Sendable {
        public var bundleIdentifier: String
        public var issuerIdentifier: String?
        public var appAppleId: Int64?
        public var activeKeyIdentifier: String?
        public var products: [Product]
        /// The retention messages and images the app's entries use, and its products' default messages
        /// (``RetentionCatalogue``; empty when the policy declares none).
        public var retentionCatalogue = RetentionCatalogue()

        public func product(_ productIdentifier: String) -> Product? { products.first { $0.productIdentifier == productIdentifier } }
    }

    /// What to do when the App Store Server API cannot be asked in time about a customer the store does not know
    /// (`appStoreUnavailable:`, a top-level key).
    public enum AppStoreUnavailable: String, Sendable, CaseIterable {
        /// Refuse the request (503 `app_store_unavailable`, with `Retry-After`): no decision on missing facts.
        case refuse
        /// Decide on what the store has (for a customer it does not know: no subscription).
        case allowFromStore = "allow-from-store"
    }

    /// The apps.
    public var apps: [App]

    /// What to do when the App Store Server API cannot be asked in time; default ``AppStoreUnavailable/refuse``.
    public var appStoreUnavailable: AppStoreUnavailable = .refuse

    /// The offer experiments (`experiments:`), each gating the offers or retention entries its variants name.
    public var experiments: [Experiment] = []
    /// The policy's version: the SHA-256 of its text, 64 lower-case hex characters. Every decision in the
    /// decision log carries it (docs/policy.md "Dry-run").
    public var version: String
    /// The text the policy was read from (YAML or JSON), as given.
    public var text: String

    /// The result of looking an offer up.
    public enum Lookup: Sendable {
        case found(App, Product, Offer)
        case unknownApp
        case unknownProduct(App)
        case unknownOffer(App, Product)
    }

    /// Finds an offer.
    public func lookup(bundleIdentifier: String, productIdentifier: String, offerIdentifier: String) -> Lookup {
        guard let app = app(bundleIdentifier) else { return .unknownApp }
        guard let product = app.product(productIdentifier) else { return .unknownProduct(app) }
        guard let offer = product.offer(offerIdentifier) else { return .unknownOffer(app, product) }
        return .found(app, product, offer)
    }

    /// The app with this bundle identifier.
    public func app(_ bundleIdentifier: String) -> App? { apps.first { $0.bundleIdentifier == bundleIdentifier } }

    /// The longest look back at issued signatures any rule needs (caps, cool-downs), in seconds.
    public var lookback: TimeInterval {
        apps.flatMap(\.products).flatMap { $0.offers.map(\.rule) + $0.retention.map(\.rule) + ($0.introductoryOffer.map { [$0] } ?? []) }.compactMap(
            \.lookback
        ).max() ?? 0
    }

    /// Reads a policy file.
    /// - Throws: ``PolicyError`` saying where in the file the problem is.
    public init(contentsOf path: String, registry: RuleRegistry = .builtIn) throws(PolicyError) {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw PolicyError(.invalidPolicy, "\(path): cannot read the policy file")
        }
        do {
            try self.init(
                text: String(decoding: data, as: UTF8.self),
                registry: registry,
                directory: URL(fileURLWithPath: path).deletingLastPathComponent().path
            )
        } catch {
            throw PolicyError(.invalidPolicy, "\(path): \(error.message)")
        }
    }

    /// Parses a policy (YAML, or JSON).
    /// - Parameter directory: Where the retention catalogue's image files are (the policy file's folder); `nil`
    ///   when the policy is not a file, and then a retention message with an image is refused.
    public init(text: String, registry: RuleRegistry = .builtIn, directory: String? = nil) throws(PolicyError) {
        version = SHA256.hash(data: Data(text.utf8)).map { byte in
            let hex = String(byte, radix: 16)
            return byte < 16 ? "0" + hex : hex
        }.joined()
        self.text = text
        let root = try PolicyNode.parse(text)
        try root.requireOnlyKeys(["apps", "appStoreUnavailable", "experiments"])
        if let node = root["appStoreUnavailable"] {
            let text = try node.string()
            guard let value = AppStoreUnavailable(rawValue: text) else {
                throw PolicyError(
                    .invalidPolicy,
                    """
                    \(node.location): appStoreUnavailable must be \(AppStoreUnavailable.allCases.map(\.rawValue).joined(separator: " or ")), \
                    not '\(text.prefix(40))'
                    """
                )
            }
            appStoreUnavailable = value
        }
        guard let appsNode = root["apps"] else { throw PolicyError(.invalidPolicy, "\(root.location): a policy starts with apps:") }
        var apps: [App] = []
        var bundleIdentifiers: Set<String> = []  // the duplicate checks in constant time: a candidate can list thousands
        for appNode in try appsNode.list() {
            try appNode.requireOnlyKeys([
                "bundleIdentifier", "issuerIdentifier", "appAppleId", "activeKeyIdentifier", "products", "retentionMessages",
            ])
            let bundleIdentifier = try Self.required(appNode, "bundleIdentifier", maximumLength: PayloadField.maximumBundleIdentifierLength)
            guard bundleIdentifiers.insert(bundleIdentifier).inserted else {
                throw PolicyError(.invalidPolicy, "\(appNode.location): app \(bundleIdentifier) is listed twice")
            }
            var appAppleId: Int64?
            if let node = appNode["appAppleId"] {
                guard let value = Int64(try node.string()) else { throw PolicyError(.invalidPolicy, "\(node.location): appAppleId must be a number") }
                appAppleId = value
            }
            var products: [Product] = []
            var productIdentifiers: Set<String> = []
            let productNodes = try (appNode["products"]?.list() ?? [])
            for productNode in productNodes {
                try productNode.requireOnlyKeys([
                    "productIdentifier", "subscriptionGroupIdentifier", "offers", "introductoryOffer", "retention", "retentionDefaults",
                ])
                let productIdentifier = try Self.required(productNode, "productIdentifier")
                guard productIdentifiers.insert(productIdentifier).inserted else {
                    throw PolicyError(.invalidPolicy, "\(productNode.location): product \(productIdentifier) is listed twice in \(bundleIdentifier)")
                }
                var offers: [Offer] = []
                var offerIdentifiers: Set<String> = []
                for offerNode in try (productNode["offers"]?.list() ?? []) {
                    try offerNode.requireOnlyKeys(["offerIdentifier", "description", "rules"])
                    let offerIdentifier = try Self.required(offerNode, "offerIdentifier")
                    guard offerIdentifiers.insert(offerIdentifier).inserted else {
                        throw PolicyError(.invalidPolicy, "\(offerNode.location): offer \(offerIdentifier) is listed twice in \(productIdentifier)")
                    }
                    offers.append(Offer(offerIdentifier: offerIdentifier, rule: try Self.rules(offerNode["rules"], registry: registry)))
                }
                var introductory: AllRules?
                if let introductoryNode = productNode["introductoryOffer"] {
                    try introductoryNode.requireOnlyKeys(["rules"])
                    introductory = try Self.rules(introductoryNode["rules"], registry: registry)
                }
                products.append(
                    Product(
                        productIdentifier: productIdentifier,
                        subscriptionGroupIdentifier: try Self.optional(productNode, "subscriptionGroupIdentifier"),
                        offers: offers,
                        introductoryOffer: introductory
                    )
                )
            }
            let productsByIdentifier = Dictionary(products.map { ($0.productIdentifier, $0) }, uniquingKeysWith: { first, _ in first })
            let catalogue = try Self.retentionCatalogue(appNode["retentionMessages"], productNodes: productNodes, directory: directory)
            for (index, productNode) in productNodes.enumerated() {
                guard let retentionNode = productNode["retention"] else { continue }
                products[index].retention = try Self.retentionEntries(
                    retentionNode,
                    product: products[index],
                    appProducts: productsByIdentifier,
                    catalogue: catalogue,
                    registry: registry
                )
            }
            apps.append(
                App(
                    bundleIdentifier: bundleIdentifier,
                    issuerIdentifier: try Self.optional(appNode, "issuerIdentifier"),
                    appAppleId: appAppleId,
                    activeKeyIdentifier: try Self.optional(appNode, "activeKeyIdentifier", maximumLength: 64),
                    products: products,
                    retentionCatalogue: catalogue
                )
            )
        }
        guard !apps.isEmpty else { throw PolicyError(.invalidPolicy, "\(appsNode.location): the policy lists no app") }
        self.apps = apps
        try readExperiments(root["experiments"])
    }

    /// A required identifier, validated as the signing core validates a payload field (length, no U+2063, no
    /// control or invisible characters), so that a policy that loads never makes a request fail later.
    static func required(_ node: PolicyNode, _ key: String, maximumLength: Int = PayloadField.maximumLength) throws(PolicyError) -> String {
        guard node[key] != nil else { throw PolicyError(.invalidPolicy, "\(node.location): '\(key)' is required") }
        return try optional(node, key, maximumLength: maximumLength)!
    }

    static func optional(_ node: PolicyNode, _ key: String, maximumLength: Int = PayloadField.maximumLength) throws(PolicyError) -> String? {
        guard let value = node[key] else { return nil }
        let text = try value.string()
        do {
            try PayloadField.validate(text, named: key, maximumLength: maximumLength)
        } catch {
            throw PolicyError(.invalidPolicy, "\(value.location): \(error.message)")
        }
        return text
    }

    static func rules(_ node: PolicyNode?, registry: RuleRegistry) throws(PolicyError) -> AllRules {
        guard let node else { return AllRules([]) }
        var rules: [any EligibilityRule] = []
        for item in try node.list() { rules.append(try registry.rule(from: item)) }
        return AllRules(rules)
    }
}
