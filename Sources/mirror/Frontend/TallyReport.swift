import Foundation
import MirrorKit

/// The human summary of a ``Tally``, for every command that prints one: the one line of `mirror QUERY` and `mirror
/// urls`, and the table of `mirror status`. One way to write a number, one order for counts by reason or signal (the
/// largest first, equal ones by name), one phrase per count.
enum TallyReport {
    /// `12,345`: every count a summary prints.
    static func number(_ value: Int) -> String {
        value.formatted(.number.grouping(.automatic))
    }

    /// Counts by reason or signal, the largest first and equal ones by name: `http-404 12, timeout 3`.
    static func ranked(_ counts: [String: Int]) -> String {
        counts.sorted { ($1.value, $0.key) < ($0.value, $1.key) }.map { "\($0.key) \(number($0.value))" }.joined(separator: ", ")
    }

    /// The phrases of a run's one-line summary, in this order: saved, already there, duplicates, near-duplicates,
    /// failed (by reason), bad rows, filtered, opted out, disallowed (with the refusals by signal and the purpose they
    /// reserved against), generated. Saved, duplicates and failed are always said; the others when there are some.
    static func runPhrases(_ tally: Tally, purpose: UsePurpose?) -> [String] {
        var phrases = ["\(number(tally.saved)) saved"]
        if tally.alreadySaved > 0 { phrases.append("\(number(tally.alreadySaved)) already there") }
        phrases.append("\(number(tally.duplicates)) duplicates")
        if tally.nearDuplicates > 0 { phrases.append("\(number(tally.nearDuplicates)) near-duplicates") }
        phrases.append("\(number(tally.failed)) failed" + (tally.failures.isEmpty ? "" : " (\(ranked(tally.failures)))"))
        if tally.invalid > 0 { phrases.append("\(number(tally.invalid)) bad rows") }
        if tally.filtered > 0 { phrases.append("\(number(tally.filtered)) filtered") }
        if tally.optedOut > 0 { phrases.append("\(number(tally.optedOut)) opted out") }
        if tally.disallowed > 0 { phrases.append("\(number(tally.disallowed)) disallowed by robots.txt") }
        if !tally.refusals.isEmpty, let last = phrases.indices.last {
            phrases[last] += " (reserved" + (purpose.map { " against \($0.rawValue)" } ?? "") + ": \(ranked(tally.refusals)))"
        }
        if tally.generated > 0 { phrases.append("\(number(tally.generated)) of the saved declare they were generated") }
        return phrases
    }

    /// `mirror status`'s lines for the failures: by reason, then those that may work on another try and those that
    /// will not, with the command that retries them.
    static func failureLines(_ tally: Tally) -> [String] {
        var lines = ["  failed      " + number(tally.failed) + (tally.failures.isEmpty ? "" : "  (" + ranked(tally.failures) + ")")]
        if tally.transient > 0 {
            lines.append("    transient \(number(tally.transient)) may work now: run the same mirror urls command with --retry-failed")
        }
        if tally.permanent > 0 {
            lines.append("    permanent \(number(tally.permanent)) failed for good (4xx, not an image, too big); --retry-failed all tries them again")
        }
        return lines
    }

    /// `mirror status`'s lines for the rows that ended without an image and without failing: bad rows, duplicates,
    /// filtered, and the owners' reservations by signal; and how many saved images declare they were generated.
    static func otherLines(_ tally: Tally) -> [String] {
        var lines: [String] = []
        let counts = [
            ("bad rows", tally.invalid), ("duplicates", tally.duplicates), ("near-dupl.", tally.nearDuplicates), ("filtered", tally.filtered),
            ("opted out", tally.optedOut), ("disallowed", tally.disallowed),
        ]
        for (label, value) in counts where value > 0 {
            lines.append("  " + label.padding(toLength: 12, withPad: " ", startingAt: 0) + number(value))
        }
        if !tally.refusals.isEmpty { lines.append("  reserved by " + ranked(tally.refusals)) }
        if tally.generated > 0 { lines.append("  generated   \(number(tally.generated)) of the saved declare a machine made them") }
        return lines
    }
}
