import Foundation
import MirrorImages
import MirrorTransport

/// Downloads images concurrently into folders, verifies every one, and retries politely.
///
/// An `OperationQueue` of asynchronous `ImageDownloadOperation`s decides what runs (at most
/// `concurrency` at once, each cancellable on its own); a `HostGate` in front of the queue keeps every
/// host under `perHost` requests and holds throttled hosts back; one `CurlMultiDriver` thread does all
/// the I/O. A failed attempt is retried by `RetryPolicy` (never sooner than a `Retry-After` asks) as a
/// fresh operation, so a waiting retry holds no slot.
///
/// Each download ends in exactly one `DownloadResult`, delivered on an arbitrary thread: a
/// `VerifiedImage` in a temporary file inside the request's folder (publish it with `AtomicFile`, or
/// remove it), or a `DownloadError`.
///
/// ```swift
/// let manager = DownloadManager(configuration: .init { $0.concurrency = 32 })
/// let result = await manager.download(DownloadRequest(url: url, directory: folder))
/// ```
public final class DownloadManager: Sendable {
    /// Settings of a manager; fixed once it is built.
    public struct Configuration: Sendable {
        // MARK: Limits

        /// Downloads in flight at most (`--concurrency`). Default 16.
        public var concurrency: Int = 16
        /// Requests in flight per host at most (`--per-host`). Default 6.
        public var perHost: Int = 6
        /// Retries, backoff and `Retry-After` handling (`--retries`). Defaults: 3 retries, 0.5 s base, 30 s cap.
        public var retry = RetryPolicy()
        /// The largest image accepted (`--max-bytes`). Default 50 MiB.
        public var maximumBytes: Int64 = 50 * 1024 * 1024
        /// Time to connect. Default 10 s.
        public var connectTimeout: Duration = .seconds(10)
        /// A limit on one whole attempt (`--timeout`), or nil for none (the default; stalls are caught anyway).
        public var timeout: Duration?
        /// Stall detection. Default: under 1,000 bytes/s for 20 s.
        public var stall = TransferRequest.StallPolicy()
        /// The clock and the sleep of retry delays and host cool-downs. Default ``Sleeper/real``.
        public var sleeper: Sleeper = .real
        /// The `User-Agent`. Default `mirror/<version> libcurl/<version>`.
        public var userAgent: String = MirrorVersion.userAgent
        /// Images with more pixels are refused (decompression bombs). Default 200 million.
        public var pixelLimit: Int = ImageValidator.defaultPixelLimit

        // MARK: Caching

        /// The cache of verified images (the same façade that holds API pages), or nil for none (`--no-cache`).
        /// Default none.
        public var cache: ImageCache?

        public init() {}

        /// Builds a configuration by adjusting the defaults.
        public init(_ configure: (inout Configuration) -> Void) {
            configure(&self)
        }
    }

    public let configuration: Configuration

    private let queue: OperationQueue
    private let gate: HostGate
    /// The transport.
    let loader: any HTTPLoading
    /// Stops the driver this manager made for itself; nil when it was given a loader (whose owner stops it).
    private let ownedDriver: CurlMultiDriver?
    private let context: DownloadContext
    private let state = Locked(State())

    private struct Ticket {
        let request: DownloadRequest
        let completion: @Sendable (DownloadResult) -> Void
        var attempt = 1
        var gateID: Int?
        var operation: ImageDownloadOperation?
        var cancelled = false
        /// Between attempts: waiting for the retry timer, holding no slot.
        var waitingForRetry = false
    }

    private struct State {
        var tickets: [Int: Ticket] = [:]
        var nextID = 0
        var idleWaiters: [CheckedContinuation<Void, Never>] = []
        var random = SystemRandomNumberGenerator()
    }

