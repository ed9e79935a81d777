import Foundation

/// How a row (a table's, or a search's candidate) ended: the one vocabulary of shard records, stats, ``Tally``, the
/// folder's state and `mirror status`. Raw values are what the files say.
public enum RowStatus: String, Codable, Sendable, CaseIterable {
    /// An image was saved (`success` in a shard's records).
    case saved = "success"
    /// The download gave no image (its reason says why: `http-404`, `truncated`, …).
    case failed
    /// The row gave no URL.
    case invalid
    /// The URL came up earlier in the run, or the same bytes are already saved.
    case duplicate
    /// The same picture to the eye is already saved: resized, re-encoded, trimmed (`--dedup near`).
    case nearDuplicate = "near_duplicate"
    /// A valid image that a filter turned away.
    case filtered
    /// The image's `X-Robots-Tag` opts it out.
    case optedOut = "opted_out"
    /// Its host's robots.txt disallows it.
    case disallowed

    /// The statuses a folder's state database keeps as a row's failure reason, beside the failures' own reasons.
    package static let recordedAsReasons: [RowStatus] = [.filtered, .optedOut, .disallowed, .nearDuplicate]

    /// The status a folder's recorded reason stands for: one of ``recordedAsReasons``, or else a failure.
    package init(recordedReason reason: String) {
        self = RowStatus(rawValue: reason).flatMap { Self.recordedAsReasons.contains($0) ? $0 : nil } ?? .failed
    }
}
