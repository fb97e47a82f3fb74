import Foundation
import OfferEligibility
import OfferModel

extension Signing {
    /// Every offer of the policy (of one product, or all) with its decision for a customer.
    /// - Parameter transactionId: a transaction of the customer's: when the store knows no subscription of theirs,
    ///   the App Store is asked first (``fetchMissingFacts(_:app:subscriptionGroupIdentifier:)``).
    /// - Parameter exposes: whether asking exposes the customer to the running experiments of the products listed
    ///   (an app asking for its customer: yes; support explaining a decision: no).
    public func eligibility(
        bundleIdentifier: String?,
        applicationUsername: String,
        productIdentifier: String?,
        transactionId: String? = nil,
        exposes: Bool = true
    ) async throws -> [OfferEligibilityEntry] {
        let app = try pipeline.app(named: bundleIdentifier)
        try CustomerIdentifier.validate(applicationUsername)
        guard let policy = pipeline.policy, let appPolicy = policy.app(app.bundleIdentifier) else { return [] }
        var products = appPolicy.products
        if let productIdentifier {
            guard let product = appPolicy.product(productIdentifier) else {
                throw SigningPipeline.unknownProduct(productIdentifier, app: app)
            }
            products = [product]
        }
        if let transactionId {
            let customer = CustomerKey(bundleIdentifier: app.bundleIdentifier, applicationUsername: applicationUsername)
            _ = try await pipeline.fetchMissingFacts(
                AppStoreLookup(transactionId: transactionId, owner: .customer(customer), field: "transactionId"),
                app: app,
                subscriptionGroupIdentifier: products.count == 1 ? products[0].subscriptionGroupIdentifier : nil
            )
        }
        let lookback = policy.lookback
        var entries: [OfferEligibilityEntry] = []
        for product in products {
            let now = Date()
            let base = try await pipeline.context(
                app: app,
                product: product,
                offerIdentifier: "",
                applicationUsername: applicationUsername,
                lookback: lookback,
                now: now
            )
            if exposes { try await pipeline.recordExposures(AllRules(product.offers.map(\.rule)), customer: base.facts.key, now: now) }
            for offer in product.offers {
                var context = base
                context.offerIdentifier = offer.offerIdentifier
                let decision = offer.rule.evaluate(context)
                entries.append(
                    OfferEligibilityEntry(
                        productIdentifier: product.productIdentifier,
                        offerIdentifier: offer.offerIdentifier,
                        eligible: decision.isEligible,
                        reasons: decision.reasons,
                        experiment: pipeline.experimentMembership(offer.rule, customer: base.facts.key, now: now)
                    )
                )
            }
        }
        return entries
    }
}
