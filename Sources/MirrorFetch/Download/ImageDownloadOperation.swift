import Foundation
import MirrorConsent
import MirrorModel
import MirrorSync
import MirrorCore
import MirrorImages
import MirrorTransport

/// One attempt at one image: a cancellable asynchronous `Operation` that streams the body into a
/// temporary file in the destination folder (hashing as it goes), verifies the bytes, and finishes
/// from its transfer's completion.
///
/// The transfer runs on the shared multi driver; this operation holds a slot (``SlotMachine``) while it is in flight.
/// When the transfer ends, the operation verifies the body on the manager's download threads (never on the driver
/// thread), transforms it when the request asks for that, and only then finishes.
/// Cancelling cancels the transfer at once; the temporary file is always removed unless the outcome
/// is a verified image, which then belongs to whoever publishes it.
final class ImageDownloadOperation: AsyncOperation, @unchecked Sendable {
    /// How an attempt ended, with what the retry logic needs to know.
    package enum Outcome: Sendable {
        case verified(VerifiedImage)
        /// Kept out on purpose (filtered, opted out, disallowed): the row's outcome, never tried again.
        case keptOut(RowOutcome)
        /// It failed; `next` says whether another attempt may do better.
        case failed(DownloadError, next: NextAttempt)
        /// The host's site files were fetched on this slot, which took the start it had been given under `--host-rate`:
        /// the attempt gives the slot back and queues again behind the host's rate (no request of its own made).
        case yielded
    }

    /// Whether a failed attempt is worth another, and what its host said of the pace.
    package enum NextAttempt: Sendable, Equatable {
        /// No attempt will do better in this run.
        case none
        /// Another attempt, after the retry policy's backoff.
        case retry
        /// The host asked to slow down (a 429, or a 503 with `Retry-After`): another attempt no sooner than
        /// `retryAfter`, and fewer requests to the host at once.
        case throttled(retryAfter: Duration?)

        /// The least wait before another attempt that the host asked for, if it asked.
        var retryAfter: Duration? {
            if case let .throttled(retryAfter) = self { retryAfter } else { nil }
        }
    }

    package let request: DownloadRequest
    package let attempt: Int
    /// Whether the transfer opens a connection of its own (the attempt before it got an answer that was not HTTP over
    /// a connection kept alive).
    private let freshConnection: Bool
    private let context: DownloadContext
    /// Called once with how the attempt ended, on whichever thread it ended.
    private let completion: @Sendable (Outcome) -> Void
    // The only mutable state; its lock guards it.
    private let inFlight = Locked<(any Cancellable)?>(nil)

    package init(
        request: DownloadRequest, attempt: Int, freshConnection: Bool = false, context: DownloadContext,
        completion: @escaping @Sendable (Outcome) -> Void
    ) {
        self.request = request
        self.attempt = attempt
        self.freshConnection = freshConnection
        self.context = context
        self.completion = completion
    }

    package override func cancel() {
        super.cancel()
        inFlight.withLock { $0 }?.cancel()
    }

    override func didSkipExecution() {
        completion(.failed(.cancelled, next: .none))
    }

    package override func execute() {
        guard let site = request.site, let consent = request.consent else {
            fetch(siteSetAside: [])
            return
        }
        // On this slot, before the transfer: answered at once when the origin's files are known, else when their one
        // fetch ends (on whichever thread that is). After a fetch, with --host-rate, the attempt gives its slot back and
        // queues again behind its host's rate: the fetch took the start it had been given.
        site.evidence(for: request.url) { [self] evidence, fetched in
            if isCancelled {
                end(.failed(.cancelled, next: .none))
                return
            }
            var setAside: [ConsentEvidence] = []
            switch consent.verdict(evidence) {
            case let .refused(reservation):
                switch reservation.evidence.term {
                case .disallow: end(.keptOut(.disallowed(reservation)))
                case let .unavailable(reason, transient):
                    end(.failed(.siteUnavailable(reservation.evidence.value, reason: reason, transient: transient), next: .none))
                default: end(.keptOut(.optedOut(reservation)))
                }
                return
            case let .allowed(ignored):
                setAside = ignored
            }
            if fetched, context.hasHostRate {
                end(.yielded)
            } else {
                fetch(siteSetAside: setAside)
            }
        }
    }

    /// Takes the image from the disk cache, or else transfers it. (The site's files are asked first even for a cached
    /// image: what they reserve holds however the bytes were had.)
    private func fetch(siteSetAside: [ConsentEvidence]) {
        if let cached = context.cachedImage(for: request, siteSetAside: siteSetAside) {
            end(cached)
        } else {
            transfer(siteSetAside: siteSetAside)
        }
    }

    /// Starts the attempt's transfer into a new temporary file; `siteSetAside` are the site's reservations the run set
    /// aside, for the image's record.
    private func transfer(siteSetAside: [ConsentEvidence]) {
        let temporary: AtomicFile.Temporary
        do {
            temporary = try AtomicFile.makeTemporary(in: request.directory)
        } catch {
            end(.failed(.filesystem(error), next: .none))
            return
        }
        let sink = HashingFileSink(
            descriptor: temporary.descriptor, folder: request.directory.path, pool: context.buffers, hashesMD5: request.expectedDigest?.algorithm == .md5
        )
        var transferRequest = context.transferTemplate
        transferRequest.url = request.url
        transferRequest.destination = .sink(sink)
        transferRequest.freshConnection = freshConnection
        let task = context.loader.load(transferRequest) { [self] result in
            // Off the driver thread, onto the download threads, before anything touches the disk.
            context.threads.async {
                self.end(self.conclude(result, sink: sink, temporary: temporary, siteSetAside: siteSetAside))
            }
        }
        inFlight.withLock { $0 = task }
        if isCancelled { task.cancel() }
    }

