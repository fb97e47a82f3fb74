import Foundation
import OfferExperiments

extension OfferPolicy {
    /// The most customers' share one experiment's weights may add up to.
    static let maximumTotalWeight = 1_000_000

    /// Reads `experiments:` and puts each experiment's gate (``ExperimentRule``) on the offers or retention entries
    /// its variants name. Refuses what would make the split or the answers ambiguous: an unknown app, product, offer
    /// or entry; a variant without a positive weight; two holdouts; two variants with one answer; a retention
    /// variant naming the fallback (the holdout's answer); two experiments in one slot.
    mutating func readExperiments(_ node: PolicyNode?) throws(PolicyError) {
        guard let node else { return }
        for item in try node.list() {
            try item.requireOnlyKeys([
                "id", "description", "bundleIdentifier", "productIdentifier", "channel", "variants", "start", "end", "metric", "plannedCustomers",
                "windowDays", "alpha", "comparisons",
            ])
            var experiment = try readExperiment(item)
            guard self.experiment(experiment.identifier) == nil else {
                throw PolicyError(.invalidPolicy, "\(item.location): experiment \(experiment.identifier) is listed twice")
            }
            if let other = self.experiment(
                bundleIdentifier: experiment.bundleIdentifier,
                productIdentifier: experiment.productIdentifier,
                channel: experiment.channel
            ) {
                throw PolicyError(
                    .invalidPolicy,
                    """
                    \(item.location): \(experiment.productIdentifier)'s \(experiment.channel.rawValue) offers already have experiment \
                    \(other.identifier): one experiment per slot
                    """
                )
            }
            experiment.location = item.location
            try gate(experiment, at: item.location)
            experiments.append(experiment)
        }
    }

    private func readExperiment(_ item: PolicyNode) throws(PolicyError) -> Experiment {
        let identifier = try Self.required(item, "id", maximumLength: 64)
        let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-".utf8)
        guard identifier.utf8.allSatisfy(allowed.contains) else {
            throw PolicyError(
                .invalidPolicy,
                """
                \(item.location): an experiment's id is letters, digits, '.', '_' and '-' only (it is hashed with each customer: keep it for \
                the experiment's life)
                """
            )
        }
        let bundleIdentifier: String
        if let named = try Self.optional(item, "bundleIdentifier") {
            bundleIdentifier = named
        } else if apps.count == 1 {
            bundleIdentifier = apps[0].bundleIdentifier
        } else {
            throw PolicyError(.invalidPolicy, "\(item.location): experiment \(identifier) needs bundleIdentifier: the policy lists several apps")
        }
        guard let app = app(bundleIdentifier) else {
            throw PolicyError(
                .invalidPolicy,
                "\(item.location): experiment \(identifier) names app \(bundleIdentifier), which the policy does not list"
            )
        }
        let productIdentifier = try Self.required(item, "productIdentifier")
        guard let product = app.product(productIdentifier) else {
            throw PolicyError(
                .invalidPolicy,
                "\(item.location): experiment \(identifier) names product \(productIdentifier), which \(bundleIdentifier) does not list"
            )
        }
        let channelText = try item["channel"]?.string() ?? Experiment.Channel.app.rawValue
        guard let channel = Experiment.Channel(rawValue: channelText) else {
            throw PolicyError(
                .invalidPolicy,
                """
                \(item.location): channel must be app (the product's promotional offers) or retention (its retention answer), not \
                '\(channelText.prefix(40))'
                """
            )
        }
        let metricText = try item["metric"]?.string() ?? Experiment.Metric.redeemed.rawValue
        guard let metric = Experiment.Metric(rawValue: metricText) else {
            throw PolicyError(
                .invalidPolicy,
                """
                \(item.location): metric must be \(Experiment.Metric.allCases.map(\.rawValue).joined(separator: ", ")), not \
                '\(metricText.prefix(40))'
                """
            )
        }
        let dates = RuleParameters(node: item, ruleName: "experiment \(identifier)", registry: .builtIn)
        let (start, end) = (try dates.date("start"), try dates.date("end"))
        let plannedCustomers = try dates.integer("plannedCustomers", default: 2_000, minimum: 100, maximum: 10_000_000)
        let windowDays = try dates.integer("windowDays", default: 30, minimum: 1, maximum: 400)
        let alphaText = try item["alpha"]?.string() ?? "0.05"
        guard let alpha = Double(alphaText), alpha.isFinite, alpha >= 0.001, alpha <= 0.2 else {
            throw PolicyError(
                .invalidPolicy,
                "\(item.location): alpha of experiment \(identifier) is a number from 0.001 to 0.2 (the chance of a false finding; default 0.05)"
            )
        }
        let comparisonsText = try item["comparisons"]?.string() ?? Experiment.Comparisons.reference.rawValue
        guard let comparisons = Experiment.Comparisons(rawValue: comparisonsText) else {
            throw PolicyError(
                .invalidPolicy,
                """
                \(item.location): comparisons must be reference (each variant against the holdout, else the first) or pairs (and every pair), \
                not '\(comparisonsText.prefix(40))'
                """
            )
        }
        if let start, let end, start >= end {
            throw PolicyError(.invalidPolicy, "\(item.location): experiment \(identifier) ends before it starts")
        }
        guard let variantsNode = item["variants"] else {
            throw PolicyError(.invalidPolicy, "\(item.location): experiment \(identifier) needs variants:")
        }
        var variants: [Experiment.Variant] = []
        for variantNode in try variantsNode.list() {
            variants.append(try Self.readVariant(variantNode, of: identifier, channel: channel, product: product, after: variants))
        }
        guard variants.count >= 2 else {
            throw PolicyError(
                .invalidPolicy,
                "\(variantsNode.location): experiment \(identifier) needs at least two variants (one may be holdout: true)"
            )
        }
        guard variants.map(\.weight).reduce(0, +) <= Self.maximumTotalWeight else {
            throw PolicyError(
                .invalidPolicy,
                "\(variantsNode.location): the weights of experiment \(identifier) add up to more than \(Self.maximumTotalWeight)"
            )
        }
        let assignment: ExperimentAssignment
        do {
            assignment = try ExperimentAssignment(
                experimentIdentifier: identifier,
                variants: variants.map { ExperimentVariant(name: $0.name, weight: $0.weight) }
            )
        } catch {
            throw PolicyError(.invalidPolicy, "\(variantsNode.location): \(error.message)")
        }
        return Experiment(
            identifier: identifier,
            bundleIdentifier: bundleIdentifier,
            productIdentifier: productIdentifier,
            channel: channel,
            variants: variants,
            start: start,
            end: end,
            metric: metric,
            plannedCustomers: plannedCustomers,
            windowDays: windowDays,
            alpha: alpha,
            comparisons: comparisons,
            location: item.location,
            assignment: assignment
        )
    }

