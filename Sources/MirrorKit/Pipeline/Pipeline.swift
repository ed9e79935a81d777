import Foundation
import MirrorConsent
import MirrorModel
import MirrorSync
import MirrorCore
import MirrorFetch
import MirrorStorage
import MirrorTransport

/// The one engine every job runs: candidates from a ``CandidateSource`` → admission → the download manager →
/// verification → an ``ImageSink`` → progress events.
///
/// - **Admission**, in one place: a candidate the sink already holds (a folder by normalised URL, shards by row) ends
///   ``RowOutcome/alreadySaved``; one seen earlier in this run ``RowOutcome/duplicate(of:)``, saved by now or not; one
///   that failed for good on an earlier run (``Configuration/skip``) ``RowOutcome/failedEarlier``; one whose reported
///   size or type the ``Configuration/filter`` refuses ``RowOutcome/filtered(_:)``, before any download. Duplicates by
///   content are the sink's to find (it knows what it holds). Every row's end is counted in the ``Tally`` and sent as
///   one ``Event/ended(_:_:)``.
/// - **Exact count.** With a ``Configuration/target``, no more than the images still needed are in flight — plus,
///   once downloads of this run have been lost (failed, filtered, duplicate), one more for each loss, up to the
///   concurrency — so a clean run fetches exactly the difference and a lossy one replaces losses ahead of time;
///   the sink never admits more than the target, and the surplus is cancelled the moment it is reached. Without a
///   target, a window of tasks (``Configuration/window``) keeps every host busy without a task per candidate.
/// - **Stopping.** Cancelling the calling task cancels every download; a sink that cannot be written (full,
///   read-only) stops the run (``Report/fatal``); a source that throws stops the asking (``Report/sourceError``),
///   and what is in flight still finishes.
///
/// ```swift
/// let pipeline = Pipeline(configuration: .init(target: 50))
/// let report = await pipeline.run(from: source, into: sink) { event in print(event) }
/// ```
public struct Pipeline: Sendable {
    /// Settings of a run.
    public struct Configuration: Sendable {
        /// Images the sink should gain, or `nil` (the default) for every candidate the source has.
        public var target: Int?
        /// Download settings (concurrency, per-host cap, image retries, limits, cache).
        public var downloads = DownloadManager.Configuration()
        /// Which images are wanted (dimensions, formats), or `nil` (the default) for every valid image.
        public var filter: ImageFilter?
        /// Normalised URLs never to try again (they failed for good on an earlier run). Default empty.
        public var skip: Set<String> = []
        /// What the images are for and which reservations are set aside: the one policy that decides on everything
        /// read of an image's owner's wishes (the site's files, the response's headers, the image's own marks). Default:
        /// AI training, every signal honoured.
        public var consent = ConsentPolicy()
        /// Whether each origin's site files — robots.txt (its Disallow rules, Content-Signal and Content-Usage lines)
        /// and the TDMRep file — are read (once per origin). Default false: search results come from APIs whose terms
        /// govern them; URL lists turn it on. The response's headers and the image's own marks are read either way.
        public var readsSiteFiles = false
        /// How saved images are resized and re-encoded; `nil` (the default) keeps the bytes as served.
        public var transform: ImageTransform?
        /// Whether candidates may carry boxes to blur (a table's `--blur-col`): images with boxes are then decoded,
        /// blurred and encoded again (as ``transform`` says, or in the format served) even when nothing else would be.
        /// Default false.
        public var blursBoxes = false
        /// What the sink takes for a duplicate (`--dedup`); with ``Deduplication/near`` every verified image is hashed
        /// (PDQ) on its download's slot, for the sink to compare. Default ``Deduplication/exact``. The sink must be
        /// made with the same.
        public var deduplication: Deduplication = .exact
        /// Where the run keeps the URLs it has seen once there are more than 16,384, in a scratch SQLite file, so that
        /// memory stays flat over tables of millions of rows; `nil` (the default) keeps them all in memory.
        public var spillDirectory: URL?

        /// Candidates in flight at most without a target: wide enough that one busy host's per-host cap does not
        /// hold up the others, small enough that a 10-million-row list is not a task per row.
        public var window: Int { max(256, downloads.concurrency * 8) }

        /// A configuration; `target` defaults to none.
        public init(target: Int? = nil) {
            self.target = target
        }
    }

