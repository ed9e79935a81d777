import Foundation
import MirrorImages
import MirrorTransport

/// One run of `mirror <query> --count N --out DIR`: search pages feed candidates to the download
/// manager until the folder holds exactly N verified, distinct images, or every source has run dry.
///
/// The count is exact: a saved image counts; failures, duplicates (by URL or content, across
/// providers too) and filtered images don't. The job keeps in flight only what is still needed plus
/// a small margin, asks the search for more as failures happen, cancels the surplus the moment the
/// count is reached, and its committer never admits more than the count. State lives in the folder
/// (`.mirror/state.sqlite`, `manifest.jsonl`), so a killed run resumes where it stopped, and a
/// finished run re-run makes no request at all.
public struct MirrorJob: Sendable {
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
        /// Download settings; `downloads.retry` governs image requests only (`--retries`).
        public var downloads = DownloadManager.Configuration()
        /// How failed API requests — search pages, tokens, download notifications — are retried (`--api-retries`),
        /// separately from image requests. Default: 3 retries, full-jitter backoff from 0.5 s up to 30 s,
        /// `Retry-After` honoured up to 5 minutes.
        public var apiRetry = RetryPolicy()
        /// Search-page caching (memory and disk), or nil for none.
        public var pageCache: ImageCache?
        /// How files are named; nil for `<provider>-<id>.<ext>`.
        public var nameTemplate: NameTemplate?
        /// Whether saved files are fsynced before publishing. Default true.
        public var isSyncEnabled = true
        /// The environment keys and endpoint overrides are read from.
        public var environment: [String: String] = ProcessInfo.processInfo.environment

