import Foundation
import MirrorSync
import MirrorCore
import MirrorImages
import MirrorStorage
import MirrorTransport

/// Downloads images concurrently into folders, verifies every one, and retries politely.
///
/// One decision point: under the manager's one lock, a ``SlotMachine`` value decides when every attempt starts — at
/// most `concurrency` at once, `perHost` per host, a host's `--host-rate` spacing taken at the start, 429 slow-downs,
/// retry waits. It is told what happened and answers with actions; the manager carries them out. Each attempt is a
/// cancellable asynchronous `ImageDownloadOperation`, started on the download threads as soon as the machine starts
/// it — on the very thread whose attempt freed the slot, when that attempt ended there — and those threads verify
/// (and transform) each image when its transfer ends. `CurlMultiDriver` threads do the I/O. A failed attempt is retried by `RetryPolicy` (never sooner than a `Retry-After` asks) as a fresh
/// operation, so a waiting retry holds no slot; one timer wakes the machine when a retry falls due or a host's
/// slow-down or spacing ends.
///
/// Each download ends in exactly one `DownloadResult`, delivered on an arbitrary thread: a
/// `VerifiedImage` in a temporary file inside the request's folder (publish it with `AtomicFile`, or
/// remove it), the row's outcome when it was kept out on purpose (filtered, opted out, disallowed), or a
/// `DownloadError`.
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
        /// A limit on one whole attempt (`--timeout`), or nil (the default) for ``defaultDeadline(maximumBytes:)``.
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

        /// The longest one attempt may take: ``timeout`` when set, else ``defaultDeadline(maximumBytes:)``.
        public var attemptDeadline: Duration { timeout ?? Self.defaultDeadline(maximumBytes: maximumBytes) }

        /// The deadline of an attempt when `--timeout` is not given: 15 s, plus the largest image's time at 256 KiB/s,
        /// at most 5 minutes — 215 s with the default 50 MiB. A body that keeps coming just above the stall floor (1,000
        /// bytes/s) would otherwise hold its row, and the run, for hours (50 MB at 1.5 kB/s: 9.7 hours); 256
        /// KiB/s is a slow mobile link, so a whole image the server really sends is not cut short.
        public static func defaultDeadline(maximumBytes: Int64) -> Duration {
            let seconds = 15 + Double(max(0, maximumBytes)) / Double(256 * 1024)
            return .milliseconds(Int64(min(300, seconds) * 1000))
        }

        /// Builds a configuration by adjusting the defaults.
        public init(_ configure: (inout Configuration) -> Void) {
            configure(&self)
        }

        /// An image's transfer as these settings bound it (its URL and destination are the caller's to set).
        var transferTemplate: TransferRequest {
            var template = TransferRequest(url: URL(string: "http://localhost/")!)
            template.userAgent = userAgent
            template.connectTimeout = connectTimeout
            template.totalTimeout = attemptDeadline
            template.stall = stall
            template.maximumBodyBytes = maximumBytes
            template.connectTo = connectTo
            return template
        }
    }

    public let configuration: Configuration

    /// The download threads: where the queue begins each attempt, and where each transfer's body is verified when it
    /// ends.
    private let threads: DispatchQueue
    /// The executor of the attempts (``ImageDownloadOperation``s): what the slot machine starts is added to it, and it
    /// begins each on ``threads``. It decides nothing: the machine has decided already.
    private let queue: OperationQueue
    /// The transport.
    package let loader: any HTTPLoading
    /// Stops the driver this manager made for itself; nil when it was given a loader (whose owner stops it).
    private let ownedDriver: CurlMultiDriver?
    private let context: DownloadContext
    private let state: Locked<State>

    private struct Ticket {
        let request: DownloadRequest
        let completion: @Sendable (DownloadResult) -> Void
        var attempt = 1
        /// Whether the next attempt opens a connection of its own: the last one's answer was not HTTP over a connection
        /// kept alive (bytes an earlier response left past its length), the connection's fault, not the image's.
        var freshConnection = false
        /// The attempt holding a slot, while one does (the machine knows whether it waits, runs or waits to retry).
        var operation: ImageDownloadOperation?
        var cancelled = false
    }

    private struct State {
        var tickets: [Int: Ticket] = [:]
        var nextID = 0
        var slots: SlotMachine
        var idleWaiters: [CheckedContinuation<Void, Never>] = []
        var random = SystemRandomNumberGenerator()
        /// The one timer: when it fires, and its task.
        var timer: (deadline: ContinuousClock.Instant, task: Task<Void, Never>)?
        /// Requests outside an attempt (a host's second site file) waiting for the host's rate, woken by the one timer.
        var paced: [(at: ContinuousClock.Instant, continuation: CheckedContinuation<Void, Never>)] = []
    }

    /// What the machine's actions come to, carried out once the lock is released.
    private struct Work {
        var operations: [ImageDownloadOperation] = []
        var wake: ContinuousClock.Instant?
    }

    /// Builds a manager; it makes its own ``CurlMultiDriver`` unless given a loader (which it then does not shut down).
    ///
    /// - Parameter onRetry: Called when an attempt failed and another follows, synchronously on the thread where that
    ///   was decided, so it must return at once (a callback rather than a stream, which would wake a task for each).
    ///   How each download ends is its completion's to say.
    public init(configuration: Configuration = Configuration(), loader: (any HTTPLoading)? = nil, onRetry: (@Sendable (DownloadRetry) -> Void)? = nil) {
        self.configuration = configuration
        let ownedDriver = loader == nil ? CurlMultiDriver(threads: CurlMultiDriver.threadCount(forConcurrency: configuration.concurrency)) : nil
        self.ownedDriver = ownedDriver
        self.loader = loader ?? ownedDriver!
        let threads = DispatchQueue(label: "mirror.downloads", attributes: .concurrent)
        self.threads = threads
        let queue = OperationQueue()
        queue.name = "mirror.downloads"
        queue.underlyingQueue = threads
        // No limit here: the slot machine admits at most `concurrency`, and a limit here too would hold back, for a
        // moment, an attempt started while the queue had yet to count one that just finished.
        queue.maxConcurrentOperationCount = OperationQueue.defaultMaxConcurrentOperationCount
        self.queue = queue
        let slots = SlotMachine(concurrency: configuration.concurrency, perHost: configuration.perHost, rate: configuration.hostRate)
        let state = Locked(State(slots: slots))
        self.state = state
        context = DownloadContext(
            loader: self.loader,
            transferTemplate: configuration.transferTemplate,
            // Marks are read in the same walk over the bytes in memory (the consent policy judges them).
            validator: ImageValidator(pixelLimit: configuration.pixelLimit, readsMarks: true),
            cache: configuration.cache,
            threads: threads,
            buffers: BufferPool(size: HashingFileSink.memoryLimit(concurrency: configuration.concurrency)),
            onRetry: onRetry,
            sleeper: configuration.sleeper,
            hasHostRate: configuration.hostRate != nil
        )
    }

    deinit {
        ownedDriver?.shutdown()
    }

    // MARK: Downloading

    /// Starts downloading one image; `completion` runs exactly once, on an arbitrary thread.
    @discardableResult
    public func download(_ request: DownloadRequest, completion: @escaping @Sendable (DownloadResult) -> Void) -> DownloadTicket {
        let now = configuration.sleeper.now()
        let (id, work) = state.withLock { state -> (Int, Work) in
            state.nextID += 1
            let id = state.nextID
            state.tickets[id] = Ticket(request: request, completion: completion)
            return (id, carryOut(state.slots.submit(id, host: request.url.host ?? "", now: now), in: &state))
        }
        run(work)
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
        state.withLock { $0.slots.noteRequest(host: host, now: now) }
    }

    /// Waits until a request to `host` made outside the manager (the second of its site files) may start under
    /// `--host-rate`, and takes that start; returns at once without a rate. The wait is the manager's one timer's, as
    /// every other wait is.
    public func waitForHostRate(host: String) async {
        guard configuration.hostRate != nil else { return }
        let now = configuration.sleeper.now()
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let start = state.withLock { state -> ContinuousClock.Instant? in
                guard let start = state.slots.reserveStart(host: host, now: now), start > now else { return nil }
                state.paced.append((start, continuation))
                return start
            }
            if let start { armTimer(for: start) } else { continuation.resume() }
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
        let now = configuration.sleeper.now()
        state.withLock { state in
            for id in ids {
                guard var ticket = state.tickets[id], !ticket.cancelled else { continue }
                ticket.cancelled = true
                state.tickets[id] = ticket
                if state.slots.cancel(id, now: now) {
                    // Waiting for a slot or for its retry: nothing to stop, so it ends now (not when a 30-s timer fires).
                    ended.append(id)
                } else if let operation = ticket.operation {
                    running.append(operation)
                }
            }
        }
        for id in ended { end(id, .failed(.cancelled)) }
        for operation in running { operation.cancel() }
    }

    // MARK: Attempts

    /// Carries out the machine's actions under the lock: makes the operations of the attempts that start (the caller
    /// starts them) and notes when to wake.
    private func carryOut(_ actions: [SlotMachine.Action], in state: inout State) -> Work {
        var work = Work()
        for action in actions {
            switch action {
            case let .start(id):
                if let operation = start(id, in: &state) { work.operations.append(operation) }
            case let .wake(at):
                work.wake = at
            }
        }
        return work
    }

    /// Runs what the lock decided: each attempt that starts is added to the queue, which begins it on the download
    /// threads.
    private func run(_ work: Work) {
        for operation in work.operations { queue.addOperation(operation) }
        if let wake = work.wake { armTimer(for: wake) }
    }

    /// Makes the operation of an attempt that just got its slot (under the lock; the caller starts it).
    private func start(_ id: Int, in state: inout State) -> ImageDownloadOperation? {
        guard var ticket = state.tickets[id] else { return nil }
        let operation = ImageDownloadOperation(
            request: ticket.request, attempt: ticket.attempt, freshConnection: ticket.freshConnection, context: context
        ) { [self] outcome in
            attemptFinished(id, outcome: outcome)
        }
        if ticket.cancelled { operation.cancel() }
        ticket.operation = operation
        state.tickets[id] = ticket
        return operation
    }

    /// What follows an attempt, decided under one lock: the host's limits, the retry, and the attempts that start.
    private func attemptFinished(_ id: Int, outcome: ImageDownloadOperation.Outcome) {
        let now = configuration.sleeper.now()
        enum Next {
            case end(DownloadResult)
            case retry(URL, attempt: Int, delay: Duration, reason: String)
        }
        let (next, work) = state.withLock { state -> (Next?, Work) in
            guard var ticket = state.tickets[id] else { return (nil, Work()) }
            ticket.operation = nil
            let next: Next
            let hostOutcome: SlotMachine.Outcome
            var retryAt: ContinuousClock.Instant?
            switch outcome {
            case .yielded:
                // Its host's site files took its start: it queues again behind the host's rate, holding no slot.
                state.tickets[id] = ticket
                return (nil, carryOut(state.slots.yielded(id, now: now), in: &state))
            case let .verified(image):
                hostOutcome = .success
                if ticket.cancelled {
                    AtomicFile.remove(image.temporaryFile)
                    next = .end(.failed(.cancelled))
                } else {
                    next = .end(.verified(image))
                }
            case let .keptOut(outcome):
                hostOutcome = .failure
                next = .end(ticket.cancelled ? .failed(.cancelled) : .keptOut(outcome))
            case let .failed(error, nextAttempt):
                hostOutcome = if case .throttled = nextAttempt { .throttled(retryAfter: nextAttempt.retryAfter) } else { .failure }
                var decision = ticket.cancelled ? .giveUp : configuration.retry.decision(
                    afterAttempt: ticket.attempt, retryable: nextAttempt != .none, retryAfter: nextAttempt.retryAfter, using: &state.random
                )
                // An answer that was not HTTP over a connection kept alive is that connection's fault (bytes an
                // earlier response left past its length): once more at once, on a fresh connection, whatever the
                // retry budget — the image has not been asked for yet.
                if case .transport(.badResponse(_, reusedConnection: true)) = error, !ticket.freshConnection, !ticket.cancelled {
                    ticket.freshConnection = true
                    decision = .retry(after: .zero)
                }
                switch decision {
                case .giveUp:
                    next = .end(.failed(ticket.cancelled ? .cancelled : error))
                case let .retry(delay):
                    ticket.attempt += 1
                    retryAt = now + delay
                    next = .retry(ticket.request.url, attempt: ticket.attempt, delay: delay, reason: error.description)
                }
            }
            state.tickets[id] = ticket
            let actions = state.slots.finished(id, outcome: hostOutcome, retryAt: retryAt, now: now)
            return (next, carryOut(actions, in: &state))
        }
        switch next {
        case nil:
            break
        case let .end(result):
            end(id, result)
        case let .retry(url, attempt, delay, reason):
            context.onRetry?(DownloadRetry(url: url, attempt: attempt, delay: delay, reason: reason))
        }
        run(work)
    }

    /// Arms the one timer for `deadline`, unless it is already set for that time or sooner.
    private func armTimer(for deadline: ContinuousClock.Instant) {
        let sleeper = configuration.sleeper
        state.withLock { state in
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

    /// Time passed: the machine queues the retries that fell due and starts what may start now; paced requests whose
    /// start came go on.
    private func timerFired(_ deadline: ContinuousClock.Instant) {
        let now = max(configuration.sleeper.now(), deadline)
        let (work, due, next) = state.withLock { state -> (Work, [CheckedContinuation<Void, Never>], ContinuousClock.Instant?) in
            if state.timer?.deadline == deadline { state.timer = nil }
            let due = state.paced.filter { $0.at <= now }.map(\.continuation)
            state.paced.removeAll { $0.at <= now }
            return (carryOut(state.slots.tick(now: now), in: &state), due, state.paced.map(\.at).min())
        }
        for continuation in due { continuation.resume() }
        if let next { armTimer(for: next) }
        run(work)
    }

    private func end(_ id: Int, _ result: DownloadResult) {
        let (ticket, waiters) = state.withLock { state -> (Ticket?, [CheckedContinuation<Void, Never>]) in
            let ticket = state.tickets.removeValue(forKey: id)
            guard state.tickets.isEmpty else { return (ticket, []) }
            defer { state.idleWaiters.removeAll() }
            return (ticket, state.idleWaiters)
        }
        guard let ticket else { return }
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
