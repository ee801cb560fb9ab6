/// A small, fast, seedable random number generator (SplitMix64), so that property tests and
/// fault schedules replay exactly for a given seed.
public struct SeededGenerator: RandomNumberGenerator, Sendable {
    private var state: UInt64

    /// A generator whose sequence depends only on `seed`, so a failing property test can be run
    /// again.
    public init(seed: UInt64) {
        // SplitMix64 steps its state by a constant, so starting from the seed itself would make
        // seed n + 1 replay seed n's sequence one draw later: consecutive seeds (a property test's
        // cases, the history checker's histories) would explore shifted copies of one sequence.
        // The seed is mixed first.
        var z = seed &+ 0x9E37_79B9_7F4A_7C15
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        state = z ^ (z >> 31)
    }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// `true` with probability `probability` (0 never draws, so a disabled fault costs no randomness).
    public mutating func chance(_ probability: Double) -> Bool {
        guard probability > 0 else { return false }
        return Double.random(in: 0..<1, using: &self) < probability
    }
}