        public init(query: String, count: Int, directory: URL) {
            self.query = query
            self.count = count
            self.directory = directory
        }
    }

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
        case saved(ManifestRecord, source: CacheSource)
        case failed(URL, DownloadError)
        case duplicate(URL)
        case filtered(URL, String)
        case retrying(URL, attempt: Int, delay: Duration, reason: String)
        /// Something worth a line in the log that changes nothing about the count (a failed download notification).
        case notice(String)
    }

    /// Why a run could not start or go on.
    public enum Failure: Error, Sendable, CustomStringConvertible {
        /// A provider name that does not exist.
        case unknownProvider(String)
        /// `--endpoint` given with more than one provider.
        case ambiguousEndpoint
        /// A missing or rejected key, or a bad endpoint (exit 4).
        case configuration(String)
        /// No provider delivered: at least one failed and retries could not overcome it, the others (if any) had
        /// nothing; each provider's report in chain order, and the run's summary (exit 5).
        case unavailable(providers: [ProviderReport], summary: Summary)

        public var description: String {
            switch self {
            case let .unknownProvider(name):
                "unknown provider '\(name)'; run 'mirror providers' to see the \(ProviderRegistry.names.count) there are"
            case .ambiguousEndpoint:
                "--endpoint needs exactly one --provider, since each provider has its own endpoint"
            case let .configuration(message):
                message
            case let .unavailable(providers, _):
                "the search failed: " + providers.map(\.phrase).joined(separator: "; ")
                    + "; try again later, or another --provider"
            }
        }

        /// The run's summary, when the run got far enough to have one.
        public var summary: Summary? {
            if case let .unavailable(_, summary) = self { return summary }
            return nil
        }
    }

    public let configuration: Configuration

    public init(configuration: Configuration) {
        self.configuration = configuration
    }

    /// Builds the providers of the chain, reading keys and endpoint overrides from the environment.
    public func makeProviders() throws -> [any ImageProvider] {
        if configuration.endpoint != nil && configuration.providers.count != 1 { throw Failure.ambiguousEndpoint }
        return try configuration.providers.map { name in
            guard ProviderRegistry.names.contains(name) else { throw Failure.unknownProvider(name) }
            do throws(ProviderError) {
                return try ProviderRegistry.make(named: name, environment: configuration.environment, endpointOverride: configuration.endpoint)
            } catch {
                throw Failure.configuration(Self.describe(error, provider: name))
            }
        }
    }

    /// The query as providers receive it.
    var searchQuery: SearchQuery {
        var query = SearchQuery(text: configuration.query)
        if let filter = configuration.filter {
            query.minWidth = filter.minimumWidth > 0 ? filter.minimumWidth : nil
            query.minHeight = filter.minimumHeight > 0 ? filter.minimumHeight : nil
            query.formats = filter.formats.map { $0.map(\.rawValue).sorted() } ?? []
        }
        query.licenses = configuration.licenses
        return query
    }

    // MARK: Dry run

    /// The candidate URLs a run would fetch (up to the missing count), without downloading or writing anything.
    public func candidates(loader: (any HTTPLoading)? = nil) async throws -> [ImageResult] {
        let providers = try makeProviders()
        let manifest = ManifestRecord.read(from: configuration.directory.appendingPathComponent("manifest.jsonl"))
        let have = Set(manifest.compactMap { URL(string: $0.url).map { CacheKey(url: $0).normalizedURL } })
        let missing = max(0, configuration.count - manifest.count)
        let driver = loader == nil ? CurlMultiDriver() : nil
        defer { driver?.shutdown() }
        let feed = makeFeed(providers: providers, loader: loader ?? driver!)
        let source = SearchSource(feed: feed, query: configuration.query)
        let admission = Pipeline(configuration: pipelineConfiguration(target: missing))
        var results: [ImageResult] = []
        while results.count < missing {
            let next: Candidate?
            do {
                next = try await source.next()
            } catch {
                throw Self.failure(from: error, summary: summary(of: feed, report: nil, folder: nil, started: .now))
            }
            guard let candidate = next, let result = candidate.result else { break }
            if have.contains(CacheKey(url: candidate.url).normalizedURL) || admission.earlyRejection(candidate) != nil { continue }
            results.append(result)
        }
        return results
    }

    // MARK: Running

    /// Runs the job to the count, to exhaustion, or until the task is cancelled.
    ///
    /// - Throws: `FolderLock.Held`, `FileError`, `MirrorJob.Failure`.
    public func run(onEvent: @escaping @Sendable (Event) -> Void = { _ in }) async throws -> Summary {
        let started = ContinuousClock.now
        let providers = try makeProviders()
        let folder = try OutputFolder(directory: configuration.directory)
        let store = try StateStore(url: folder.stateDirectory.appendingPathComponent("state.sqlite"))
        try store.synchronizeImages(with: folder.records)
        let providerNames = configuration.providers.joined(separator: ",")
        let needed = configuration.count - folder.savedCount
        let driver = CurlMultiDriver()
        defer { driver.shutdown() }
        let feed = makeFeed(providers: providers, loader: driver)
        guard needed > 0 else {
            var summary = summary(of: feed, report: nil, folder: folder, started: started)
            summary.upToDate = true
            try? store.recordSearch(query: configuration.query, providers: providerNames, saved: 0, pagesFetched: 0, exhausted: false)
            return summary
        }

        var pipeline = pipelineConfiguration(target: needed)
        pipeline.skip = (try? store.permanentlyFailedURLs()) ?? []
        let sink = FolderSink(
            folder: folder, store: store, isSyncEnabled: configuration.isSyncEnabled, admissionLimit: needed,
            nameTemplate: configuration.nameTemplate
        )
        let report = await Pipeline(configuration: pipeline, loader: driver).run(from: SearchSource(feed: feed, query: configuration.query), into: sink) { event in
            switch event {
            case let .saved(record, _, source): onEvent(.saved(record, source: source))
            case let .alreadySaved(candidate), let .duplicate(candidate, _): onEvent(.duplicate(candidate.url))
            case let .filtered(candidate, reason): onEvent(.filtered(candidate.url, reason))
            case let .failed(candidate, error): onEvent(.failed(candidate.url, error))
            case let .retrying(url, attempt, delay, reason): onEvent(.retrying(url, attempt: attempt, delay: delay, reason: reason))
            case let .notice(line): onEvent(.notice(line))
            }
        }
        // Keep the cache within its size limit (least recently used first); cheap when under it. The
        // image and page caches share one folder by default, so one sweep covers both.
        if let cache = configuration.downloads.cache {
            cache.sweep()
        } else {
            _ = configuration.pageCache?.sweep()
        }

        let summary = summary(of: feed, report: report, folder: folder, started: started)
        try? store.recordSearch(
            query: configuration.query, providers: providerNames, saved: summary.saved,
            pagesFetched: summary.pages, exhausted: summary.exhausted
        )
        if let error = report.fatal, !summary.interrupted {
            throw error
        }
        if let searchFailure = report.sourceError, summary.total < configuration.count, !summary.interrupted {
            throw Self.failure(from: searchFailure, summary: summary)
        }
        return summary
    }

    // MARK: Pieces

    private func pipelineConfiguration(target: Int) -> Pipeline.Configuration {
        var pipeline = Pipeline.Configuration(target: target)
        pipeline.downloads = configuration.downloads
        pipeline.filter = configuration.filter
        return pipeline
    }

    /// The run's summary from the feed's statistics and the pipeline's report (none for a run that fetched nothing).
    private func summary(of feed: SearchFeed, report: Pipeline.Report?, folder: OutputFolder?, started: ContinuousClock.Instant) -> Summary {
        let statistics = feed.statistics
        var summary = Summary()
        summary.target = configuration.count
        summary.providers = configuration.providers
        summary.providerStatus = configuration.providers.map { ProviderReport(provider: $0, statistics: statistics.perProvider[$0]) }
        summary.total = folder?.savedCount ?? 0
        summary.pages = statistics.pagesFetched
        summary.apiRequests = statistics.requestsMade + statistics.notificationsSent + statistics.notificationsFailed
        summary.downloadNotifications = statistics.notificationsSent
        summary.downloadNotificationsFailed = statistics.notificationsFailed
        if let report {
            let tally = report.tally
            summary.saved = tally.saved
            summary.failed = tally.failed
            summary.failures = tally.failures
            summary.duplicates = tally.duplicates + tally.alreadySaved
            summary.filtered = tally.filtered
            summary.bytes = tally.bytes
            summary.interrupted = report.interrupted
            summary.exhausted = summary.total < configuration.count && !summary.interrupted && report.sourceError == nil
        }
        summary.seconds = (ContinuousClock.now - started).seconds
        return summary
    }

    private func makeFeed(providers: [any ImageProvider], loader: any HTTPLoading) -> SearchFeed {
        var feedConfiguration = SearchFeed.Configuration()
        feedConfiguration.pageLimit = configuration.pageLimit
        feedConfiguration.retry = configuration.apiRetry
        // For tests, emulators and self-hosted endpoints only: the real APIs get their own pacing.
        if let text = configuration.environment["MIRROR_API_INTERVAL_MS"], let milliseconds = Int(text), milliseconds >= 0 {
            feedConfiguration.requestInterval = .milliseconds(milliseconds)
        }
        let client = APIClient(loader: loader, cache: configuration.pageCache, retry: configuration.apiRetry)
        return SearchFeed(providers: providers, query: searchQuery, client: client, configuration: feedConfiguration)
    }

    /// The job's error for a search error: keys and settings → ``Failure/configuration(_:)``, a search that no
    /// provider could serve → ``Failure/unavailable(providers:summary:)`` with every provider's report.
    static func failure(from error: any Error, summary: Summary) -> any Error {
        switch error {
        case let search as SearchError:
            switch search {
            case let .authentication(provider, variable, message):
                return Failure.configuration("\(provider) rejected the key in \(variable): \(message); check the variable")
            case let .configuration(provider, message):
                return Failure.configuration("\(provider): \(message)")
            case .unavailable:
                return Failure.unavailable(providers: summary.providerStatus, summary: summary)
            case .cancelled:
                return CancellationError()
            }
        default:
            return error
        }
    }

    static func describe(_ error: ProviderError, provider: String) -> String {
        switch error {
        case let .authentication(variable, _):
            return "\(provider) needs an API key: set \(variable) in the environment"
        default:
            return "\(provider): \(error.description)"
        }
    }
}

extension ImageFormat {
    /// The format a MIME type names, if any (`image/jpeg` → `.jpeg`).
    init?(mimeType: String) {
        let type = mimeType.lowercased().split(separator: ";").first.map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
        guard let format = ImageFormat.allCases.first(where: { $0.mimeType == type }) ?? (type == "image/jpg" ? .jpeg : nil) else {
            return nil
        }
        self = format
    }
}