    /// Progress of a run: the one event type from the pipeline, through the jobs, to whoever shows it.
    public enum Event: Sendable {
        /// A row ended: what the source gave (a candidate, or a table's row that gives no URL) and how it ended.
        case ended(SourceItem, RowOutcome)
        /// An attempt failed and another follows.
        case retrying(DownloadRetry)
        /// A line for the log that changes nothing about the count (a site file that could not be read, a failed save
        /// notification).
        case notice(String)
    }

    /// What a run counted (the one ``MirrorModel/Tally`` that shard stats, `mirror status` and the jobs' summaries
    /// count in too).
    public typealias Tally = MirrorModel.Tally

    /// How a run ended.
    public struct Report: Sendable {
        /// What it counted.
        public var tally: Tally
        /// Why the source stopped early, or `nil` when it ran dry (or was never asked to the end).
        public var sourceError: (any Error)?
        /// Whether the source ran dry.
        public var sourceExhausted: Bool
        /// The error that made the sink unwritable and ended the run, or `nil`.
        public var fatal: FileError?
        /// Whether the calling task was cancelled.
        public var interrupted: Bool
    }

    /// The settings in force.
    public let configuration: Configuration
    /// The transport, or `nil` for a driver of the run's own.
    public let loader: (any HTTPLoading)?

    /// Creates a pipeline.
    /// - Parameters:
    ///   - configuration: Settings of the run.
    ///   - loader: The transport (shared with the search's API client), or `nil` (the default) for a
    ///     ``CurlMultiDriver`` of the run's own.
    public init(configuration: Configuration, loader: (any HTTPLoading)? = nil) {
        self.configuration = configuration
        self.loader = loader
    }

    /// Runs the source dry (or to the target, or until the task is cancelled or the sink fails).
    public func run(from source: any CandidateSource, into sink: any ImageSink, onEvent: @escaping @Sendable (Event) -> Void = { _ in }) async -> Report {
        let manager = DownloadManager(configuration: configuration.downloads, loader: loader) { onEvent(.retrying($0)) }
        let site = siteGate(
            loader: manager.loader, memoryIn: sink.stateDirectory, onFetch: { [manager] host in manager.noteRequest(host: host) },
            pace: { [manager] host in await manager.waitForHostRate(host: host) }
        ) {
            onEvent(.notice($0))
        }
        let run = Run(pipeline: self, manager: manager, sink: sink, source: source, site: site, onEvent: onEvent)
        var sourceError: (any Error)?
        var exhausted = false
        await withTaskCancellationHandler {
            var seen = SeenURLs(spillDirectory: configuration.spillDirectory)
            while !Task.isCancelled, !run.hasFailedFatally {
                if let target = configuration.target, sink.publishedCount >= target { break }
                let inFlight = run.inFlight
                if !exhausted, sourceError == nil, run.hasRoom(inFlight: inFlight) {
                    do {
                        guard let item = try await source.next() else {
                            exhausted = true
                            continue
                        }
                        guard case let .candidate(candidate) = item else {
                            if case let .badRow(row) = item { run.settle(row) }
                            continue
                        }
                        guard run.admit(candidate, seen: &seen) else { continue }
                        run.start(candidate)
                    } catch {
                        sourceError = error
                    }
                    continue
                }
                if inFlight == 0 { break }
                // Without a target, wait until a quarter of the window is free, so that one wake-up of this loop
                // starts many downloads; with one, every ending counts towards it; with nothing left to start, the end.
                let window = configuration.window
                let threshold = exhausted || sourceError != nil ? 0 : configuration.target == nil ? window - window / 4 : inFlight - 1
                await run.waitForRoom(belowOrAt: min(threshold, inFlight - 1))
            }
            // The target is reached, or the run is over: whatever is still in flight is surplus.
            run.stop()
            await run.waitForRoom(belowOrAt: 0)
        } onCancel: {
            run.stop()
        }
        await sink.drain()
        site?.flush()
        await sink.finish(sourceExhausted: exhausted && !Task.isCancelled && !run.hasFailedFatally)
        await manager.shutdown()
        await run.finishNotifications(cancel: Task.isCancelled)
        return Report(
            tally: run.tally.withLock { $0 }, sourceError: sourceError, sourceExhausted: exhausted,
            fatal: run.fatal.withLock { $0 }, interrupted: Task.isCancelled
        )
    }

