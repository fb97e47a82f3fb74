import OfferExperiments
import Testing

/// The proofs by simulation, with a seeded generator: experiments run 100 customers at a time (each customer
/// assigned 50/50, each converting with its variant's rate — drawn as binomial counts per batch), and the report is
/// looked at after every batch.
@Suite struct SimulationTests {
    /// The plan the experiments are designed with: 20 % baseline, a five-point lift, α = 0.05, power 0.8.
    private let plan: SampleSizePlan

    init() throws {
        plan = try SampleSizePlan(baselineRate: 0.20, absoluteLift: 0.05)
    }

    private struct Outcome {
        var declaredDifference = false
        var declaredLift = false
        var rateMissedTruth = false
        /// Customers (both variants) when the lift was first declared.
        var liftFoundAfter: Int?
    }

    /// One experiment looked at after every 100 customers until `customers` (the last batch may be smaller).
    private func run(
        control: Double,
        treatment: Double,
        customers: Int,
        treatmentShare: Double = 0.5,
        design: SequentialTestDesign? = nil,
        random: inout Xoshiro256StarStar
    ) throws -> Outcome {
        let design = design ?? plan.design
        var outcome = Outcome()
        var (controlTrials, controlSuccesses, treatmentTrials, treatmentSuccesses) = (0, 0, 0, 0)
        for batchStart in stride(from: 0, to: customers, by: 100) {
            let batch = min(100, customers - batchStart)
            let toTreatment = random.nextBinomial(trials: batch, probability: treatmentShare)
            treatmentTrials += toTreatment
            controlTrials += batch - toTreatment
            treatmentSuccesses += random.nextBinomial(trials: toTreatment, probability: treatment)
            controlSuccesses += random.nextBinomial(trials: batch - toTreatment, probability: control)
            let controlCount = try ConversionCount(successes: controlSuccesses, trials: controlTrials)
            let treatmentCount = try ConversionCount(successes: treatmentSuccesses, trials: treatmentTrials)
            let difference = AlwaysValidInterval.difference(treatmentCount, minus: controlCount, design: design)
            if difference.excludesZero { outcome.declaredDifference = true }
            if treatment >= control ? difference.lower > 0 : difference.upper < 0, !outcome.declaredLift {
                outcome.declaredLift = true
                outcome.liftFoundAfter = batchStart + batch
            }
            let rate = AlwaysValidInterval.rate(controlCount, design: design)
            if rate.lower > control || rate.upper < control { outcome.rateMissedTruth = true }
        }
        return outcome
    }

    @Test("1,000 A/A experiments looked at every 100 customers declare a difference at most 5 % of the time")
    func aaExperimentsRarelyDeclareADifference() throws {
        var random = Xoshiro256StarStar(seed: 0xA_A)
        var declared = 0
        var missed = 0
        for _ in 0..<1_000 {
            // 10,000 customers: 100 looks, more than twice the planned 4,352.
            let outcome = try run(control: 0.20, treatment: 0.20, customers: 10_000, random: &random)
            if outcome.declaredDifference { declared += 1 }
            if outcome.rateMissedTruth { missed += 1 }
        }
        print("A/A: \(declared) of 1,000 declared a difference; the control's rate interval missed 20 % in \(missed)")
        #expect(Double(declared) / 1_000 <= 0.05)
        #expect(Double(missed) / 1_000 <= 0.05)
    }

    /// Harder cases for the normal approximation: few events, a small variant, intervals tuned to be narrowest early.
    @Test(
        "A/A experiments at low rates or with a 90/10 split keep the 5 % too",
        arguments: [
            (0.05, 0.5, 500), (0.02, 0.5, 500), (0.02, 0.5, 2_000), (0.20, 0.1, 500), (0.05, 0.1, 2_000),
        ]
    )
    func aaExperimentsElsewhere(_ rate: Double, _ treatmentShare: Double, _ planningSampleSize: Int) throws {
        let design = try SequentialTestDesign(planningSampleSize: planningSampleSize)
        var random = Xoshiro256StarStar(seed: 0xA_A2)
        var declared = 0
        for _ in 0..<1_000 {
            let outcome = try run(
                control: rate,
                treatment: rate,
                customers: 10_000,
                treatmentShare: treatmentShare,
                design: design,
                random: &random
            )
            if outcome.declaredDifference { declared += 1 }
        }
        print("A/A at \(rate), treatment share \(treatmentShare), planned \(planningSampleSize): \(declared) of 1,000 declared a difference")
        #expect(Double(declared) / 1_000 <= 0.05)
    }

