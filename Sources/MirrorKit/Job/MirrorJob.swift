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
    public func candidates(driver: CurlMultiDriver? = nil) async throws -> [ImageResult] {
        let providers = try makeProviders()
        let manifest = ManifestRecord.read(from: configuration.directory.appendingPathComponent("manifest.jsonl"))
        let have = Set(manifest.compactMap { URL(string: $0.url).map { CacheKey(url: $0).normalizedURL } })
        let missing = max(0, configuration.count - manifest.count)
        let driver = driver ?? CurlMultiDriver()
        let feed = makeFeed(providers: providers, driver: driver)
        var results: [ImageResult] = []
        while results.count < missing {
            let candidate: ImageResult?
            do {
                candidate = try await next(from: feed)
            } catch {
                var summary = Summary()
                summary.target = configuration.count
                summary.providers = configuration.providers
                summary.providerStatus = providerStatus(feed.statistics)
                throw Self.failure(from: error, summary: summary)
            }
            guard let result = candidate else { break }
            if have.contains(CacheKey(url: result.imageURL).normalizedURL) { continue }
            if let reason = earlyRejection(result) { _ = reason; continue }
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

        var summary = Summary()
        summary.target = configuration.count
        summary.providers = configuration.providers
        let have = folder.savedCount
        guard have < configuration.count else {
            summary.total = have
            summary.upToDate = true
            summary.providerStatus = providerStatus(SearchStatistics())
            summary.seconds = (ContinuousClock.now - started).seconds
            try? store.recordSearch(query: configuration.query, providers: providerNames, saved: 0, pagesFetched: 0, exhausted: false)
            return summary
        }
        let needed = configuration.count - have
        let driver = CurlMultiDriver()
        defer { driver.shutdown() }
        let manager = DownloadManager(configuration: configuration.downloads, loader: driver)
        let committer = ImageCommitter(folder: folder, store: store, isSyncEnabled: configuration.isSyncEnabled, admissionLimit: needed)
        let feed = makeFeed(providers: providers, driver: driver)
        let skip = (try? store.permanentlyFailedURLs()) ?? []
        let tally = Locked(Summary())
        // Download notifications (Unsplash's download_location) in flight; they never hold a download slot.
        let notifications = Locked<[Task<Void, Never>]>([])
        // Downloads of this run that did not end in a saved image; they widen the in-flight margin.
        let losses = Locked(0)
        // The first error that makes the folder unwritable (full disk, read-only, …): it ends the run.
        let fatal = Locked<FileError?>(nil)
        let forwarder = Task {
            for await event in manager.events {
                if case let .retrying(url, attempt, delay, reason) = event {
                    onEvent(.retrying(url, attempt: attempt, delay: delay, reason: reason))
                }
            }
        }

        var searchFailure: (any Error)?
        var exhausted = false
        await withTaskGroup(of: Void.self) { group in
            var inFlight = 0
            var seen = Set<String>()
            loop: while true {
                let saved = committer.admittedCount
                // In flight beyond what is still needed: none at first (so a clean run fetches exactly the
                // difference), then one more for each download of this run that did not end in a saved
                // image, up to the concurrency, so that where losses happen they are replaced ahead of time.
                let margin = min(configuration.downloads.concurrency, losses.withLock { $0 })
                if saved >= needed || Task.isCancelled || fatal.withLock({ $0 }) != nil { break }
                if !exhausted && searchFailure == nil && inFlight < configuration.downloads.concurrency + margin && saved + inFlight < needed + margin {
                    do {
                        guard let result = try await next(from: feed) else {
                            exhausted = true
                            continue loop
                        }
                        let key = CacheKey(url: result.imageURL).normalizedURL
                        if folder.contains(url: result.imageURL) || !seen.insert(key).inserted {
                            tally.withLock { $0.duplicates += 1 }
                            onEvent(.duplicate(result.imageURL))
                            continue loop
                        }
                        if skip.contains(key) { continue loop }
                        if let reason = earlyRejection(result) {
                            tally.withLock { $0.filtered += 1 }
                            onEvent(.filtered(result.imageURL, reason))
                            continue loop
                        }
                        inFlight += 1
                        group.addTask {
                            let outcome = await download(result, manager: manager, committer: committer, store: store, tally: tally, fatal: fatal, onEvent: onEvent)
                            if outcome.notify {
                                let task = Task { await notify(feed: feed, of: result, onEvent: onEvent) }
                                notifications.withLock { $0.append(task) }
                            }
                            if !outcome.kept { losses.withLock { $0 += 1 } }
                        }
                        continue loop
                    } catch {
                        searchFailure = error
                        continue loop
                    }
                }
                if inFlight == 0 { break }
                await group.next()
                inFlight -= 1
            }
            // The count is reached (or the run is over): whatever is still in flight is surplus.
            manager.cancelAll()
            await group.waitForAll()
        }
        await committer.drain()
        await manager.shutdown()
        forwarder.cancel()
        // A provider's terms ask for each notification: wait for those in flight, unless the run was interrupted.
        for task in notifications.withLock({ $0 }) {
            if Task.isCancelled { task.cancel() }
            await task.value
        }
        // Keep the cache within its size limit (least recently used first); cheap when under it. The
        // image and page caches share one folder by default, so one sweep covers both.
        if let cache = configuration.downloads.cache {
            cache.sweep()
        } else {
            _ = configuration.pageCache?.sweep()
        }

        let statistics = feed.statistics
        summary = tally.withLock { $0 }
        summary.target = configuration.count
        summary.providers = configuration.providers
        summary.saved = committer.admittedCount
        summary.total = folder.savedCount
        summary.pages = statistics.pagesFetched
        summary.apiRequests = statistics.requestsMade + statistics.notificationsSent + statistics.notificationsFailed
        summary.downloadNotifications = statistics.notificationsSent
        summary.downloadNotificationsFailed = statistics.notificationsFailed
        summary.providerStatus = providerStatus(statistics)
        summary.interrupted = Task.isCancelled
        summary.exhausted = summary.total < configuration.count && !summary.interrupted && searchFailure == nil
        summary.seconds = (ContinuousClock.now - started).seconds
        try? store.recordSearch(
            query: configuration.query, providers: providerNames, saved: summary.saved,
            pagesFetched: summary.pages, exhausted: summary.exhausted
        )
        if let error = fatal.withLock({ $0 }), !summary.interrupted {
            throw error
        }
        if let searchFailure, summary.total < configuration.count, !summary.interrupted {
            throw Self.failure(from: searchFailure, summary: summary)
        }
        return summary
    }

    // MARK: Pieces

    private func makeFeed(providers: [any ImageProvider], driver: CurlMultiDriver) -> SearchFeed {
        var feedConfiguration = SearchFeed.Configuration()
        feedConfiguration.pageLimit = configuration.pageLimit
        feedConfiguration.retry = configuration.apiRetry
        // For tests, emulators and self-hosted endpoints only: the real APIs get their own pacing.
        if let text = configuration.environment["MIRROR_API_INTERVAL_MS"], let milliseconds = Int(text), milliseconds >= 0 {
            feedConfiguration.requestInterval = .milliseconds(milliseconds)
        }
        let client = APIClient(loader: driver, cache: configuration.pageCache, retry: configuration.apiRetry)
        return SearchFeed(providers: providers, query: searchQuery, client: client, configuration: feedConfiguration)
    }

    private func next(from feed: SearchFeed) async throws -> ImageResult? {
        try await feed.next()
    }

    /// Every provider of the chain, in chain order, as the feed's statistics describe it.
    private func providerStatus(_ statistics: SearchStatistics) -> [ProviderReport] {
        configuration.providers.map { ProviderReport(provider: $0, statistics: statistics.perProvider[$0]) }
    }

    /// Sends the download notification `result`'s provider asks for; a failure is logged, never fatal.
    private func notify(feed: SearchFeed, of result: ImageResult, onEvent: @escaping @Sendable (Event) -> Void) async {
        do {
            _ = try await feed.notifySaved(result)
        } catch {
            if case .cancelled = error { return }
            onEvent(.notice("\(result.provider): the download notification for \(result.id) failed (\(error.message)); the image is kept"))
        }
    }

    /// Rejects a candidate from what the API says, before any download: too small, unwanted format.
    private func earlyRejection(_ result: ImageResult) -> String? {
        guard let filter = configuration.filter else { return nil }
        if let width = result.width, let height = result.height,
           width < filter.minimumWidth || height < filter.minimumHeight {
            return "\(width)×\(height) is smaller than \(filter.minimumWidth)×\(filter.minimumHeight)"
        }
        if let formats = filter.formats, let mime = result.mimeType, let format = ImageFormat(mimeType: mime), !formats.contains(format) {
            return "\(format.rawValue) is not among the wanted formats"
        }
        return nil
    }

    private func download(
        _ result: ImageResult, manager: DownloadManager, committer: ImageCommitter, store: StateStore,
        tally: Locked<Summary>, fatal: Locked<FileError?>, onEvent: @escaping @Sendable (Event) -> Void
    ) async -> (kept: Bool, notify: Bool) {
        let outcome = await manager.download(DownloadRequest(url: result.imageURL, directory: committer.folder.directory, filter: configuration.filter))
        switch outcome {
        case .failure(.cancelled):
            return (true, false)
        case let .failure(.filesystem(error)) where error.isFatal:
            // The folder cannot take the image: no other image will fare better, so the run stops.
            fatal.withLock { $0 = $0 ?? error }
            tally.withLock {
                $0.failed += 1
                $0.failures["filesystem", default: 0] += 1
            }
        case let .failure(.filtered(reason)):
            tally.withLock { $0.filtered += 1 }
            try? store.recordFailure(url: result.imageURL, provider: result.provider, reason: "filtered", isTransient: false)
            onEvent(.filtered(result.imageURL, reason))
        case let .failure(error):
            tally.withLock {
                $0.failed += 1
                $0.failures[error.reasonKey, default: 0] += 1
            }
            try? store.recordFailure(url: result.imageURL, provider: result.provider, reason: error.reasonKey, isTransient: error.isTransient)
            onEvent(.failed(result.imageURL, error))
        case let .success(image):
            let query = configuration.query
            var name: (@Sendable (Int) -> String)?
            if let template = configuration.nameTemplate {
                name = { index in
                    template.render(provider: result.provider, id: result.id, title: result.title, index: index, sha256: image.sha256, format: image.info.format)
                }
            }
            let naming = name
            let published: ImageCommitter.Outcome = await withCheckedContinuation { continuation in
                committer.commit(ImageCommitter.Item(
                    image: image,
                    stem: "\(result.provider)-\(result.id)",
                    name: naming,
                    record: { name in Self.record(for: result, image: image, file: name, query: query) },
                    completion: { continuation.resume(returning: $0) }
                ))
            }
            switch published {
            case let .saved(record):
                tally.withLock { $0.bytes += record.bytes }
                onEvent(.saved(record, source: image.source))
                return (true, result.downloadLocation != nil)
            case .duplicate:
                tally.withLock { $0.duplicates += 1 }
                onEvent(.duplicate(result.imageURL))
            case .notAdmitted:
                return (true, false)
            case let .failed(error):
                if error.isFatal { fatal.withLock { $0 = $0 ?? error } }
                tally.withLock {
                    $0.failed += 1
                    $0.failures["filesystem", default: 0] += 1
                }
                onEvent(.failed(result.imageURL, .filesystem(error)))
            }
        }
        return (false, false)
    }

    static func record(for result: ImageResult, image: VerifiedImage, file: String, query: String) -> ManifestRecord {
        ManifestRecord(
            file: file, url: result.imageURL.absoluteString, pageURL: result.pageURL?.absoluteString,
            provider: result.provider, id: result.id, title: result.title, creator: result.creator?.name,
            license: result.license.map { [$0.code, $0.version].compactMap { $0 }.joined(separator: " ") },
            licenseURL: result.license?.url?.absoluteString, width: image.info.width, height: image.info.height,
            bytes: image.bytes, sha256: image.sha256, format: image.info.format.rawValue, query: query, fetchedAt: image.fetchedAt
        )
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
