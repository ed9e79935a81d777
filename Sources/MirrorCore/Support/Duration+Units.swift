import Foundation

extension Duration {
    /// The duration in seconds, as a `Double` (and as Foundation's `TimeInterval`).
    public var seconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }

    /// The duration in whole nanoseconds (negative durations stay negative).
    package var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds &* 1_000_000_000 &+ attoseconds / 1_000_000_000
    }

    /// `"12s"`, or `"1.5s"` when there is a fraction: for messages.
    package var formattedSeconds: String {
        components.attoseconds == 0 ? "\(components.seconds)s" : String(format: "%.1fs", seconds)
    }
}
