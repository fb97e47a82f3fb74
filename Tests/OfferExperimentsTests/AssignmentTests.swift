import OfferExperiments
import Testing

@Suite struct AssignmentTests {
    private func assignment(_ weights: [Int], id: String = "winback-2026-12") throws -> ExperimentAssignment {
        try ExperimentAssignment(
            experimentIdentifier: id,
            variants: weights.enumerated().map { ExperimentVariant(name: "v\($0.offset)", weight: $0.element) }
        )
    }

    @Test("100,000 customers split within 1 % (absolute) of the weights", arguments: [[1, 1], [2, 3, 5], [1, 98, 1]])
    func distributionFollowsWeights(_ weights: [Int]) throws {
        let experiment = try assignment(weights)
        let customers = 100_000
        var counts = [Int](repeating: 0, count: weights.count)
        for index in 0..<customers {
            let bucket = experiment.bucket(for: "customer-\(index)")
            var remaining = bucket
            for (variant, weight) in weights.enumerated() {
                if remaining < weight {
                    counts[variant] += 1
                    break
                }
                remaining -= weight
            }
        }
        let total = Double(weights.reduce(0, +))
        for (count, weight) in zip(counts, weights) {
            #expect(abs(Double(count) / Double(customers) - Double(weight) / total) < 0.01)
        }
        // And not suspiciously: the split passes the sample-ratio check.
        #expect(!(try SampleRatioCheck(observed: counts, weights: weights)).isMismatch)
    }

    @Test func sameCustomerSameVariantForever() throws {
        let experiment = try assignment([1, 1, 1])
        let again = try assignment([1, 1, 1])
        for index in 0..<1_000 {
            let customer = "customer-\(index)"
            #expect(experiment.variant(for: customer) == again.variant(for: customer))
            #expect(experiment.bucket(for: customer) == experiment.bucket(for: customer))
        }
    }

    /// Pinned values: a change to the hash input or the bucket mapping would move every customer, so it must fail.
    @Test func bucketsArePinned() throws {
        let experiment = try assignment([50, 50])
        #expect(experiment.totalWeight == 100)
        #expect((0..<8).map { experiment.bucket(for: "customer-\($0)") } == pinnedBuckets)
    }

    @Test func experimentsAreIndependent() throws {
        let first = try assignment([1, 1], id: "first")
        let second = try assignment([1, 1], id: "second")
        var agreements = 0
        for index in 0..<10_000 where first.bucket(for: "c\(index)") == second.bucket(for: "c\(index)") { agreements += 1 }
        #expect(abs(agreements - 5_000) < 300)
    }

    @Test func invalidInputsAreRefused() {
        #expect(throws: ExperimentStatisticsError.self) { try assignment([]) }
        #expect(throws: ExperimentStatisticsError.self) { try assignment([1, 0]) }
        #expect(throws: ExperimentStatisticsError.self) { try assignment([1, -5]) }
        #expect(throws: ExperimentStatisticsError.self) { try assignment([Int.max, 1]) }
        #expect(throws: ExperimentStatisticsError.self) { try assignment([1], id: "") }
        #expect(throws: ExperimentStatisticsError.self) { try assignment([1], id: "a\u{0}b") }
        do {
            _ = try ExperimentAssignment(
                experimentIdentifier: "x",
                variants: [
                    ExperimentVariant(name: "a", weight: 1),
                    ExperimentVariant(name: "a", weight: 1),
                ]
            )
            Issue.record("duplicate names accepted")
        } catch {
            #expect(error.code == .duplicateVariant)
        }
    }

    @Test func hugeWeightsDoNotTrap() throws {
        let experiment = try assignment([Int.max - 1, 1])
        #expect(experiment.bucket(for: "anyone") < Int.max)
    }
}

/// Computed independently: `(int.from_bytes(hashlib.sha256(b"winback-2026-12\x00customer-%d" % i).digest()[:8], "big") * 100) >> 64`.
private let pinnedBuckets = [38, 7, 81, 39, 62, 92, 94, 1]
