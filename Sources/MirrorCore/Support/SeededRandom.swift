/// A small, seedable random number generator (SplitMix64) for backoff jitter.
///
/// Jitter only spreads retries out; it needs no cryptographic quality, but tests need it reproducible, and a value
/// type keeps ``SearchPaginator`` a plain `Sendable` value.
package struct SeededRandom: RandomNumberGenerator, Sendable, Hashable {
    private var state: UInt64

    /// Seeds with `seed`, or from the system generator when `nil`.
    package init(seed: UInt64?) {
        var system = SystemRandomNumberGenerator()
        state = seed ?? system.next()
    }

    package mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
