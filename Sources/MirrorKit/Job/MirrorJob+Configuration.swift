import Foundation
import MirrorConsent
import MirrorCore
import MirrorFetch
import MirrorModel
import MirrorSearch
import MirrorStorage

extension MirrorJob {
    /// Settings of a run.
    public struct Configuration: Sendable {
        /// The search text.
        public var query: String
        /// How many images the folder should hold.
        public var count: Int
        /// The output folder.
        public var directory: URL
        /// Providers in chain order, by registry name. Default `openverse, wikimedia`.
        public var providers: [String] = ProviderRegistry.defaultNames
        /// Overrides the endpoint of the (single) provider.
        public var endpoint: URL?
        /// Pages fetched per provider at most, or nil for no limit (`--pages`).
        public var pageLimit: Int?
        /// Which images are wanted (dimensions, formats).
        public var filter: ImageFilter?
        /// Licence codes wanted (passed to providers that filter by licence).
        public var licenses: [String] = []
        /// Download settings; `downloads.retry` governs image requests only (`--retries`); `downloads.userAgent` is the
        /// `User-Agent` of every request, the API calls' too (`--user-agent`).
        public var downloads = DownloadManager.Configuration()
        /// How failed API requests — search pages, tokens, download notifications — are retried (`--api-retries`),
        /// separately from image requests. Default: 3 retries, full-jitter backoff from 0.5 s up to 30 s,
        /// `Retry-After` honoured up to 5 minutes.
        public var apiRetry = RetryPolicy()
        /// How files are named; nil for `<provider>-<id>.<ext>`.
        public var nameTemplate: NameTemplate?
        /// Whether saved files are fsynced before publishing. Default true.
        public var isSyncEnabled = true
        /// The label of this query's images and the subfolder they go to (`--queries`: the query and its folder
        /// name), or `nil` for a flat folder. ``count`` then counts that subfolder's images only.
        public var label: (name: String, subfolder: String)?
        /// Where in the folder (or the label's folder) the images go (`--layout`). Default automatic: numbered subfolders
        /// of 1,000 when ``count`` is over 9,000 (or the folder has subfolders already), else flat.
        public var layout = FolderLayout()
        /// Whether an image another label holds is refused rather than kept again (`--unique-across-queries`).
        public var uniqueAcrossLabels = false
        /// What is taken for a duplicate of a saved image (`--dedup`). Default ``Deduplication/near``: the folder's
        /// promise is `count` distinct pictures, and a search finds the same picture at several sizes and formats.
        public var deduplication: Deduplication = .near(NearDuplicatePolicy())
        /// What the images are for and which reservations are set aside (`--purpose`, `--ignore-opt-out`,
        /// `--skip-generated`): the response's headers and the images' own marks are read; a search reads no site files
        /// (its results come from APIs whose terms govern them). Default: AI training, every signal honoured.
        public var consent = ConsentPolicy()
        /// The environment keys and endpoint overrides are read from.
        public var environment: [String: String] = ProcessInfo.processInfo.environment

        public init(query: String, count: Int, directory: URL) {
            self.query = query
            self.count = count
            self.directory = directory
        }
    }
}
