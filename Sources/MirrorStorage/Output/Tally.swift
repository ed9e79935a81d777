import Foundation
import MirrorCore

/// What was counted: one type for the pipeline's run, a shard's stats, `mirror status`'s sum of them, and the jobs'
/// summaries.
///
/// Every row (or candidate) ends in exactly one of the counts, except ``bytes`` and ``cacheHits``, which describe the
/// saved ones, and ``failures``, which splits ``failed`` by reason.
public struct Tally: Sendable, Hashable {
    /// Images saved.
    public var saved = 0
    /// Candidates the output already held (by URL, or a complete shard's row).
    public var alreadySaved = 0
    /// Candidates whose URL came up earlier in the run, or whose bytes the output already held.
    public var duplicates = 0
    /// Valid images the filters turned away.
    public var filtered = 0
    /// Rows that gave no URL.
    public var invalid = 0
    /// Images whose `X-Robots-Tag` opted them out.
    public var optedOut = 0
    /// URLs their host's robots.txt disallows.
    public var disallowed = 0
    /// Candidates passed over because they failed for good on an earlier run.
    public var skipped = 0
    /// Downloads that gave no image.
    public var failed = 0
    /// ``failed`` by reason (`http-404`, `truncated`, `filesystem`, …).
    public var failures: [String: Int] = [:]
    /// Bytes of the images saved.
    public var bytes: Int64 = 0
    /// Saved images served from the cache.
    public var cacheHits = 0
    /// Of ``failed``, those that may succeed on a later run (timeouts, refused or reset connections, DNS, 5xx, 429,
    /// the disk); the rest failed for good (404 and 410, not an image, too big).
    public var transient = 0

    /// Whether any failure may succeed on a later run.
    public var hasTransientFailures: Bool { transient > 0 }
    /// Failures that will not succeed by trying again.
    public var permanent: Int { failed - transient }

    public init() {}

    /// Counts a row or candidate that ended without an image.
    public mutating func count(_ outcome: SettledOutcome) {
        switch outcome {
        case .invalid:
            invalid += 1
        case let .failed(reason, _, isTransient):
            failed += 1
            failures[reason, default: 0] += 1
            if isTransient { transient += 1 }
        case .filtered:
            filtered += 1
        case let .refused(reason, _):
            if reason == "disallowed" { disallowed += 1 } else { optedOut += 1 }
        case .duplicate:
            duplicates += 1
        }
    }

    /// Adds `other` (the shards of one dataset, the copies of one job).
    public static func += (tally: inout Tally, other: Tally) {
        tally.saved += other.saved
        tally.alreadySaved += other.alreadySaved
        tally.duplicates += other.duplicates
        tally.filtered += other.filtered
        tally.invalid += other.invalid
        tally.optedOut += other.optedOut
        tally.disallowed += other.disallowed
        tally.skipped += other.skipped
        tally.failed += other.failed
        tally.failures.merge(other.failures, uniquingKeysWith: +)
        tally.bytes += other.bytes
        tally.cacheHits += other.cacheHits
        tally.transient += other.transient
    }
}

extension Tally {
    /// The counts of a shard's stats file (`saved`, `failed`, `transient`, `failures`, `invalid`, `duplicates`,
    /// `filtered`, `opted_out`, `disallowed`, `bytes`), as ``statsFields`` writes them. Stats written before
    /// `transient` was counted read as if every failure were permanent.
    package init(stats object: [String: Any]) {
        self.init()
        func int(_ key: String) -> Int { (object[key] as? NSNumber)?.intValue ?? 0 }
        (saved, failed, invalid, duplicates) = (int("saved"), int("failed"), int("invalid"), int("duplicates"))
        transient = min(int("transient"), failed)
        (filtered, optedOut, disallowed) = (int("filtered"), int("opted_out"), int("disallowed"))
        bytes = (object["bytes"] as? NSNumber)?.int64Value ?? 0
        for (reason, count) in object["failures"] as? [String: Any] ?? [:] {
            failures[reason, default: 0] += (count as? NSNumber)?.intValue ?? 0
        }
    }

    /// The counts a shard's stats file and `mirror status --json` hold, by their keys there.
    package var statsFields: [String: Any] {
        [
            "saved": saved, "failed": failed, "transient": transient, "failures": failures, "invalid": invalid, "duplicates": duplicates,
            "filtered": filtered, "opted_out": optedOut, "disallowed": disallowed, "bytes": bytes,
        ]
    }
}