    @Test(
        "a rate's interval, looked at every batch of 100 looks, misses the true rate at most 5 % of the time",
        arguments: [
            (0.01, 1_000, 10), (0.02, 500, 50), (0.05, 500, 50), (0.50, 200, 10),
        ]
    )
    func rateIntervalKeepsItsLevel(_ rate: Double, _ planningSampleSize: Int, _ batch: Int) throws {
        let design = try SequentialTestDesign(planningSampleSize: planningSampleSize)
        var random = Xoshiro256StarStar(seed: 0xC0FE)
        var missed = 0
        for _ in 0..<1_000 {
            var (trials, successes) = (0, 0)
            var miss = false
            for _ in 0..<100 {
                trials += batch
                successes += random.nextBinomial(trials: batch, probability: rate)
                let interval = AlwaysValidInterval.rate(try ConversionCount(successes: successes, trials: trials), design: design)
                if interval.lower > rate || interval.upper < rate { miss = true }
            }
            if miss { missed += 1 }
        }
        print("Rate \(rate), batches of \(batch), planned \(planningSampleSize): the interval missed in \(missed) of 1,000")
        #expect(Double(missed) / 1_000 <= 0.05)
    }

    @Test("a true lift from 20 % to 25 % is found at least 80 % of the time at the planned sample size")
    func trueLiftIsFound() throws {
        #expect(plan.sequentialPerVariant == 2_176)
        let (found, wrongWay) = try power(plan: plan, seed: 0x5_EED)
        print("Lift 20 % → 25 %: found in \(found) of 1,000 experiments of 4,352 customers; wrong sign in \(wrongWay)")
        #expect(Double(found) / 1_000 >= 0.80)
        #expect(wrongWay == 0)
    }

    @Test("other planned lifts are found at least 80 % of the time", arguments: [(0.10, 0.02), (0.50, 0.10), (0.20, -0.05)])
    func otherPlannedLiftsAreFound(_ baseline: Double, _ lift: Double) throws {
        let other = try SampleSizePlan(baselineRate: baseline, absoluteLift: lift)
        let (found, wrongWay) = try power(plan: other, seed: 0x5_EED2)
        let (from, to) = (Int((baseline * 100).rounded()), Int(((baseline + lift) * 100).rounded()))
        print("Lift \(from) % → \(to) % (\(other.sequentialPerVariant) per variant): found in \(found) of 1,000; wrong sign in \(wrongWay)")
        #expect(Double(found) / 1_000 >= 0.80)
        #expect(wrongWay == 0)
    }

    /// 1,000 experiments of exactly the plan's customers (both variants), with the plan's lift.
    /// Also prints the median number of customers at which the found lifts were found.
    private func power(plan: SampleSizePlan, seed: UInt64) throws -> (found: Int, wrongWay: Int) {
        var random = Xoshiro256StarStar(seed: seed)
        var foundAfter: [Int] = []
        var wrongWay = 0
        for _ in 0..<1_000 {
            let outcome = try run(
                control: plan.baselineRate,
                treatment: plan.baselineRate + plan.absoluteLift,
                customers: 2 * plan.sequentialPerVariant,
                design: plan.design,
                random: &random
            )
            if let after = outcome.liftFoundAfter { foundAfter.append(after) } else if outcome.declaredDifference { wrongWay += 1 }
        }
        let median = foundAfter.sorted()[foundAfter.count / 2]
        print("Plan of \(2 * plan.sequentialPerVariant) customers: the found lifts were found after a median of \(median)")
        return (foundAfter.count, wrongWay)
    }

    @Test("a fixed-horizon z-test looked at every 100 customers would not keep its 5 %: the reason for the method")
    func naivePeekingInflatesFalsePositives() throws {
        var random = Xoshiro256StarStar(seed: 0xBAD)
        var declared = 0
        for _ in 0..<200 {
            var counts = (0, 0, 0, 0)
            var sawDifference = false
            for _ in 0..<100 {
                let toB = random.nextBinomial(trials: 100, probability: 0.5)
                counts.0 += 100 - toB
                counts.2 += toB
                counts.1 += random.nextBinomial(trials: 100 - toB, probability: 0.2)
                counts.3 += random.nextBinomial(trials: toB, probability: 0.2)
                let (pa, pb) = (Double(counts.1) / Double(counts.0), Double(counts.3) / Double(counts.2))
                let standardError = (pa * (1 - pa) / Double(counts.0) + pb * (1 - pb) / Double(counts.2)).squareRoot()
                if standardError > 0, abs(pb - pa) / standardError > 1.959_964 { sawDifference = true }
            }
            if sawDifference { declared += 1 }
        }
        print("Naive peeking: \(declared) of 200 A/A experiments declared a difference")
        #expect(declared > 20)  // well above 5 % (10 of 200)
    }
}