    /// The gate that reads the site files whose signals the run honours (none: `nil`), remembering them in the sink's
    /// state folder when it has one.
    private func siteGate(
        loader: any HTTPLoading, memoryIn state: URL?, onFetch: @escaping @Sendable (String) -> Void,
        pace: @escaping @Sendable (String) async -> Void, onNotice: @escaping @Sendable (String) -> Void
    ) -> SiteGate? {
        guard configuration.readsSiteFiles else { return nil }
        let consent = configuration.consent
        // The TDMRep file is asked for only where its reservations would count for the run's purpose.
        let files = consent.siteFiles
        guard !files.isEmpty else { return nil }
        let downloads = configuration.downloads
        let memory = state.flatMap { try? SiteMemory(directory: $0) }
        if let rebuilt = memory?.rebuilt { onNotice(rebuilt) }
        return SiteGate(
            loader: loader, agents: consent.robotsTag.agents, userAgent: downloads.userAgent, connectTo: downloads.connectTo,
            timeout: downloads.timeout, files: files,
            memory: memory, onFetch: onFetch, onNotice: onNotice, pace: pace
        )
    }

    /// The failure key of a row whose boxes to blur do not read (``Candidate/blurBoxes``).
    public static let badBoxesReason = "bad-boxes"

    /// Why the source's report of a candidate already rules it out, before any download.
    func earlyRejection(_ candidate: Candidate) -> String? {
        configuration.filter?.rejection(
            reportedWidth: candidate.reportedWidth, reportedHeight: candidate.reportedHeight,
            mimeType: candidate.reportedMIMEType
        )
    }
}

extension Pipeline {
    /// The state one run shares between its loop and its download tasks.
    private final class Run: Sendable {
        let pipeline: Pipeline
        let manager: DownloadManager
        let sink: any ImageSink
        let source: any CandidateSource
        let site: SiteGate?
        let onEvent: @Sendable (Event) -> Void
        let tally = Locked(Tally())
        /// The run's transform with the memory its decodes share (``ImageTransform/memoryLimit``) and the sink's decode
        /// journal, run on each download's slot; `nil` without one.
        let transform: DownloadTransform?
        /// With `--dedup near`, what hashes each verified image on its slot (sharing the transform's decode memory).
        let hasher: PerceptualHasher?
        /// Downloads of this run that did not end in a published image; they widen the in-flight margin.
        let losses = Locked(0)
        /// The first error that made the sink unwritable (full disk, read-only, …): it ends the run.
        let fatal = Locked<FileError?>(nil)
        /// Save notifications in flight; they never hold a download slot.
        let notifications = Locked<[Task<Void, Never>]>([])
        /// Candidates started and not yet ended, whether the run is stopping, and the loop waiting for room.
        private let flow = Locked(Flow())

        private struct Flow {
            var inFlight = 0
            var isStopping = false
            var waiter: (threshold: Int, continuation: CheckedContinuation<Void, Never>)?
        }

        init(pipeline: Pipeline, manager: DownloadManager, sink: any ImageSink, source: any CandidateSource, site: SiteGate?, onEvent: @escaping @Sendable (Event) -> Void) {
            self.pipeline = pipeline
            self.manager = manager
            self.sink = sink
            self.source = source
            self.site = site
            self.onEvent = onEvent
            let blurs = pipeline.configuration.blursBoxes
            let configured = pipeline.configuration.transform.flatMap { $0.isIdentity && !blurs ? nil : $0 } ?? (blurs ? ImageTransform() : nil)
            let decodes = configured != nil || pipeline.configuration.deduplication.nearPolicy != nil
            let memoryLimit = configured?.memoryLimit ?? ImageTransform.defaultMemoryLimit
            let budget = decodes ? DecodeBudget(capacity: memoryLimit) : nil
            transform = configured.map { DownloadTransform($0, budget: budget, journal: sink.decodeJournal) }
            hasher = pipeline.configuration.deduplication.nearPolicy.map { _ in
                PerceptualHasher(memoryLimit: memoryLimit, budget: budget, journal: sink.decodeJournal)
            }
        }

        var configuration: Configuration { pipeline.configuration }

        var hasFailedFatally: Bool { fatal.withLock { $0 != nil } }

