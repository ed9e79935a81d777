import Foundation
import MirrorFetch
import MirrorObjectStore
import MirrorStorage
import MirrorTransport

/// `mirror urls`: downloads a table of image URLs (a text list, CSV, TSV or JSONL, gzip or not) into a folder,
/// verified, deduplicated and resumable.
///
/// Skips what the folder already has (by normalised URL, and by content once downloaded), names each
/// file after its URL's last path segment (sanitised, with a short hash when names clash) and writes
/// `manifest.jsonl`, each record keyed by its row. Bad rows are counted and reported with their place.
public struct URLListJob: Sendable {
    public let configuration: Configuration

    public init(configuration: Configuration) {
        self.configuration = configuration
    }

    /// Runs the list to the end (or until the task is cancelled).
    ///
    /// - Throws: `FolderLock.Held` if another run holds the folder, `FileError` if it cannot be used or
    ///   stops taking images (full, read-only), ``TableError`` if the table stops being readable: what was saved
    ///   until then stays saved.
    public func run(_ table: TableSource, onEvent: @escaping @Sendable (Pipeline.Event) -> Void = { _ in }) async throws -> Summary {
        let started = ContinuousClock.now
        // Object storage is reached over a transport of its own, ended with the run.
        let storeLoader = configuration.objectStore.map { _ in CurlMultiDriver() }
        defer { storeLoader?.shutdown() }
        let sink: any ImageSink
        var failures: FailureMemory?
        switch configuration.format {
        case .folder:
            let folder = try OutputFolder(directory: configuration.directory, nearDuplicates: configuration.deduplication.nearPolicy)
            if folder.reconciliation.foreignMetadata { onEvent(.notice(OutputFolder.foreignMetadataNotice)) }
            if configuration.deduplication.nearPolicy != nil { try PerceptualHasher(journal: folder.decodeJournal).refreshHashes(in: folder) }
            let memory = try FailureMemory(folder: folder, retry: configuration.retryFailed)
            failures = memory
            sink = try FolderSink(
                folder: folder, failures: memory.store, retried: memory.retried, isSyncEnabled: configuration.isSyncEnabled,
                deduplication: configuration.deduplication,
                layout: await Self.layout(configuration.layout, of: folder, table: table, skipped: memory.skipped)
            )
        case let .webDataset(shardSize):
            var shards = ShardSink.Configuration(directory: configuration.directory, shardSize: shardSize)
            shards.isSyncEnabled = configuration.isSyncEnabled
            shards.shard = configuration.shard
            shards.retryFailed = configuration.retryFailed
            shards.deduplication = configuration.deduplication
            (shards.purpose, shards.ignoredOptOuts) = (configuration.consent.purpose, configuration.consent.ignored)
            if let destination = configuration.objectStore, let storeLoader {
                let client = S3Client(location: destination.location, configuration: destination.settings, loader: storeLoader)
                let owned = shards
                shards.store = try await S3ShardStore.open(client: client, retry: configuration.retryFailed) { owned.owns($0) }
            }
            let shardSink = try ShardSink(configuration: shards)
            for problem in shardSink.untrustedStats {
                onEvent(.notice("\(problem): shard \(problem.shard) is downloaded again"))
            }
            sink = shardSink
        }
        var pipeline = Pipeline.Configuration()
        pipeline.downloads = configuration.downloads
        pipeline.consent = configuration.consent
        pipeline.readsSiteFiles = configuration.readsSiteFiles
        pipeline.transform = configuration.transform
        pipeline.blursBoxes = table.blursBoxes
        pipeline.deduplication = configuration.deduplication
        // The run's URL set moves to a scratch file once it is large, so memory does not grow with the table: in the
        // copy's own state folder when the job runs as N copies (copies on one machine never touch each other's).
        pipeline.spillDirectory = (sink as? ShardSink)?.stagingDirectory
            ?? configuration.directory.appendingPathComponent(".mirror", isDirectory: true)
        pipeline.filter = configuration.filter
        pipeline.skip = failures?.skipped ?? []
        let report = await Pipeline(configuration: pipeline).run(from: table, into: sink, onEvent: onEvent)
        // Keep the cache within its size limit (least recently used first); cheap when under it.
        configuration.downloads.cache?.sweep()
        let shardSink = sink as? ShardSink
        if let error = shardSink?.writeFailure { throw error }
        if let error = report.fatal, !report.interrupted { throw error }
        if let error = report.sourceError, !report.interrupted { throw error }

        var summary = Summary(tally: report.tally)
        (summary.purpose, summary.ignoredOptOuts) = (configuration.consent.purpose, configuration.consent.ignored)
        summary.agents = configuration.consent.robotsTag.agents
        summary.shards = shardSink?.completeShardCount
        summary.shardsWritten = shardSink?.writtenShardCount
        summary.shardsRewritten = shardSink?.rewrittenShardCount
        // What the output still lacks, earlier runs' rows included: a rerun that downloads nothing still says so.
        if let shardSink {
            let complete = shardSink.completeTally
            summary.missingTransient = complete.transient
            summary.missingPermanent = complete.permanent + complete.invalid
        } else if let counts = try? failures?.store.failedCounts() {
            summary.missingTransient = counts.transient
            summary.missingPermanent = counts.permanent + report.tally.invalid
        }
        if configuration.shard != nil { summary.tableRows = table.share.rows }
        summary.seconds = (ContinuousClock.now - started).seconds
        return summary
    }
}

extension URLListJob {
    /// The folder's layout for this table: an automatic one is subfolders from the first image when the rows the folder
    /// lacks (not saved, and not failed earlier and passed over) may take it past ``FolderLayout/flatLimit``, counted by
    /// reading that far ahead (the rows read are kept for the run; at most twice the limit, so that a table of rows
    /// the folder has costs bounded memory); otherwise as given.
    static func layout(_ layout: FolderLayout, of folder: OutputFolder, table: TableSource, skipped: Set<String>) async -> FolderLayout {
        let saved = folder.savedCount
        // At the limit already, an automatic layout goes on in subfolders by itself.
        guard layout.mode == .automatic, saved < layout.flatLimit else { return layout }
        let adding = await table.countAhead(upTo: layout.flatLimit - saved + 1, rowLimit: 2 * layout.flatLimit) { candidate in
            let key = CacheKey(url: candidate.url).normalizedURL
            return !skipped.contains(key) && !folder.contains(normalizedURL: key)
        }
        return layout.resolved(saved: saved, adding: adding)
    }
}
