import Foundation
import MirrorCore
import MirrorFetch
import MirrorSearch
import MirrorStorage

extension URLListJob {
    /// What a run did.
    public struct Summary: Sendable, Hashable, Codable {
        /// Rows of the table that gave a URL.
        public var total = 0
        /// Images saved by this run.
        public var saved = 0
        /// URLs the folder already had.
        public var skipped = 0
        /// Downloads whose bytes the folder already had.
        public var duplicates = 0
        /// URLs that did not give an image.
        public var failed = 0
        /// Failures by reason (`http-404`, `not-image-html`, `truncated`, …).
        public var failures: [String: Int] = [:]
        /// Rows that gave no URL (none, not http(s), a line that does not parse).
        public var invalidRows = 0
        /// Valid images the filters turned away.
        public var filtered = 0
        /// Images whose response's `X-Robots-Tag` opted them out.
        public var optedOut = 0
        /// URLs their host's robots.txt disallows.
        public var disallowed = 0
        /// Bytes of the images saved.
        public var bytes: Int64 = 0
        /// Images served from the cache.
        public var cacheHits = 0
        /// Wall time.
        public var seconds: Double = 0
        /// Whether any failure may succeed on a later run (network, server errors).
        public var hasTransientFailures = false
        /// WebDataset shards complete in the folder (this run's and earlier ones'), or `nil` for a folder.
        public var shards: Int?
        /// WebDataset shards this run wrote, or `nil` for a folder.
        public var shardsWritten: Int?
        /// Rows of the table read, when this run is one copy of a sharded job (it reads them all and takes its share).
        public var tableRows: Int?
    }

    /// Progress of a run.
    public enum Event: Sendable {
        case saved(ManifestRecord, source: CacheType)
        case skipped(URL)
        case duplicate(URL, of: String)
        case failed(URL, DownloadError)
        case retrying(URL, attempt: Int, delay: Duration, reason: String)
        /// A row that gave no URL: where it is (`row 14`) and why.
        case invalid(place: String, reason: String)
        /// The image's response (`opted_out`) or its host's robots.txt (`disallowed`) says not to take it.
        case refused(URL, reason: String, message: String)
    }
}

extension URLListJob.Summary {
    /// The counts of a pipeline run; where the shards stand and the wall time are the job's to add.
    init(tally: Pipeline.Tally) {
        self.init()
        total = tally.saved + tally.alreadySaved + tally.duplicates + tally.failed + tally.filtered + tally.skipped
            + tally.optedOut + tally.disallowed
        invalidRows = tally.invalid
        saved = tally.saved
        skipped = tally.alreadySaved
        (duplicates, failed, failures) = (tally.duplicates, tally.failed, tally.failures)
        (filtered, optedOut, disallowed) = (tally.filtered, tally.optedOut, tally.disallowed)
        (bytes, cacheHits, hasTransientFailures) = (tally.bytes, tally.cacheHits, tally.hasTransientFailures)
    }
}
