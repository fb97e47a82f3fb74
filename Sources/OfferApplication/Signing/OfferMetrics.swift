import Metrics
import OfferEligibility
import OfferModel
import Synchronization

/// Signatures and refusals by offer (docs/observability.md): `offer_signer_offer_signatures_total{product, offer,
/// channel}` and the `product` and `offer` labels of `offer_signer_eligibility_refusals_total`. An offer is named
/// only when the policy in force lists it, so the labels are bounded by the policy: an identifier a request sent
/// that the policy does not list (every offer, without a policy) counts as `unlisted`, and a retention request none
/// of whose entries holds as offer `none`.
enum OfferMetrics {
    /// The label of a product or an offer no policy lists.
    static let unlisted = "unlisted"

    /// The (product, offer) labels of an offer: as the request named them when `policy` lists the offer, else
    /// ``unlisted``.
    static func labels(
        _ policy: OfferPolicy?,
        bundleIdentifier: String,
        productIdentifier: String,
        offerIdentifier: String
    ) -> (product: String, offer: String) {
        guard let product = policy?.app(bundleIdentifier)?.product(productIdentifier) else { return (unlisted, unlisted) }
        if offerIdentifier.isEmpty { return (productIdentifier, "none") }
        return (productIdentifier, product.offer(offerIdentifier) != nil ? offerIdentifier : unlisted)
    }

    private struct Key: Hashable {
        var product: String
        var offer: String
        var channel: String
    }

    /// The counters made so far: a signature costs a lock and a lookup, not the metrics factory's registration.
    private static let signatures = Mutex<[Key: Counter]>([:])

    /// Counts an issued signature by its offer.
    static func countSignature(_ record: IssuedSignature, policy: OfferPolicy?) {
        let (product, offer) = labels(
            policy,
            bundleIdentifier: record.bundleIdentifier,
            productIdentifier: record.productIdentifier,
            offerIdentifier: record.offerIdentifier
        )
        let key = Key(product: product, offer: offer, channel: record.channel)
        let counter = signatures.withLock { counters in
            if let counter = counters[key] { return counter }
            let counter = Counter(
                label: "offer_signer_offer_signatures_total",
                dimensions: [
                    ("product", product), ("offer", offer), ("channel", String(record.channel.prefix(32))),
                ]
            )
            counters[key] = counter
            return counter
        }
        counter.increment()
    }
}