        /// Whether another candidate may start.
        func hasRoom(inFlight: Int) -> Bool {
            guard let target = configuration.target else { return inFlight < configuration.window }
            // None beyond what is needed at first (a clean run fetches exactly the difference), then one more for
            // each download lost, up to the concurrency, so that losses are replaced ahead of time.
            let concurrency = configuration.downloads.concurrency
            let margin = min(concurrency, losses.withLock { $0 })
            return inFlight < concurrency + margin && sink.publishedCount + inFlight < target + margin
        }

        /// Counts and reports a row that gives no URL.
        func settle(_ row: BadRow) {
            end(.badRow(row), url: nil, provenance: row.provenance, as: .invalid(row.reason))
        }

        /// Admission: whether `candidate` goes on to be downloaded; reports why not.
        func admit(_ candidate: Candidate, seen: inout SeenURLs) -> Bool {
            let key = CacheKey(url: candidate.url).normalizedURL
            let mayRepeat = !source.yieldsDistinctURLs
            // A sink that tells by URL holds this run's images too: a repeat of a URL admitted earlier in this run is
            // a duplicate even once its image is saved (not "already saved" or a duplicate by how fast the first one
            // went). URLs held before the run never join `seen`, so resuming a large table does not grow it.
            if sink.contains(normalizedURL: key, provenance: candidate.provenance),
               sink.containsTellsByRow || !mayRepeat || !seen.contains(key) {
                end(candidate, as: .alreadySaved)
                return false
            }
            if mayRepeat, !seen.insert(key) {
                end(candidate, as: .duplicate(of: nil))
                return false
            }
            if configuration.skip.contains(key) {
                end(candidate, as: .failedEarlier)
                return false
            }
            if let reason = pipeline.earlyRejection(candidate) {
                end(candidate, as: .filtered(reason))
                return false
            }
            if case let .failure(malformed) = candidate.blurBoxes {
                // Its image could not be saved without the faces the row asks to hide: not fetched, failed for good.
                end(candidate, as: .failed(reason: Pipeline.badBoxesReason, message: "its boxes to blur do not read: \(malformed)", isTransient: false))
                return false
            }
            return true
        }

        /// Candidates started and not yet ended.
        var inFlight: Int { flow.withLock { $0.inFlight } }

        /// Returns once no more than `threshold` candidates are in flight.
        func waitForRoom(belowOrAt threshold: Int) async {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let now = flow.withLock { flow -> Bool in
                    if flow.inFlight <= threshold { return true }
                    flow.waiter = (threshold, continuation)
                    return false
                }
                if now { continuation.resume() }
            }
        }

        /// Stops the run: cancels every download, and candidates still waiting for their host's robots.txt start none.
        func stop() {
            flow.withLock { $0.isStopping = true }
            manager.cancelAll()
        }

        /// One candidate from download to published file, carried by callbacks from the thread where each step ends (a
        /// robots.txt fetch, the download queue's verification, the sink's publication): no task per image. The host's
        /// site files are asked on the download's own slot (`DownloadRequest.site`).
        func start(_ candidate: Candidate) {
            flow.withLock { $0.inFlight += 1 }
            download(candidate)
        }

        private func download(_ candidate: Candidate) {
            if flow.withLock({ $0.isStopping }) {
                ended(kept: true)
                return
            }
            let ticket = manager.download(request(for: candidate)) { [self] downloaded in
                switch afterDownload(downloaded, of: candidate) {
                case let .settled(kept):
                    ended(kept: kept)
                case let .publish(image):
                    sink.publish(image, stem: candidate.stem, provenance: candidate.provenance) { [self] publication in
                        ended(kept: afterPublish(publication, candidate: candidate))
                    }
                }
            }
            // A stop between the check above and the ticket's birth would miss it.
            if flow.withLock({ $0.isStopping }) { ticket.cancel() }
        }

        /// A candidate ended: `kept` when without a loss (published, cancelled as surplus, or not admitted).
        private func ended(kept: Bool) {
            if !kept { losses.withLock { $0 += 1 } }
            let waiter = flow.withLock { flow -> CheckedContinuation<Void, Never>? in
                flow.inFlight -= 1
                guard let waiter = flow.waiter, flow.inFlight <= waiter.threshold else { return nil }
                flow.waiter = nil
                return waiter.continuation
            }
            waiter?.resume()
        }

