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
}
