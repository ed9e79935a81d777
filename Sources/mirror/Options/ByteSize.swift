import ArgumentParser
import Foundation

/// A byte count written the way people write it: `500000`, `200KB`, `50MB`, `1GiB` (KB = 1,000; KiB = 1,024).
struct ByteSize: ExpressibleByArgument, Sendable, Hashable, CustomStringConvertible {
    let bytes: Int64

    init(bytes: Int64) {
        self.bytes = bytes
    }

    init?(argument: String) {
        let text = argument.trimmingCharacters(in: .whitespaces).lowercased()
        let digits = text.prefix { $0.isNumber || $0 == "." }
        guard !digits.isEmpty, let value = Double(digits), value >= 0 else { return nil }
        let unit = text.dropFirst(digits.count).trimmingCharacters(in: .whitespaces)
        let multipliers: [String: Double] = [
            "": 1, "b": 1,
            "k": 1_000, "kb": 1_000, "kib": 1_024,
            "m": 1_000_000, "mb": 1_000_000, "mib": 1_048_576,
            "g": 1_000_000_000, "gb": 1_000_000_000, "gib": 1_073_741_824,
        ]
        guard let multiplier = multipliers[unit] else { return nil }
        let total = value * multiplier
        guard total < Double(Int64.max) else { return nil }
        bytes = Int64(total)
    }

    var description: String { "\(bytes) bytes" }

    static var defaultCompletionKind: CompletionKind { .default }
}
