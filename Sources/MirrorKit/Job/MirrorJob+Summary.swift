import Foundation

extension MirrorJob {
    /// What a run did; `--json` prints it.
    public struct Summary: Sendable, Hashable, Codable {
        /// Images saved by this run.
        public var saved = 0
        /// Images in the folder at the end.
        public var total = 0
        /// The count asked for.
        public var target = 0
        /// Downloads that gave no image.
        public var failed = 0
        /// Candidates whose URL or bytes the folder already had.
        public var duplicates = 0
        /// Valid images the filters turned away.
        public var filtered = 0
        /// Search pages fetched (from the network or the page cache).
        public var pages = 0
        /// API requests sent over the network.
        public var apiRequests = 0
        /// Bytes of the images saved.
        public var bytes: Int64 = 0
        /// Wall time.
        public var seconds: Double = 0
        /// Whether every source ran dry before the count.
        public var exhausted = false
        /// Whether the folder already held the count (nothing was fetched).
        public var upToDate = false
        /// Providers of the chain, in order.
        public var providers: [String] = []
        /// How each provider of the chain fared, in chain order.
        public var providerStatus: [ProviderReport] = []
        /// Download notifications sent for saved images (Unsplash's `download_location`).
        public var downloadNotifications = 0
        /// Download notifications that failed for good (logged; the images stay saved).
        public var downloadNotificationsFailed = 0
        /// Failures by reason.
        public var failures: [String: Int] = [:]
        /// Whether the run was cancelled.
        public var interrupted = false
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
