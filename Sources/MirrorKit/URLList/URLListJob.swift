import Foundation
import MirrorImages
import MirrorTransport

/// `mirror urls`: downloads a list of image URLs into a folder, verified, deduplicated and resumable.
///
/// Skips what the folder already has (by normalised URL, and by content once downloaded), names each
/// file after its URL's last path segment (sanitised, with a short hash when names clash) and writes
/// `manifest.jsonl`.
public struct URLListJob: Sendable {
    /// Settings of a run.
    public struct Configuration: Sendable {
        /// The output folder.
        public var directory: URL
        /// Download settings (concurrency, per-host cap, retries, limits, cache).
        public var downloads = DownloadManager.Configuration()
        /// Whether saved files are fsynced before they are published. Default true.
        public var isSyncEnabled = true

        public init(directory: URL) {
            self.directory = directory
        }
    }

    /// What a run did.
    public struct Summary: Sendable, Hashable, Codable {
        /// Distinct URLs in the list.
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
        /// Lines that were not URLs.
        public var invalidLines = 0
        /// Bytes of the images saved.
        public var bytes: Int64 = 0
        /// Images served from the cache.
        public var cacheHits = 0
        /// Wall time.
        public var seconds: Double = 0
        /// Whether any failure may succeed on a later run (network, server errors).
        public var hasTransientFailures = false
    }

    /// Progress of a run.
    public enum Event: Sendable {
        case saved(ManifestRecord, source: CacheSource)
        case skipped(URL)
        case duplicate(URL, of: String)
        case failed(URL, DownloadError)
        case retrying(URL, attempt: Int, delay: Duration, reason: String)
    }

    public let configuration: Configuration

    public init(configuration: Configuration) {
        self.configuration = configuration
    }

    /// Runs the list to the end (or until the task is cancelled).
    ///
    /// - Throws: `FolderLock.Held` if another run holds the folder, `FileError` if it cannot be used or
    ///   stops taking images (full, read-only): what was saved until then stays saved.
    public func run(_ list: URLList, onEvent: @escaping @Sendable (Event) -> Void = { _ in }) async throws -> Summary {
        let started = ContinuousClock.now
        let folder = try OutputFolder(directory: configuration.directory)
        let summary = Locked(Summary())
        summary.withLock {
            $0.total = list.urls.count
            $0.invalidLines = list.invalidLines.count
        }
        let manager = DownloadManager(configuration: configuration.downloads)
        let committer = ImageCommitter(folder: folder, isSyncEnabled: configuration.isSyncEnabled)
        // The first error that makes the folder unwritable (full disk, read-only, …): it ends the run.
        let fatal = Locked<FileError?>(nil)
        let stop: @Sendable (FileError) -> Void = { error in
            guard error.isFatal else { return }
            fatal.withLock { $0 = $0 ?? error }
            manager.cancelAll()
        }
        let forwarder = Task {
            for await event in manager.events {
                if case let .retrying(url, attempt, delay, reason) = event {
                    onEvent(.retrying(url, attempt: attempt, delay: delay, reason: reason))
                }
            }
        }

        // One download of the list, from request to published file.
        let process: @Sendable (URL) async -> Void = { url in
            let result = await manager.download(DownloadRequest(url: url, directory: folder.directory))
            switch result {
            case let .failure(error):
                if case let .filesystem(fileError) = error { stop(fileError) }
                summary.withLock {
                    $0.failed += 1
                    $0.failures[error.reasonKey, default: 0] += 1
                    if error.isTransient { $0.hasTransientFailures = true }
                }
                onEvent(.failed(url, error))
            case let .success(image):
                let outcome = await Self.commit(image, url: url, to: committer)
                switch outcome {
                case let .saved(record):
                    summary.withLock {
                        $0.saved += 1
                        $0.bytes += record.bytes
                        if image.source != .network { $0.cacheHits += 1 }
                    }
                    onEvent(.saved(record, source: image.source))
                case let .duplicate(existing):
                    summary.withLock { $0.duplicates += 1 }
                    onEvent(.duplicate(url, of: existing))
                case .notAdmitted:
                    break
                case let .failed(error):
                    stop(error)
                    summary.withLock {
                        $0.failed += 1
                        $0.failures["filesystem", default: 0] += 1
                        $0.hasTransientFailures = true
                    }
                    onEvent(.failed(url, .filesystem(error)))
                }
            }
        }

        // A window of tasks rather than one per URL: a task costs memory (a 100,000-line list would
        // otherwise hold 100,000 suspended tasks), and the window is wide enough that URLs of other
        // hosts are not held up behind a busy host's per-host cap.
        let window = max(256, configuration.downloads.concurrency * 8)
        await withTaskCancellationHandler {
            await withTaskGroup(of: Void.self) { group in
                var pending = list.urls.makeIterator()
                var running = 0
                func startNext() -> Bool {
                    while fatal.withLock({ $0 == nil }), !Task.isCancelled, let url = pending.next() {
                        if folder.contains(url: url) {
                            summary.withLock { $0.skipped += 1 }
                            onEvent(.skipped(url))
                            continue
                        }
                        group.addTask { await process(url) }
                        return true
                    }
                    return false
                }
                while running < window, startNext() { running += 1 }
                while running > 0 {
                    await group.next()
                    running -= 1
                    if startNext() { running += 1 }
                }
            }
        } onCancel: {
            manager.cancelAll()
        }
        await committer.drain()
        await manager.shutdown()
        forwarder.cancel()
        // Keep the cache within its size limit (least recently used first); cheap when under it.
        configuration.downloads.cache?.sweep()
        if let error = fatal.withLock({ $0 }), !Task.isCancelled { throw error }
        var result = summary.withLock { $0 }
        result.seconds = (ContinuousClock.now - started).seconds
        return result
    }

    private static func commit(_ image: VerifiedImage, url: URL, to committer: ImageCommitter) async -> ImageCommitter.Outcome {
        await withCheckedContinuation { continuation in
            committer.commit(ImageCommitter.Item(
                image: image,
                stem: FileNaming.stem(of: url),
                record: { name in
                    ManifestRecord(
                        file: name, url: url.absoluteString, width: image.info.width, height: image.info.height,
                        bytes: image.bytes, sha256: image.sha256, format: image.info.format.rawValue, fetchedAt: image.fetchedAt
                    )
                },
                completion: { continuation.resume(returning: $0) }
            ))
        }
    }
}

extension Duration {
    /// The duration in seconds, as a `Double`.
    public var seconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
