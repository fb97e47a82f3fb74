import Foundation
import OfferExperiments
import Testing

/// The revenue comparison's proofs by simulation, seeded (docs/experiments.md "Realized revenue"): customers arrive
/// every day, some subscribe a few days after exposure at the arm's first price and renew at full price every 30
/// days, each transaction reaching the store up to 3 days after it happens; the report is read every day over the
/// mature customers, each customer's revenue within the window after their exposure.
@Suite struct RevenueSimulationTests {
    /// One arm: customers per day, the chance of subscribing, the first period's price, the chance of each renewal.
    struct Arm {
        var perDay: Int
        var subscribes: Double
        var firstPrice: Double
        var renews: Double
        var renewalPrice: Double = 9_990
    }

    /// Whether any daily reading declared each comparison better or worse.
    struct Reading {
        var better: [Bool]
        var worse: [Bool]
    }

    /// One experiment: customers exposed on days 0 ..< `days`, read every day until every window has passed.
    static func run(_ arms: [Arm], days: Int, window: MetricWindow, set: ComparisonSet, random: inout Xoshiro256StarStar) throws -> Reading {
        let lastLook = days + window.days + 4
        // Per arm: every transaction as (customer, amount), by the day it reaches the store, if inside its window.
        var arriving = [[[(customer: Int, amount: Double)]]](repeating: Array(repeating: [], count: lastLook + 1), count: arms.count)
        for (index, arm) in arms.enumerated() {
            for customer in 0..<(arm.perDay * days) {
                let exposed = customer / arm.perDay
                guard random.nextUniform() < arm.subscribes else { continue }
                var happens = exposed + Int.random(in: 0...5, using: &random)
                var price = arm.firstPrice
                while happens < exposed + window.days {
                    let reaches = happens + Int.random(in: 0...3, using: &random)
                    if reaches <= lastLook { arriving[index][reaches].append((customer, price)) }
                    guard random.nextUniform() < arm.renews else { break }
                    (happens, price) = (happens + 30, arm.renewalPrice)
                }
            }
        }
        var reading = Reading(better: Array(repeating: false, count: set.pairs.count), worse: Array(repeating: false, count: set.pairs.count))
        var revenue = arms.map { [Double](repeating: 0, count: $0.perDay * days) }
        var (sums, squares, largest) = (
            [Double](repeating: 0, count: arms.count), [Double](repeating: 0, count: arms.count),
            [Double](repeating: 0, count: arms.count)
        )
        var matureDays = 0
        for look in 0...lastLook {
            // Customers whose window has passed (exposed at least the window ago) join with what is known of them;
            // what reaches the store later of a mature customer adds to the sums then.
            let nowMature = min(days, max(0, look - window.days + 1))
            for index in arms.indices {
                for transaction in arriving[index][look] {
                    let before = revenue[index][transaction.customer]
                    revenue[index][transaction.customer] += transaction.amount
                    if transaction.customer / arms[index].perDay < matureDays {
                        let after = before + transaction.amount
                        (sums[index], squares[index]) = (sums[index] + transaction.amount, squares[index] + after * after - before * before)
                        largest[index] = max(largest[index], after)
                    }
                }
                for customer in (matureDays * arms[index].perDay)..<(nowMature * arms[index].perDay) {
                    let value = revenue[index][customer]
                    (sums[index], squares[index], largest[index]) = (sums[index] + value, squares[index] + value * value, max(largest[index], value))
                }
            }
            matureDays = nowMature
            guard matureDays > 0 else { continue }
            let samples = try arms.indices.map { index throws(ExperimentStatisticsError) in
                try RevenueSample(customers: matureDays * arms[index].perDay, sum: sums[index], sumOfSquares: squares[index], largest: largest[index])
            }
            for (position, difference) in set.meanDifferences(samples).enumerated() {
                switch ComparisonSet.verdict(difference.interval) {
                case .better: reading.better[position] = true
                case .worse: reading.worse[position] = true
                case .noDifferenceYet: break
                }
            }
        }
        return reading
    }

    @Test("A/A on revenue read every day over late renewals declares a difference at most α of the time (2 arms, and 3 in pairs)")
    func aaWithDailyPeekingStaysWithinAlpha() throws {
        let window = try MetricWindow(days: 60)
        let arm = Arm(perDay: 20, subscribes: 0.25, firstPrice: 4_990, renews: 0.6)
        var random = Xoshiro256StarStar(seed: 0x42_5E)
        for (arms, pairs) in [(2, false), (3, true)] {
            let set = try ComparisonSet(variantCount: arms, reference: 0, allPairs: pairs, alpha: 0.05, planningSampleSize: 1_200)
            var declared = 0
            let experiments = 300
            for _ in 0..<experiments {
                let reading = try Self.run(Array(repeating: arm, count: arms), days: 60, window: window, set: set, random: &random)
                if (reading.better + reading.worse).contains(true) { declared += 1 }
            }
            print("Revenue A/A with \(arms) arms, \(set.pairs.count) comparisons, read daily: \(declared) of \(experiments) declared a difference")
            #expect(Double(declared) / Double(experiments) <= 0.05)
        }
    }