    /// Builds a manager; it makes its own ``CurlMultiDriver`` unless given a loader (which it then does not shut down).
    ///
    /// - Parameter onEvent: Called with every ``DownloadEvent`` (queued, started, bytes, retrying, verified, failed),
    ///   synchronously on the thread where it happens — the driver's among them, so it must return at once. A
    ///   callback rather than a stream: a stream woke a consumer task for each of the five events of every image.
    public init(configuration: Configuration = Configuration(), loader: (any HTTPLoading)? = nil, onEvent: (@Sendable (DownloadEvent) -> Void)? = nil) {
        self.configuration = configuration
        let ownedDriver = loader == nil ? CurlMultiDriver() : nil
        self.ownedDriver = ownedDriver
        self.loader = loader ?? ownedDriver!
        queue = OperationQueue()
        queue.name = "mirror.downloads"
        queue.maxConcurrentOperationCount = max(1, configuration.concurrency)
        gate = HostGate(perHost: configuration.perHost, sleeper: configuration.sleeper)
        var template = TransferRequest(url: URL(string: "http://localhost/")!)
        template.userAgent = configuration.userAgent
        template.connectTimeout = configuration.connectTimeout
        template.totalTimeout = configuration.timeout
        template.stall = configuration.stall
        template.maximumBodyBytes = configuration.maximumBytes
        context = DownloadContext(
            loader: self.loader,
            transferTemplate: template,
            validator: ImageValidator(pixelLimit: configuration.pixelLimit),
            cache: configuration.cache,
            verifyQueue: DispatchQueue(label: "mirror.verify", attributes: .concurrent),
            buffers: BufferPool(size: HashingFileSink.memoryLimit(concurrency: configuration.concurrency)),
            observer: onEvent
        )
    }

    deinit {
        ownedDriver?.shutdown()
    }

    // MARK: Downloading

    /// Starts downloading one image; `completion` runs exactly once, on an arbitrary thread.
    @discardableResult
    public func download(_ request: DownloadRequest, completion: @escaping @Sendable (DownloadResult) -> Void) -> DownloadTicket {
        let id = state.withLock { state in
            state.nextID += 1
            state.tickets[state.nextID] = Ticket(request: request, completion: completion)
            return state.nextID
        }
        context.emit(.queued(request.url))
        submit(id)
        return DownloadTicket(id: id, manager: self)
    }

