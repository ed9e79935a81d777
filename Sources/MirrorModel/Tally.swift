import Foundation

/// What was counted: one type for the pipeline's run, a shard's stats, `mirror status`'s sum of them, and the jobs'
/// summaries; written and read as JSON in one schema (`Tally+JSON.swift`).
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
    /// Images that looked like one already saved (`--dedup near`): counted apart from ``duplicates``.
    public var nearDuplicates = 0
    /// Valid images the filters turned away.
    public var filtered = 0
    /// Rows that gave no URL.
    public var invalid = 0
    /// Images their owner reserved against the run's purpose (a site file, a response header, the image's marks).
    public var optedOut = 0
    /// URLs their host's robots.txt disallows.
    public var disallowed = 0
    /// ``optedOut`` and ``disallowed`` by the signal that refused them (`robots`, `content-signal`, `tdmrep-file`, …).
    public var refusals: [String: Int] = [:]
    /// Of ``saved``, the images that declare a machine made them (``ImageDeclarations/isGenerated``).
    public var generated = 0
    /// Candidates passed over because they failed for good on an earlier run (``RowOutcome/failedEarlier``).
    public var failedEarlier = 0
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

    /// Counts a row or candidate that ended in `outcome`: a saved image with its bytes, whether it came from a cache and
    /// whether it declares it was generated; a failure by its reason and whether it may pass later; a refusal by its
    /// signal.
    public mutating func count(_ outcome: RowOutcome) {
        switch outcome {
        case let .saved(record, source):
            saved += 1
            bytes += record.bytes
            if source.isCached { cacheHits += 1 }
            if record.generated { generated += 1 }
        case .alreadySaved:
            alreadySaved += 1
        case .failedEarlier:
            failedEarlier += 1
        case .invalid:
            invalid += 1
        case let .failed(reason, _, isTransient):
            failed += 1
            failures[reason, default: 0] += 1
            if isTransient { transient += 1 }
        case .filtered:
            filtered += 1
        case let .optedOut(reservation):
            optedOut += 1
            refusals[reservation.signal.rawValue, default: 0] += 1
        case let .disallowed(reservation):
            disallowed += 1
            refusals[reservation.signal.rawValue, default: 0] += 1
        case .duplicate:
            duplicates += 1
        case .nearDuplicate:
            nearDuplicates += 1
        }
    }

    /// Adds `other` (the shards of one dataset, the copies of one job).
    public static func += (tally: inout Tally, other: Tally) {
        tally.saved += other.saved
        tally.alreadySaved += other.alreadySaved
        tally.duplicates += other.duplicates
        tally.nearDuplicates += other.nearDuplicates
        tally.filtered += other.filtered
        tally.invalid += other.invalid
        tally.optedOut += other.optedOut
        tally.disallowed += other.disallowed
        tally.refusals.merge(other.refusals, uniquingKeysWith: +)
        tally.generated += other.generated
        tally.failedEarlier += other.failedEarlier
        tally.failed += other.failed
        tally.failures.merge(other.failures, uniquingKeysWith: +)
        tally.bytes += other.bytes
        tally.cacheHits += other.cacheHits
        tally.transient += other.transient
    }
}
