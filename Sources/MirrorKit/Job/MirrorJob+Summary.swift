import Foundation
import MirrorCore
import MirrorFetch
import MirrorSearch
import MirrorStorage

extension MirrorJob {
    /// What a run did; `--json` prints it.
    public struct Summary: Sendable, Hashable, Codable {
        // MARK: The count

        /// Images saved by this run, images in the folder at the end, and the count asked for.
        public var saved = 0, total = 0, target = 0
        /// Whether every source ran dry before the count; whether the folder already held it (nothing fetched);
        /// whether the run was cancelled.
        public var exhausted = false, upToDate = false, interrupted = false

        // MARK: What did not count

        /// Downloads that gave no image; candidates whose URL or bytes the folder already had; valid images the
        /// filters turned away.
        public var failed = 0, duplicates = 0, filtered = 0
        /// Failures by reason (`http-404`, `truncated`, …).
        public var failures: [String: Int] = [:]
        /// For a `--queries` run: the query (its label), and images saved that another query's folder holds too.
        public var label: String?
        public var crossLabelDuplicates = 0

        // MARK: The search

        /// Providers of the chain, in order, and how each fared.
        public var providers: [String] = []
        public var providerStatus: [ProviderReport] = []
        /// Search pages fetched (from the network or the page cache); API requests sent over the network (pages,
        /// tokens, download notifications).
        public var pages = 0, apiRequests = 0
        /// Download notifications sent for saved images (Unsplash's `download_location`), and those that failed for
        /// good (logged; the images stay saved).
        public var downloadNotifications = 0, downloadNotificationsFailed = 0

        // MARK: Cost

        /// Bytes of the images saved, and the run's wall time in seconds.
        public var bytes: Int64 = 0
        public var seconds: Double = 0
    }

    /// Progress of a run.
    public enum Event: Sendable {
        case saved(ManifestRecord, source: CacheType)
        case failed(URL, DownloadError)
        case duplicate(URL)
        case filtered(URL, String)
        case retrying(URL, attempt: Int, delay: Duration, reason: String)
        /// Something worth a line in the log that changes nothing about the count (a failed download notification).
        case notice(String)
    }
}