    /// Downloads one image and returns how it ended; cancelling the task cancels the download.
    public func download(_ request: DownloadRequest) async -> DownloadResult {
        let ticket = Locked<DownloadTicket?>(nil)
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let started = download(request) { continuation.resume(returning: $0) }
                ticket.withLock { $0 = started }
                if Task.isCancelled { started.cancel() }
            }
        } onCancel: {
            ticket.withLock { $0 }?.cancel()
        }
    }

    /// Downloads in progress or waiting (including waiting retries).
    public var pendingCount: Int { state.withLock { $0.tickets.count } }

    /// Returns when no download is pending.
    public func waitUntilIdle() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let idle = state.withLock { state -> Bool in
                if state.tickets.isEmpty { return true }
                state.idleWaiters.append(continuation)
                return false
            }
            if idle { continuation.resume() }
        }
    }

    // MARK: Cancelling

    /// Cancels one download; its completion reports `.cancelled` unless it already ended.
    public func cancel(_ ticket: DownloadTicket) {
        cancel(id: ticket.id)
    }

    /// Cancels every pending download.
    public func cancelAll() {
        let ids = state.withLock { Array($0.tickets.keys) }
        for id in ids { cancel(id: id) }
    }

    /// Cancels everything, waits for the completions, and stops the driver if this manager made it.
    public func shutdown() async {
        cancelAll()
        await waitUntilIdle()
        ownedDriver?.shutdown()
    }

    private func cancel(id: Int) {
        let (operation, endNow) = state.withLock { state -> (ImageDownloadOperation?, Bool) in
            guard var ticket = state.tickets[id], !ticket.cancelled else { return (nil, false) }
            ticket.cancelled = true
            state.tickets[id] = ticket
            // Between attempts there is nothing to stop: end now rather than when the (maybe 30 s) timer fires.
            if ticket.waitingForRetry { return (nil, true) }
            let host = ticket.request.url.host ?? ""
            if let gateID = ticket.gateID, gate.withdraw(host: host, id: gateID) {
                return (nil, true)
            }
            return (ticket.operation, false)
        }
        if endNow {
            end(id, .failure(.cancelled))
        } else {
            operation?.cancel()
        }
    }

    // MARK: Attempts

    private func submit(_ id: Int) {
        guard let (request, attempt) = state.withLock({ state -> (DownloadRequest, Int)? in
            guard let ticket = state.tickets[id] else { return nil }
            return (ticket.request, ticket.attempt)
        }) else { return }
        let host = request.url.host ?? ""
        let gateID = gate.submit(host: host) { [self] in
            let operation = ImageDownloadOperation(request: request, attempt: attempt, context: context) { [self] outcome in
                attemptFinished(id, host: host, outcome: outcome)
            }
            let cancelled = state.withLock { state -> Bool in
                state.tickets[id]?.operation = operation
                return state.tickets[id]?.cancelled ?? true
            }
            if cancelled { operation.cancel() }
            queue.addOperation(operation)
        }
        state.withLock { state in
            // Only meaningful while the work waits at the gate; harmless once it started.
            state.tickets[id]?.gateID = gateID
        }
    }

    private func attemptFinished(_ id: Int, host: String, outcome: ImageDownloadOperation.Outcome) {
        switch outcome {
        case let .verified(image):
            gate.finished(host: host, outcome: .success)
            if state.withLock({ $0.tickets[id]?.cancelled ?? true }) {
                AtomicFile.remove(image.temporaryFile)
                end(id, .failure(.cancelled))
                return
            }
            context.emit(.verified(image.url, image.info, bytes: image.bytes, source: image.source))
            end(id, .success(image))
        case let .failed(error, retryable, retryAfter, throttled):
            gate.finished(host: host, outcome: throttled ? .throttled(retryAfter: retryAfter) : .failure)
            let decision = state.withLock { state -> RetryPolicy.Decision? in
                guard var ticket = state.tickets[id] else { return nil }
                if ticket.cancelled { return .giveUp }
                let decision = configuration.retry.decision(
                    afterAttempt: ticket.attempt, retryable: retryable, retryAfter: retryAfter, using: &state.random
                )
                if case .retry = decision {
                    ticket.attempt += 1
                    ticket.operation = nil
                    ticket.gateID = nil
                    ticket.waitingForRetry = true
                    state.tickets[id] = ticket
                }
                return decision
            }
            switch decision {
            case nil:
                return
            case .giveUp:
                let cancelled = state.withLock { $0.tickets[id]?.cancelled ?? false }
                end(id, .failure(cancelled ? .cancelled : error))
            case let .retry(delay):
                let url = state.withLock { $0.tickets[id]?.request.url }
                if let url {
                    let attempt = state.withLock { $0.tickets[id]?.attempt ?? 0 }
                    context.emit(.retrying(url, attempt: attempt, delay: delay, reason: error.description))
                }
                configuration.sleeper.after(delay) { [self] in
                    // A ticket cancelled meanwhile has already ended; the rest go on with their next attempt.
                    let proceed = state.withLock { state -> Bool in
                        guard var ticket = state.tickets[id], !ticket.cancelled else { return false }
                        ticket.waitingForRetry = false
                        state.tickets[id] = ticket
                        return true
                    }
                    if proceed { submit(id) }
                }
            }
        }
    }

    private func end(_ id: Int, _ result: DownloadResult) {
        let (ticket, waiters) = state.withLock { state -> (Ticket?, [CheckedContinuation<Void, Never>]) in
            let ticket = state.tickets.removeValue(forKey: id)
            guard state.tickets.isEmpty else { return (ticket, []) }
            defer { state.idleWaiters.removeAll() }
            return (ticket, state.idleWaiters)
        }
        guard let ticket else { return }
        if case let .failure(error) = result {
            context.emit(.failed(ticket.request.url, error))
        }
        ticket.completion(result)
        for waiter in waiters { waiter.resume() }
    }

}

/// A handle on one download, for cancelling it.
public struct DownloadTicket: Sendable {
    /// Unique within its manager.
    public let id: Int
    private let manager: DownloadManager

    init(id: Int, manager: DownloadManager) {
        self.id = id
        self.manager = manager
    }

    /// Cancels the download.
    public func cancel() {
        manager.cancel(self)
    }
}
