import Prometheus

extension PrometheusMetricsFactory {
    /// A factory whose histograms fit what they measure: signing takes well under a millisecond (the default
    /// buckets start at 5 ms), a store write a few milliseconds, a commit batch 1 to the backend's maximum.
    public static func offerSigner(registry: PrometheusCollectorRegistry) -> PrometheusMetricsFactory {
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.durationHistogramBuckets["offer_signer_signing_duration_seconds"] = [
            .microseconds(100), .microseconds(250), .microseconds(500), .milliseconds(1), .milliseconds(2),
            .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100),
        ]
        factory.durationHistogramBuckets["offer_signer_store_write_duration_seconds"] = [
            .microseconds(500), .milliseconds(1), .milliseconds(2), .milliseconds(5), .milliseconds(10), .milliseconds(25),
            .milliseconds(50), .milliseconds(100), .milliseconds(250), .milliseconds(500), .seconds(1), .milliseconds(2500), .seconds(5),
        ]
        factory.valueHistogramBuckets["offer_signer_store_commit_batch_size"] = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1000]
        return factory
    }
}