    /// Ends the attempt: a verified image is first hashed and transformed as the request asks, on this slot.
    private func end(_ outcome: Outcome) {
        var outcome = outcome
        if case let .verified(image) = outcome, let hasher = request.hasher, !isCancelled {
            outcome = .verified(hasher.apply(to: image))
        }
        if case let .verified(image) = outcome, let transform = request.transform, !isCancelled {
            switch transform.apply(to: image, blurring: request.blurBoxes) {
            case let .success(transformed): outcome = .verified(transformed)
            case let .failure(error): outcome = .failed(error, next: .none)
            }
        }
        finish()
        completion(outcome)
    }

    private func conclude(
        _ result: Result<HTTPResponse, TransportError>, sink: HashingFileSink, temporary: AtomicFile.Temporary, siteSetAside: [ConsentEvidence]
    ) -> Outcome {
        // A 2xx body may still be (partly) in the sink's memory: write it out before the file is closed.
        var body: Result<Data?, FileError> = .success(nil)
        if case let .success(response) = result, response.isSuccess {
            do throws(FileError) {
                body = .success(try sink.finish())
            } catch {
                body = .failure(error)
            }
        }
        let outcome = verify(result, body: body, sink: sink, temporary: temporary, siteSetAside: siteSetAside)
        close(temporary.descriptor)
        if case .verified = outcome {} else { AtomicFile.remove(temporary.url) }  // only a verified image is handed on
        return outcome
    }

    private func verify(
        _ result: Result<HTTPResponse, TransportError>, body: Result<Data?, FileError>, sink: HashingFileSink, temporary: AtomicFile.Temporary,
        siteSetAside: [ConsentEvidence]
    ) -> Outcome {
        let response: HTTPResponse
        switch result {
        case .failure(.cancelled):
            return .failed(.cancelled, next: .none)
        case .failure(.destinationFailed) where sink.earlyRejection != nil:
            return .failed(.rejected(sink.earlyRejection!), next: .none)
        case .failure(.destinationFailed) where sink.writeError != nil:
            return .failed(.filesystem(sink.writeError!), next: .none)
        case let .failure(error):
            // A timeout or a stall spent the attempt's time: not retried now (a dead host would hold a slot for
            // retries × --timeout), filed transient for --retry-failed.
            return .failed(.transport(error), next: error.isTransient && !error.spentItsTime ? .retry : .none)
        case let .success(value):
            response = value
        }
        guard response.isSuccess else {
            let status = response.status
            let retryAfter = (status == 429 || status == 503) ? response.retryAfter() : nil
            let next: NextAttempt =
                if status == 429 || (status == 503 && retryAfter != nil) { .throttled(retryAfter: retryAfter) }
                else if RetryPolicy.isRetryable(status: status) { .retry }
                else { .none }
            return .failed(.statusUnacceptable(status), next: next)
        }
        // The response's headers, before the body is looked at.
        var setAside = siteSetAside
        if let consent = request.consent {
            switch consent.verdict(ResponseSignals.evidence(headers: response.headers, robotsTag: consent.robotsTag)) {
            case let .refused(reservation): return .keptOut(.optedOut(reservation))
            case let .allowed(ignored): setAside += ignored
            }
        }
        let inMemory: Data?
        switch body {
        case let .failure(error):
            return .failed(.filesystem(error), next: .none)
        case let .success(data):
            inMemory = data
        }
        let info: ImageInfo
        do {
            // From memory when the whole body is still there; otherwise read back from the file.
            info = try inMemory.map(context.validator.validate) ?? context.validate(temporary, count: sink.written)
        } catch let rejection as ImageRejection {
            // A cut-off body that curl did not flag (no Content-Length) is worth another try.
            let next: NextAttempt = if case .truncated = rejection { .retry } else { .none }
            return .failed(.rejected(rejection), next: next)
        } catch {
            return .failed(.filesystem(FileError(operation: "read", path: temporary.url.path, code: EIO)), next: .none)
        }
        // The row's digest, once the bytes are known to be a whole image (a body cut short is `truncated`, and retried).
        let sha256 = sink.digest()
        if let expected = request.expectedDigest {
            let served = expected.algorithm == .md5 ? sink.md5Digest() ?? "" : sha256
            if !expected.matches(served) {
                return .failed(.hashMismatch(expected: expected, served: served), next: .none)
            }
        }
        if let reason = request.filter?.rejection(for: info) {
            return .keptOut(.filtered(reason))
        }
        var declarations = ImageDeclarations()
        if let consent = request.consent {
            switch consent.judge(marks: info.marks, setAside: setAside) {
            case let .keptOut(outcome): return .keptOut(outcome)
            case let .kept(judged): declarations = judged
            }
        }
        var image = VerifiedImage(
            url: request.url,
            effectiveURL: response.effectiveURL,
            temporaryFile: temporary.url,
            info: info,
            bytes: sink.written,
            sha256: sha256,
            source: .none,
            attempts: attempt,
            fetchedAt: Date()
        )
        image.declarations = declarations
        context.storeInCache(image)
        return .verified(image)
    }
}
