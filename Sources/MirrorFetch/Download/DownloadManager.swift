import Foundation
import MirrorCore
import MirrorImages
import MirrorStorage
import MirrorTransport

/// Downloads images concurrently into folders, verifies every one, and retries politely.
///
/// One scheduler: an `OperationQueue` of asynchronous `ImageDownloadOperation`s decides what runs (at most
/// `concurrency` at once, each cancellable on its own), and its own threads verify each image when its transfer ends.
/// In front of it, under the manager's one lock, a ``HostLimits`` value keeps every host under `perHost` requests and
/// holds throttled hosts back; it is told what happened and answers with the downloads to start. One
/// `CurlMultiDriver` thread does all the I/O. A failed attempt is retried by `RetryPolicy` (never sooner than a
/// `Retry-After` asks) as a fresh operation, so a waiting retry holds no slot; one timer wakes the retries and the
/// slowed-down hosts whose time has come.
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
        /// Requests started per host per second at most (`--host-rate`), or `nil` (the default) for no limit beside
        /// ``perHost``.
        public var hostRate: Double?
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
        /// Where to connect instead of the URL's host (curl's `--connect-to`), for downloads and robots.txt alike.
        public var connectTo: [String] = []
        /// The clock and the sleep of the manager's one timer (retry delays, host slow-downs). Default ``Sleeper/real``.
        public var sleeper: Sleeper = .real
        /// The `User-Agent`. Default `mirror/<version> libcurl/<version>`.
        public var userAgent: String = MirrorVersion.userAgent
        /// Images declaring more pixels are refused (`too-many-pixels`), resized or not: decompression bombs, and images
        /// a Pillow-based loader would refuse. Default 178,956,970, Pillow's own limit (`--max-pixels`).
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

    /// The one scheduler: decides what runs (at most `concurrency` operations), and its threads run each operation's
    /// verification when its transfer ends.
    private let queue: OperationQueue
    /// The transport.
    package let loader: any HTTPLoading
    /// Stops the driver this manager made for itself; nil when it was given a loader (whose owner stops it).
    private let ownedDriver: CurlMultiDriver?
    private let context: DownloadContext
    private let state: Locked<State>

    private struct Ticket {
        let request: DownloadRequest
        let host: String
        let completion: @Sendable (DownloadResult) -> Void
        var attempt = 1
        var phase = Phase.waitingForHost
        var cancelled = false
    }

    private enum Phase {
        /// Waiting in ``HostLimits`` for a slot on its host.
        case waitingForHost
        /// An operation holds a slot on the host (queued for a thread, or transferring, or verifying).
        case running(ImageDownloadOperation)
        /// Between attempts, until this time, holding no slot.
        case waitingForRetry(until: ContinuousClock.Instant)
    }

    private struct State {
        var tickets: [Int: Ticket] = [:]
        var nextID = 0
        var limits: HostLimits
        var idleWaiters: [CheckedContinuation<Void, Never>] = []
        var random = SystemRandomNumberGenerator()
        /// Tickets in ``Phase/waitingForRetry(until:)``.
        var retriesWaiting = 0
        /// The one timer (retry delays and host slow-downs): when it fires, and its task.
        var timer: (deadline: ContinuousClock.Instant, task: Task<Void, Never>)?
    }

    /// Builds a manager; it makes its own ``CurlMultiDriver`` unless given a loader (which it then does not shut down).
    ///
    /// - Parameter onEvent: Called with every ``DownloadEvent`` (queued, started, bytes, retrying, verified, failed),
    ///   synchronously on the thread where it happens — the driver's among them, so it must return at once. A
    ///   callback rather than a stream: a stream woke a consumer task for each of the five events of every image.
    public init(configuration: Configuration = Configuration(), loader: (any HTTPLoading)? = nil, onEvent: (@Sendable (DownloadEvent) -> Void)? = nil) {
        self.configuration = configuration
        let ownedDriver = loader == nil ? CurlMultiDriver(threads: CurlMultiDriver.threadCount(forConcurrency: configuration.concurrency)) : nil
        self.ownedDriver = ownedDriver
        self.loader = loader ?? ownedDriver!
        let threads = DispatchQueue(label: "mirror.downloads", attributes: .concurrent)
        queue = OperationQueue()
        queue.name = "mirror.downloads"
        queue.underlyingQueue = threads
        queue.maxConcurrentOperationCount = max(1, configuration.concurrency)
        let state = Locked(State(limits: HostLimits(perHost: configuration.perHost, rate: configuration.hostRate)))
        self.state = state
        var template = TransferRequest(url: URL(string: "http://localhost/")!)
        template.userAgent = configuration.userAgent
        template.connectTimeout = configuration.connectTimeout
        template.totalTimeout = configuration.timeout
        template.stall = configuration.stall
        template.maximumBodyBytes = configuration.maximumBytes
        template.connectTo = configuration.connectTo
        context = DownloadContext(
            loader: self.loader,
            transferTemplate: template,
            validator: ImageValidator(pixelLimit: configuration.pixelLimit),
            cache: configuration.cache,
            threads: threads,
            buffers: BufferPool(size: HashingFileSink.memoryLimit(concurrency: configuration.concurrency)),
            observer: onEvent,
            sleeper: configuration.sleeper,
            reserveStart: configuration.hostRate == nil ? nil : Self.reserving(in: state, sleeper: configuration.sleeper)
        )
    }

    deinit {
        ownedDriver?.shutdown()
    }

    /// `DownloadContext.reserveStart` over the manager's state.
    private static func reserving(in state: Locked<State>, sleeper: Sleeper) -> @Sendable (String) -> Duration {
        { host in
            let now = sleeper.now()
            let start: ContinuousClock.Instant? = state.withLock { $0.limits.reserveStart(host: host, now: now) }
            return (start ?? now) - now
        }
    }

    // MARK: Downloading

    /// Starts downloading one image; `completion` runs exactly once, on an arbitrary thread.
    @discardableResult
    public func download(_ request: DownloadRequest, completion: @escaping @Sendable (DownloadResult) -> Void) -> DownloadTicket {
        let now = configuration.sleeper.now()
        let (id, admission, operation) = state.withLock { state -> (Int, HostLimits.Admission, ImageDownloadOperation?) in
            state.nextID += 1
            let id = state.nextID
            state.tickets[id] = Ticket(request: request, host: request.url.host ?? "", completion: completion)
            let admission = state.limits.request(id, host: request.url.host ?? "", now: now)
            return (id, admission, admission == .start ? start(id, in: &state) : nil)
        }
        context.emit(.queued(request.url))
        if let operation { queue.addOperation(operation) }
        if admission == .waitForTime { armTimer() }
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

    /// Counts a request to `host` made outside the manager (its robots.txt) against the host's rate, when there is one.
    public func noteRequest(host: String) {
        guard configuration.hostRate != nil else { return }
        let now = configuration.sleeper.now()
        state.withLock { $0.limits.noteRequest(host: host, now: now) }
    }

    /// Downloads in progress or waiting (including waiting retries).
    public var pendingCount: Int { state.withLock { $0.tickets.count } }

    /// Hosts with per-host state kept (limits, slow-downs, waiting downloads).
    var trackedHostCount: Int { state.withLock { $0.limits.hostCount } }

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
        cancel(ids: [ticket.id])
    }

    /// Cancels every pending download.
    public func cancelAll() {
        cancel(ids: state.withLock { Array($0.tickets.keys) })
    }

    /// Cancels everything, waits for the completions, and stops the driver if this manager made it.
    public func shutdown() async {
        cancelAll()
        await waitUntilIdle()
        state.withLock { state in
            state.timer?.task.cancel()
            state.timer = nil
        }
        ownedDriver?.shutdown()
    }

    private func cancel(ids: [Int]) {
        var running: [ImageDownloadOperation] = []
        var ended: [Int] = []
        state.withLock { state in
            for id in ids {
                guard var ticket = state.tickets[id], !ticket.cancelled else { continue }
                ticket.cancelled = true
                state.tickets[id] = ticket
                switch ticket.phase {
                case let .running(operation):
                    running.append(operation)
                case .waitingForRetry:
                    // Nothing to stop: end now rather than when the (maybe 30 s) timer fires.
                    state.retriesWaiting -= 1
                    ended.append(id)
                case .waitingForHost:
                    if state.limits.withdraw(id, host: ticket.host) { ended.append(id) }
                }
            }
        }
        for id in ended { end(id, .failure(.cancelled)) }
        for operation in running { operation.cancel() }
    }

    // MARK: Attempts

    /// Makes the operation of a ticket that just got a slot on its host (under the lock; the caller adds it to the queue).
    private func start(_ id: Int, in state: inout State) -> ImageDownloadOperation? {
        guard var ticket = state.tickets[id] else { return nil }
        let operation = ImageDownloadOperation(request: ticket.request, attempt: ticket.attempt, context: context) { [self] outcome in
            attemptFinished(id, outcome: outcome)
        }
        if ticket.cancelled { operation.cancel() }
        ticket.phase = .running(operation)
        state.tickets[id] = ticket
        return operation
    }

    /// What follows an attempt, decided under one lock: the host's limits, the retry, and the downloads that start.
    private func attemptFinished(_ id: Int, outcome: ImageDownloadOperation.Outcome) {
        let now = configuration.sleeper.now()
        enum Next {
            case end(DownloadResult)
            case retry(URL, attempt: Int, delay: Duration, reason: String)
        }
        let (next, starts, needsTimer) = state.withLock { state -> (Next?, [ImageDownloadOperation], Bool) in
            guard var ticket = state.tickets[id] else { return (nil, [], false) }
            let next: Next
            let hostOutcome: HostLimits.Outcome
            switch outcome {
            case let .verified(image):
                hostOutcome = .success
                if ticket.cancelled {
                    AtomicFile.remove(image.temporaryFile)
                    next = .end(.failure(.cancelled))
                } else {
                    next = .end(.success(image))
                }
            case let .failed(error, retryable, retryAfter, throttled):
                hostOutcome = throttled ? .throttled(retryAfter: retryAfter) : .failure
                let decision = ticket.cancelled ? .giveUp : configuration.retry.decision(
                    afterAttempt: ticket.attempt, retryable: retryable, retryAfter: retryAfter, using: &state.random
                )
                switch decision {
                case .giveUp:
                    next = .end(.failure(ticket.cancelled ? .cancelled : error))
                case let .retry(delay):
                    ticket.attempt += 1
                    ticket.phase = .waitingForRetry(until: now + delay)
                    state.tickets[id] = ticket
                    state.retriesWaiting += 1
                    next = .retry(ticket.request.url, attempt: ticket.attempt, delay: delay, reason: error.description)
                }
            }
            let ids = state.limits.finished(host: ticket.host, outcome: hostOutcome, now: now)
            let needsTimer: Bool = switch (next, hostOutcome) {
            case (.retry, _), (_, .throttled(retryAfter: .some)): true
            default: state.limits.spacing != nil  // a host's next download may wait for its spacing
            }
            return (next, ids.compactMap { start($0, in: &state) }, needsTimer)
        }
        switch next {
        case nil:
            break
        case let .end(result):
            if case let .success(image) = result {
                context.emit(.verified(image.url, image.info, bytes: image.bytes, source: image.source))
            }
            end(id, result)
        case let .retry(url, attempt, delay, reason):
            context.emit(.retrying(url, attempt: attempt, delay: delay, reason: reason))
        }
        for operation in starts { queue.addOperation(operation) }
        if needsTimer { armTimer() }
    }

    /// Arms the one timer for the earliest retry or host slow-down, unless it is already set for that time or sooner.
    private func armTimer() {
        let sleeper = configuration.sleeper
        state.withLock { state in
            let retry = state.retriesWaiting == 0 ? nil : state.tickets.values.lazy.compactMap { ticket -> ContinuousClock.Instant? in
                if case let .waitingForRetry(until) = ticket.phase { until } else { nil }
            }.min()
            guard let deadline = [retry, state.limits.nextDeadline].compactMap({ $0 }).min() else { return }
            if let timer = state.timer, timer.deadline <= deadline { return }
            state.timer?.task.cancel()
            let delay = deadline - sleeper.now()
            let task = Task { [weak self] in
                guard (try? await sleeper.sleep(delay)) != nil else { return }
                self?.timerFired(deadline)
            }
            state.timer = (deadline, task)
        }
    }

    /// Retries whose delay is over ask their hosts again; hosts whose slow-down ended let their waiting downloads start.
    private func timerFired(_ deadline: ContinuousClock.Instant) {
        let now = max(configuration.sleeper.now(), deadline)
        let starts = state.withLock { state -> [ImageDownloadOperation] in
            if state.timer?.deadline == deadline { state.timer = nil }
            var ids = state.limits.wake(now: now)
            let due = state.retriesWaiting == 0 ? [] : state.tickets.compactMap { id, ticket -> (Int, String)? in
                guard case let .waitingForRetry(until) = ticket.phase, until <= now else { return nil }
                return (id, ticket.host)
            }
            for (id, host) in due {
                state.tickets[id]?.phase = .waitingForHost
                state.retriesWaiting -= 1
                if state.limits.request(id, host: host, now: now) == .start { ids.append(id) }
            }
            return ids.compactMap { start($0, in: &state) }
        }
        for operation in starts { queue.addOperation(operation) }
        armTimer()
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
