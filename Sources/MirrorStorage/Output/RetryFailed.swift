import MirrorModel
/// Which rows that failed on an earlier run a run downloads again (`--retry-failed`, `--retry-failed all`).
///
/// Without it a rerun downloads nothing an earlier run settled: a complete shard is left as it is, a URL that failed
/// is passed over, and the run reports (and exits 3 for) the rows still without an image.
public enum RetryFailed: String, Sendable, CaseIterable {
    /// Failures that may pass on another try: timeouts, refused or reset connections, DNS failures, 5xx, 429.
    case transient
    /// Every row without an image, failed for good too (404 and 410, not an image, too big, filtered, opted out,
    /// disallowed), except duplicates of an image already saved.
    case all

    /// Whether a complete shard whose stats count `tally` over `rows` rows has rows this scope retries: the one test
    /// of whether its records are worth reading, locally and in object storage.
    package func hasRows(in tally: Tally, rows: Int) -> Bool {
        switch self {
        case .transient: tally.transient > 0
        case .all: tally.saved + tally.duplicates + tally.nearDuplicates < rows
        }
    }

    /// Whether a run downloads again a row that ended in `outcome`: a failure that may pass (`transient`), or every row
    /// without a sample but a duplicate (`all`).
    package func retries(_ outcome: RowOutcome) -> Bool {
        switch (self, outcome) {
        case let (.transient, .failed(_, _, isTransient)): isTransient
        case (.transient, _): false
        case (.all, .saved), (.all, .alreadySaved), (.all, .duplicate), (.all, .nearDuplicate): false
        case (.all, _): true
        }
    }
}