        /// What a finished download leads to.
        private enum NextStep {
            /// Publish this image (transformed when the run asks for it).
            case publish(VerifiedImage)
            /// Nothing more to do; `kept` as for ``ended(kept:)``.
            case settled(kept: Bool)
        }

        private func request(for candidate: Candidate) -> DownloadRequest {
            var request = DownloadRequest(
                url: candidate.url, directory: sink.stagingDirectory, filter: configuration.filter, consent: configuration.consent, site: site
            )
            request.transform = transform
            request.hasher = hasher
            request.expectedDigest = candidate.expectedDigest
            if case let .success(boxes) = candidate.blurBoxes { request.blurBoxes = boxes }
            return request
        }

        /// Counts and reports a download that gave no image; hands on one that did (transformed already, on the
        /// download's slot: ``DownloadRequest/transform``).
        private func afterDownload(_ downloaded: DownloadResult, of candidate: Candidate) -> NextStep {
            switch downloaded {
            case .failed(.cancelled):
                return .settled(kept: true)
            case let .keptOut(outcome):
                end(candidate, as: outcome)
            case let .failed(error):
                // A transform that failed is the row's failure like any other, shown with its URL.
                let outcome = RowOutcome.failed(reason: error.reasonKey, message: error.description, isTransient: error.isTransient)
                if case let .filesystem(fileError) = error, fileError.isFatal {
                    // The sink cannot take the image: no other image will fare better, so the run stops.
                    stop(fileError)
                    end(candidate, as: outcome, recording: false)
                } else {
                    end(candidate, as: outcome)
                }
            case let .verified(image):
                return .publish(image)
            }
            return .settled(kept: false)
        }

        /// Counts and reports what the sink made of an image; whether it was kept.
        private func afterPublish(_ publication: Publication, candidate: Candidate) -> Bool {
            switch publication {
            case let .success(outcome):
                // A saved image is recorded by the sink as it publishes it; a duplicate the sink found is settled like
                // any row without an image.
                guard case .saved = outcome else {
                    end(candidate, as: outcome)
                    return false
                }
                end(candidate, as: outcome, recording: false)
                if let work = source.saveNotification(for: candidate) {
                    let onEvent = self.onEvent
                    let task = Task {
                        if let line = await work() { onEvent(.notice(line)) }
                    }
                    notifications.withLock { $0.append(task) }
                }
                return true
            case .failure(.notAdmitted):
                return true
            case let .failure(.unwritable(error)):
                stop(error)
                end(candidate, as: .failed(reason: "filesystem", message: error.description, isTransient: true), recording: false)
                return false
            }
        }

        /// Counts how a row ended, tells the sink (unless `recording` is false: the sink made the outcome, or cannot
        /// be written), and reports it.
        private func end(_ item: SourceItem, url: URL?, provenance: ImageProvenance, as outcome: RowOutcome, recording: Bool = true) {
            tally.withLock { $0.count(outcome) }
            if recording, outcome.status != nil { sink.settle(url: url, provenance: provenance, as: outcome) }
            onEvent(.ended(item, outcome))
        }

        private func end(_ candidate: Candidate, as outcome: RowOutcome, recording: Bool = true) {
            end(.candidate(candidate), url: candidate.url, provenance: candidate.provenance, as: outcome, recording: recording)
        }

        /// Ends the run when `error` means the sink can take no more images.
        private func stop(_ error: FileError) {
            guard error.isFatal else { return }
            fatal.withLock { $0 = $0 ?? error }
            stop()
        }

        /// Waits for the save notifications in flight (a source's terms ask for each), or cancels them.
        func finishNotifications(cancel: Bool) async {
            for task in notifications.withLock({ $0 }) {
                if cancel { task.cancel() }
                await task.value
            }
        }
    }
}

/// The normalised URLs a run has admitted: in memory, then (beyond 16,384) in a scratch file in the spill directory, so
/// that a run of millions of rows does not grow with them.
struct SeenURLs {
    private var keys: SpillingKeys

    init(spillDirectory: URL?) {
        keys = SpillingKeys(spillingInto: spillDirectory, name: "seen")
    }

    /// Whether `key` was admitted earlier in this run.
    func contains(_ key: String) -> Bool {
        keys.contains(Fingerprint(key))
    }

    /// Adds `key`; returns whether it was new.
    mutating func insert(_ key: String) -> Bool {
        keys.insert(Fingerprint(key))
    }
}
