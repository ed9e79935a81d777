import Foundation
import MirrorImages
import MirrorTransport

/// `mirror urls`: downloads a table of image URLs (a text list, CSV, TSV or JSONL, gzip or not) into a folder,
/// verified, deduplicated and resumable.
///
/// Skips what the folder already has (by normalised URL, and by content once downloaded), names each
/// file after its URL's last path segment (sanitised, with a short hash when names clash) and writes
/// `manifest.jsonl`, each record keyed by its row. Bad rows are counted and reported with their place.
public struct URLListJob: Sendable {
    /// Settings of a run.
    public struct Configuration: Sendable {
        /// The output folder.
        public var directory: URL
        /// Download settings (concurrency, per-host cap, retries, limits, cache).
        public var downloads = DownloadManager.Configuration()
        /// Whether saved files are fsynced before they are published. Default true.
        public var isSyncEnabled = true
        /// What the images are written as. Default a folder.
        public var format: OutputFormat = .folder
        /// Which `X-Robots-Tag` directives keep an image out; `nil` reads none. Default ``OptOutPolicy/init(tokens:agent:)``.
        public var optOut: OptOutPolicy? = OptOutPolicy()
        /// Whether each host's robots.txt is honoured. Default true.
        public var honoursRobots = true
        /// How saved images are resized and re-encoded; `nil` keeps the bytes as served.
        public var transform: ImageTransform?
        /// Which valid images are wanted (`--min-image-size`, `--max-aspect-ratio`); `nil` for all.
        public var filter: ImageFilter?
        /// This copy's share of a job run as N copies (the table source takes only its rows), or `nil`.
        public var shard: WorkShard?
        /// Object storage the WebDataset shards go to, or `nil` for ``directory``; ``directory`` is then the local
        /// state folder.
        public var objectStore: ObjectStoreDestination?

        public init(directory: URL) {
            self.directory = directory
        }
    }

    /// A bucket and prefix, and how to reach it.
    public struct ObjectStoreDestination: Sendable {
        public var location: S3Location
        public var settings: S3Configuration

        public init(location: S3Location, settings: S3Configuration) {
            self.location = location
            self.settings = settings
        }
    }

    /// What the images are written as.
    public enum OutputFormat: Sendable, Hashable {
        /// Files in the folder, with `manifest.jsonl`.
        case folder
        /// WebDataset tar shards of `shardSize` rows, with their records and stats (``ShardSink``).
        case webDataset(shardSize: Int)
    }

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

    public let configuration: Configuration

    public init(configuration: Configuration) {
        self.configuration = configuration
    }

    /// Runs the list to the end (or until the task is cancelled).
    ///
    /// - Throws: `FolderLock.Held` if another run holds the folder, `FileError` if it cannot be used or
    ///   stops taking images (full, read-only), ``TableError`` if the table stops being readable: what was saved
    ///   until then stays saved.
    public func run(_ table: TableSource, onEvent: @escaping @Sendable (Event) -> Void = { _ in }) async throws -> Summary {
        let started = ContinuousClock.now
        // Object storage is reached over a transport of its own, ended with the run.
        let storeLoader = configuration.objectStore.map { _ in CurlMultiDriver() }
        defer { storeLoader?.shutdown() }
        let sink: any ImageSink
        switch configuration.format {
        case .folder:
            sink = try FolderSink(folder: try OutputFolder(directory: configuration.directory), isSyncEnabled: configuration.isSyncEnabled)
        case let .webDataset(shardSize):
            var shards = ShardSink.Configuration(directory: configuration.directory, shardSize: shardSize)
            shards.isSyncEnabled = configuration.isSyncEnabled
            shards.shard = configuration.shard
            if let destination = configuration.objectStore, let storeLoader {
                let client = S3Client(location: destination.location, configuration: destination.settings, loader: storeLoader)
                let owned = shards
                shards.store = try await S3ShardStore.open(client: client) { owned.owns($0) }
            }
            sink = try ShardSink(configuration: shards)
        }
        var pipeline = Pipeline.Configuration()
        pipeline.downloads = configuration.downloads
        pipeline.optOut = configuration.optOut
        pipeline.honoursRobots = configuration.honoursRobots
        pipeline.transform = configuration.transform
        if case .webDataset = configuration.format {
            // Shards hold nothing per row in memory once written, so the run's URL set is what would grow: on disk.
            // (A folder keeps its own lookups in memory anyway; there the set costs less than the file would.)
            pipeline.spillDirectory = configuration.directory.appendingPathComponent(".mirror", isDirectory: true)
        }
        pipeline.filter = configuration.filter
        let report = await Pipeline(configuration: pipeline).run(from: table, into: sink) { event in
            switch event {
            case let .saved(record, _, source): onEvent(.saved(record, source: source))
            case let .alreadySaved(candidate): onEvent(.skipped(candidate.url))
            case let .duplicate(candidate, existing): onEvent(.duplicate(candidate.url, of: existing ?? candidate.url.absoluteString))
            case let .failed(candidate, error): onEvent(.failed(candidate.url, error))
            case let .retrying(url, attempt, delay, reason): onEvent(.retrying(url, attempt: attempt, delay: delay, reason: reason))
            case let .invalid(candidate, reason): onEvent(.invalid(place: candidate.place ?? "a row", reason: reason))
            case let .refused(candidate, reason, message): onEvent(.refused(candidate.url, reason: reason, message: message))
            case .filtered, .notice: break
            }
        }
        // Keep the cache within its size limit (least recently used first); cheap when under it.
        configuration.downloads.cache?.sweep()
        let shardSink = sink as? ShardSink
        if let error = shardSink?.writeFailure { throw error }
        if let error = report.fatal, !report.interrupted { throw error }
        if let error = report.sourceError, !report.interrupted { throw error }

        let tally = report.tally
        var summary = Summary()
        summary.total = tally.saved + tally.alreadySaved + tally.duplicates + tally.failed + tally.filtered + tally.skipped
            + tally.optedOut + tally.disallowed
        summary.invalidRows = tally.invalid
        summary.optedOut = tally.optedOut
        summary.filtered = tally.filtered
        summary.disallowed = tally.disallowed
        summary.saved = tally.saved
        summary.skipped = tally.alreadySaved
        summary.duplicates = tally.duplicates
        summary.failed = tally.failed
        summary.failures = tally.failures
        summary.bytes = tally.bytes
        summary.cacheHits = tally.cacheHits
        summary.hasTransientFailures = tally.hasTransientFailures
        summary.shards = shardSink?.completeShardCount
        summary.shardsWritten = shardSink?.writtenShardCount
        if configuration.shard != nil { summary.tableRows = table.share.rows }
        summary.seconds = (ContinuousClock.now - started).seconds
        return summary
    }
}