    @Test("A/A on revenue with few payers (5 % subscribe, a 1-in-50 customer paying 10x) stays within α read every day")
    func aaWithFewLargePayersStaysWithinAlpha() throws {
        let window = try MetricWindow(days: 30)
        // A yearly plan at ten times the monthly price: rare, large values in the sums.
        let arm = Arm(perDay: 20, subscribes: 0.05, firstPrice: 99_990, renews: 0)
        var random = Xoshiro256StarStar(seed: 0x42_5F)
        let set = try ComparisonSet(variantCount: 2, reference: 0, allPairs: false, alpha: 0.05, planningSampleSize: 1_200)
        var declared = 0
        let experiments = 300
        for _ in 0..<experiments {
            let reading = try Self.run([arm, arm], days: 60, window: window, set: set, random: &random)
            if (reading.better + reading.worse).contains(true) { declared += 1 }
        }
        print("Revenue A/A, 5 % paying 99.99 once, read daily: \(declared) of \(experiments) declared a difference")
        #expect(Double(declared) / Double(experiments) <= 0.05)
    }

    @Test("half-off that brings more subscribers finds its true revenue lift over a full-price holdout, never worse")
    func trueRevenueLiftIsFound() throws {
        let window = try MetricWindow(days: 60)
        // Holdout: 20 % subscribe at 9.99. Offer: 40 % at 4.99. Both renew at 9.99 with 60 %. Mean revenue per
        // customer over 60 days: 0.20 · 9.99 · 1.6 = 3.20 against 0.40 · (4.99 + 0.6 · 9.99) = 4.39.
        let arms = [
            Arm(perDay: 40, subscribes: 0.20, firstPrice: 9_990, renews: 0.6),
            Arm(perDay: 40, subscribes: 0.40, firstPrice: 4_990, renews: 0.6),
        ]
        let set = try ComparisonSet(variantCount: 2, reference: 0, allPairs: false, alpha: 0.05, planningSampleSize: 2_400)
        var random = Xoshiro256StarStar(seed: 0x42_51)
        var (found, worse) = (0, 0)
        let experiments = 100
        for _ in 0..<experiments {
            let reading = try Self.run(arms, days: 60, window: window, set: set, random: &random)
            if reading.better[0] { found += 1 }
            if reading.worse[0] { worse += 1 }
        }
        print("Revenue 3.20 vs 4.39 per customer, 2,400 customers each, read daily: found in \(found) of \(experiments), worse in \(worse)")
        #expect(worse == 0)
        #expect(found >= 80)
    }

    @Test("revenue of 0 or 1 per customer gives exactly the rates' interval")
    func zeroOneRevenueIsTheRateInterval() throws {
        let design = try SequentialTestDesign(planningSampleSize: 800, alpha: 0.025)
        for (treatment, control) in [((130, 700), (96, 690)), ((3, 300), (0, 40)), ((0, 50), (0, 60))] {
            let rate = AlwaysValidInterval.difference(
                try ConversionCount(successes: treatment.0, trials: treatment.1),
                minus: try ConversionCount(successes: control.0, trials: control.1),
                design: design
            )
            let mean = AlwaysValidInterval.meanDifference(
                try RevenueSample(customers: treatment.1, sum: Double(treatment.0), sumOfSquares: Double(treatment.0), largest: 1),
                minus: try RevenueSample(customers: control.1, sum: Double(control.0), sumOfSquares: Double(control.0), largest: 1),
                design: design
            )
            #expect(abs(mean.estimate - rate.estimate) < 1e-15)
            #expect(abs(mean.lower - rate.lower) < 1e-12 || rate.lower == -1)
            #expect(abs(mean.upper - rate.upper) < 1e-12 || rate.upper == 1)
        }
        // Scaling every revenue by a price scales the interval by it.
        let small = AlwaysValidInterval.meanDifference(
            try RevenueSample(customers: 100, sum: 30, sumOfSquares: 50, largest: 4),
            minus: try RevenueSample(customers: 90, sum: 20, sumOfSquares: 30, largest: 3),
            design: design
        )
        let scaled = AlwaysValidInterval.meanDifference(
            try RevenueSample(customers: 100, sum: 30 * 4_990, sumOfSquares: 50 * 4_990 * 4_990, largest: 4 * 4_990),
            minus: try RevenueSample(customers: 90, sum: 20 * 4_990, sumOfSquares: 30 * 4_990 * 4_990, largest: 3 * 4_990),
            design: design
        )
        #expect(abs(scaled.lower - small.lower * 4_990) < 1e-9 * 4_990 && abs(scaled.upper - small.upper * 4_990) < 1e-9 * 4_990)
    }

    @Test(
        "impossible revenue sums are refused",
        arguments: [
            (-1, 0.0, 0.0, 0.0), (2, 10.0, 10.0, 4.0), (2, 3.0, 50.0, 2.0), (0, 1.0, 1.0, 1.0),
            (1, Double.nan, 0.0, 0.0), (1, 1.0, 1.0, Double.infinity),
        ]
    )
    func impossibleSumsAreRefused(_ figures: (Int, Double, Double, Double)) {
        #expect(throws: ExperimentStatisticsError.self) {
            try RevenueSample(customers: figures.0, sum: figures.1, sumOfSquares: figures.2, largest: figures.3)
        }
    }
}