    private static func readVariant(
        _ node: PolicyNode,
        of identifier: String,
        channel: Experiment.Channel,
        product: Product,
        after earlier: [Experiment.Variant]
    ) throws(PolicyError) -> Experiment.Variant {
        try node.requireOnlyKeys(["name", "offerIdentifier", "messageIdentifier", "weight", "holdout", "description"])
        let name = try required(node, "name", maximumLength: 64)
        guard !earlier.contains(where: { $0.name == name }) else {
            throw PolicyError(.invalidPolicy, "\(node.location): experiment \(identifier) has two variants named \(name)")
        }
        let parameters = RuleParameters(node: node, ruleName: "variant \(name)", registry: .builtIn)
        let weight = try parameters.integer("weight", minimum: 1, maximum: maximumTotalWeight)
        let holdoutText = try node["holdout"]?.string() ?? "false"
        guard holdoutText == "true" || holdoutText == "false" else {
            throw PolicyError(.invalidPolicy, "\(node.location): holdout is true or false")
        }
        let (offer, message) = (try optional(node, "offerIdentifier"), try optional(node, "messageIdentifier"))
        if holdoutText == "true" {
            guard offer == nil, message == nil else {
                throw PolicyError(
                    .invalidPolicy,
                    "\(node.location): the holdout of experiment \(identifier) gives nothing: remove its offerIdentifier or messageIdentifier"
                )
            }
            guard !earlier.contains(where: \.isHoldout) else {
                throw PolicyError(.invalidPolicy, "\(node.location): experiment \(identifier) has two holdouts; one is enough")
            }
            return Experiment.Variant(name: name, answer: nil, weight: weight)
        }
        let answer: String
        switch channel {
        case .app:
            guard let offer, message == nil else {
                throw PolicyError(
                    .invalidPolicy,
                    "\(node.location): a variant of an app experiment names one offerIdentifier of \(product.productIdentifier) (or is holdout: true)"
                )
            }
            guard product.offer(offer) != nil else {
                throw PolicyError(
                    .invalidPolicy,
                    "\(node.location): variant \(name) names offer \(offer), which \(product.productIdentifier) does not list"
                )
            }
            answer = offer
        case .retention:
            guard let message, offer == nil else {
                throw PolicyError(
                    .invalidPolicy,
                    """
                    \(node.location): a variant of a retention experiment names one messageIdentifier of \(product.productIdentifier)'s \
                    retention entries (or is holdout: true)
                    """
                )
            }
            guard let entry = product.retention.first(where: { $0.messageIdentifier == message }) else {
                throw PolicyError(
                    .invalidPolicy,
                    "\(node.location): variant \(name) names message \(message), which no retention entry of \(product.productIdentifier) has"
                )
            }
            guard !entry.isFallback else {
                throw PolicyError(
                    .invalidPolicy,
                    """
                    \(node.location): variant \(name) names the fallback message, which every customer gets when no other entry holds: name an \
                    entry with an offer or rules
                    """
                )
            }
            answer = message
        }
        guard !earlier.contains(where: { $0.answer == answer }) else {
            throw PolicyError(.invalidPolicy, "\(node.location): two variants of experiment \(identifier) give \(answer); each variant gives its own")
        }
        return Experiment.Variant(name: name, answer: answer, weight: weight)
    }

    /// Puts the experiment's gate on every offer or retention entry a variant names.
    private mutating func gate(_ experiment: Experiment, at location: String) throws(PolicyError) {
        guard let appIndex = apps.firstIndex(where: { $0.bundleIdentifier == experiment.bundleIdentifier }),
            let productIndex = apps[appIndex].products.firstIndex(where: { $0.productIdentifier == experiment.productIdentifier })
        else { throw PolicyError(.invalidPolicy, "\(location): experiment \(experiment.identifier) names a product the policy does not list") }
        var product = apps[appIndex].products[productIndex]
        switch experiment.channel {
        case .app:
            for index in product.offers.indices where experiment.names(product.offers[index].offerIdentifier) {
                let offer = product.offers[index]
                product.offers[index].rule = AllRules(offer.rule.rules + [ExperimentRule(experiment: experiment, answer: offer.offerIdentifier)])
            }
        case .retention:
            for index in product.retention.indices where experiment.names(product.retention[index].messageIdentifier) {
                let entry = product.retention[index]
                product.retention[index].rule = AllRules(entry.rule.rules + [ExperimentRule(experiment: experiment, answer: entry.messageIdentifier)])
            }
        }
        apps[appIndex].products[productIndex] = product
    }
}
