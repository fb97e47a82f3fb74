/// xoshiro256** (Blackman and Vigna), seeded through SplitMix64: a deterministic generator, so every simulation
/// in this suite gives the same numbers on every run and machine.
struct Xoshiro256StarStar: RandomNumberGenerator {
    private var state: (UInt64, UInt64, UInt64, UInt64)

    init(seed: UInt64) {
        var splitMix = seed
        func next() -> UInt64 {
            splitMix &+= 0x9E37_79B9_7F4A_7C15
            var z = splitMix
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        state = (next(), next(), next(), next())
    }

    mutating func next() -> UInt64 {
        let result = rotate(state.1 &* 5, 7) &* 9
        let shifted = state.1 << 17
        state.2 ^= state.0
        state.3 ^= state.1
        state.1 ^= state.2
        state.0 ^= state.3
        state.2 ^= shifted
        state.3 = rotate(state.3, 45)
        return result
    }

    /// A uniform value in [0, 1) from the top 53 bits.
    mutating func nextUniform() -> Double {
        Double(next() >> 11) * 0x1.0p-53
    }

    /// A Binomial(trials, probability) draw by inversion of its distribution function (exact; the work grows with
    /// the mean, which stays small for the 100-customer batches of the simulations).
    mutating func nextBinomial(trials: Int, probability: Double) -> Int {
        guard trials > 0, probability > 0 else { return 0 }
        guard probability < 1 else { return trials }
        let odds = probability / (1 - probability)
        var pmf = pow1p(-probability, trials)
        var cumulative = pmf
        let target = nextUniform()
        var successes = 0
        while target >= cumulative && successes < trials {
            pmf *= odds * Double(trials - successes) / Double(successes + 1)
            successes += 1
            cumulative += pmf
        }
        return successes
    }

    private func rotate(_ value: UInt64, _ count: UInt64) -> UInt64 {
        (value << count) | (value >> (64 - count))
    }

    /// (1 + x)ⁿ by repeated squaring (no libm needed here).
    private func pow1p(_ x: Double, _ exponent: Int) -> Double {
        var base = 1 + x
        var power = exponent
        var result = 1.0
        while power > 0 {
            if power & 1 == 1 { result *= base }
            base *= base
            power >>= 1
        }
        return result
    }
}
