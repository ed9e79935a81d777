import Foundation
import MirrorFetch
import MirrorSearch
import MirrorStorage
import MirrorTransport

/// One run of `mirror <query> --count N --out DIR`: the ``Pipeline`` configured with the search feed as its
/// source, the folder as its sink, and the images still missing as its target.
///
/// The count is exact: a saved image counts; failures, duplicates (by URL or content, across providers too) and
/// filtered images don't (the pipeline's admission and target see to it, the folder never admits more). State lives
/// in the folder (`.mirror/state.sqlite`, `manifest.jsonl`), so a killed run resumes where it stopped, and a
/// finished run re-run fetches nothing. Settings: `MirrorJob+Configuration.swift`; what a run reports:
/// `MirrorJob+Summary.swift`; why it fails: `MirrorJob+Failure.swift`.
public struct MirrorJob: Sendable {
    /// The settings of this job.
    public let configuration: Configuration

    public init(configuration: Configuration) {
        self.configuration = configuration
    }

    // MARK: Running

    /// Runs the job to the count, to exhaustion, or until the task is cancelled.
    ///
    /// - Throws: `FolderLock.Held`, `FileError`, `MirrorJob.Failure`.
    public func run(onEvent: @escaping @Sendable (Pipeline.Event) -> Void = { _ in }) async throws -> Summary {
        let started = ContinuousClock.now
        let providers = try makeProviders()
        let folder = try OutputFolder(directory: configuration.directory, nearDuplicates: configuration.deduplication.nearPolicy)
        defer { folder.releaseLock() }  // `--queries` opens the folder again for the next query, in this process
        if folder.reconciliation.foreignMetadata { onEvent(.notice(OutputFolder.foreignMetadataNotice)) }
        if configuration.deduplication.nearPolicy != nil { try PerceptualHasher(journal: folder.decodeJournal).refreshHashes(in: folder) }
        let store = try StateStore(url: folder.stateDirectory.appendingPathComponent("state.sqlite"))
        try store.synchronizeImages(with: folder.records)
        let providerNames = configuration.providers.joined(separator: ",")
        let needed = configuration.count - folder.savedCount(label: configuration.label?.name)
        guard needed > 0 else {
            var summary = summary(of: SearchStatistics(), report: nil, folder: folder, started: started)
            summary.upToDate = true
            try? store.recordSearch(query: configuration.query, providers: providerNames, saved: 0, pagesFetched: 0, exhausted: false)
            return summary
        }
        let driver = CurlMultiDriver(threads: CurlMultiDriver.threadCount(forConcurrency: configuration.downloads.concurrency))
        defer { driver.shutdown() }
        let feed = makeFeed(providers: providers, loader: driver)

        var pipeline = pipelineConfiguration(target: needed)
        pipeline.skip = (try? store.permanentlyFailedURLs()) ?? []
        let sink = try FolderSink(
            folder: folder, store: store, isSyncEnabled: configuration.isSyncEnabled, admissionLimit: needed,
            nameTemplate: configuration.nameTemplate, label: configuration.label, uniqueAcrossLabels: configuration.uniqueAcrossLabels,
            deduplication: configuration.deduplication,
            // The count is what the folder (or the label's) will hold: past the flat limit, subfolders from the first.
            layout: configuration.layout.resolved(saved: folder.savedCount(label: configuration.label?.name), adding: needed)
        )
        let report = await Pipeline(configuration: pipeline, loader: driver).run(from: SearchSource(feed: feed, query: configuration.query), into: sink, onEvent: onEvent)
        // Keep the cache (images and pages, one folder) within its size limit, least recently used first.
        configuration.downloads.cache?.sweep()

        var summary = summary(of: feed.statistics, report: report, folder: folder, started: started)
        summary.crossLabelDuplicates = sink.crossLabelDuplicates
        try? store.recordSearch(
            query: configuration.query, providers: providerNames, saved: summary.tally.saved,
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

    func pipelineConfiguration(target: Int) -> Pipeline.Configuration {
        var pipeline = Pipeline.Configuration(target: target)
        pipeline.downloads = configuration.downloads
        pipeline.filter = configuration.filter
        pipeline.deduplication = configuration.deduplication
        pipeline.consent = configuration.consent
        return pipeline
    }

    /// The run's summary from the feed's statistics and the pipeline's report (none for a run that fetched nothing).
    func summary(of statistics: SearchStatistics, report: Pipeline.Report?, folder: OutputFolder?, started: ContinuousClock.Instant) -> Summary {
        var summary = Summary()
        summary.target = configuration.count
        (summary.purpose, summary.ignoredOptOuts) = (configuration.consent.purpose, configuration.consent.ignored)
        summary.agents = configuration.consent.robotsTag.agents
        summary.providers = configuration.providers
        summary.providerStatus = configuration.providers.map { ProviderReport(provider: $0, statistics: statistics.perProvider[$0]) }
        summary.total = folder?.savedCount(label: configuration.label?.name) ?? 0
        summary.label = configuration.label?.name
        summary.pages = statistics.pagesFetched
        summary.apiRequests = statistics.requestsMade + statistics.notificationsSent + statistics.notificationsFailed
        summary.downloadNotifications = statistics.notificationsSent
        summary.downloadNotificationsFailed = statistics.notificationsFailed
        if let report {
            summary.tally = report.tally
            summary.interrupted = report.interrupted
            summary.exhausted = summary.total < configuration.count && !summary.interrupted && report.sourceError == nil
        }
        summary.seconds = (ContinuousClock.now - started).seconds
        return summary
    }
}
