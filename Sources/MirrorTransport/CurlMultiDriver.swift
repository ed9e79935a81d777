import CCurl
import CSyscalls
import Foundation
import MirrorSync

/// Runs HTTP transfers on driver threads, each of which drives a libcurl multi handle (one thread unless asked for
/// more: ``threadCount(forConcurrency:)``).
///
/// Callers start transfers from any thread and get exactly one completion per transfer: a
/// response or a `TransportError`. All I/O happens on the driver threads, each of which sleeps in
/// `curl_multi_poll` and is woken by `curl_multi_wakeup` whenever a transfer is added to it or cancelled,
/// so a cancel completes at once rather than at curl's next progress tick. The transfers of one thread share its
/// multi handle's connections and CA store (parsed once: ``CurlRuntime/usesCABundleOnly``); every transfer shares the
/// process's TLS sessions and DNS answers (``CurlRuntime/share``), so a host is looked up once an hour at most
/// (``Transfer/dnsCacheSeconds``) and a second connection to it resumes its TLS session.
///
/// Completions run **on the driver thread**: they must return quickly and hand any slow work
/// (validation, fsync, database writes) to another queue, or every other transfer waits.
///
/// ```swift
/// let driver = CurlMultiDriver()
/// defer { driver.shutdown() }
/// let response = try await driver.perform(TransferRequest(url: url))
/// ```
public final class CurlMultiDriver: HTTPLoading {
    /// One driver thread's inbox and the semaphore it signals when its loop has ended.
    private struct Loop {
        let inbox: Inbox
        let finished: DispatchSemaphore
    }

    private let loops: [Loop]
    /// How long an idle connection may be kept for reuse, when not libcurl's default of 118 seconds.
    private let maximumConnectionAge: Duration?
    /// The thread each host's transfers went to last (`HostRoutes`).
    private let routes = Locked(HostRoutes())

    /// Starts the driver threads.
    ///
    /// - Parameters:
    ///   - maximumIdleConnections: open connections kept for reuse, over all threads. Default 256. libcurl's own
    ///     default is four times the number of transfers in the multi handle *at the moment a transfer
    ///     ends*, so when completions outpace new work (a loaded machine, a slow producer) it closes
    ///     connections that the next transfers would have reused; a fixed cache avoids that.
    ///   - threads: driver threads, each with a multi handle of its own. Default 1. A host's transfers go to the thread
    ///     that took its last (``thread(for:)``), others to the thread with the fewest transfers in flight. One thread
    ///     receives, hashes and writes every body, so on a fast network it is the bottleneck of a run; two let a second
    ///     core do the same work (BENCHMARKS.md).
    public convenience init(maximumIdleConnections: Int = 256, threads: Int = 1) {
        self.init(maximumIdleConnections: maximumIdleConnections, threads: threads, maximumConnectionAge: nil)
    }

    /// For tests that share a process with others' drivers and a loaded machine: threads named `threadName` (with
    /// `-1`, `-2`, … when there are several), so that this driver's threads can be told from theirs, and idle
    /// connections kept for `maximumConnectionAge` instead of libcurl's 118 seconds, so that a claim about which
    /// connection a request reuses does not depend on how long a busy test process takes to make it.
    init(
        maximumIdleConnections: Int = 256, threads: Int = 1, threadName: String = "mirror.curl-driver",
        maximumConnectionAge: Duration?
    ) {
        CurlRuntime.ensureInitialized()
        self.maximumConnectionAge = maximumConnectionAge
        let count = max(1, threads)
        loops = (0..<count).map { index in
            guard let multi = curl_multi_init() else { fatalError("curl_multi_init failed: out of memory") }
            _ = ccurl_multi_setopt_long(multi, CURLMOPT_MAXCONNECTS, max(1, maximumIdleConnections / count))
            let inbox = Inbox(multi: multi)
            let finished = DispatchSemaphore(value: 0)
            let loop = DriverLoop(multi: multi, inbox: inbox)
            let name = count == 1 ? threadName : "\(threadName)-\(index)"
            let thread = Thread {
                mirror_name_this_thread(name)
                loop.run()
                finished.signal()
            }
            thread.name = name
            thread.start()
            return Loop(inbox: inbox, finished: finished)
        }
    }

    deinit {
        shutdown()
    }

    /// Driver threads for up to `concurrency` transfers at once: one per core, at most four, and no more than one
    /// per eight transfers. Measured (5,000 images from nginx on loopback, 64 at once, 2 cores, output on tmpfs): one
    /// thread was busy 72 % of the run receiving, hashing and writing bodies, and two moved 25 % more images a second.
    public static func threadCount(forConcurrency concurrency: Int) -> Int {
        max(1, min(ProcessInfo.processInfo.activeProcessorCount, 4, concurrency / 8))
    }

    /// The thread a transfer to `key` (a host and port) goes to: the thread that took the host's transfers last, so
    /// that a host's transfers share one multi handle's connections (robots.txt and then the image on one connection,
    /// HTTP/2 streams on one) — unless the host already has 4 transfers in flight and that thread has more than 4 more
    /// than the least busy, so that one busy host still spreads over the cores; a host not seen lately goes to the
    /// thread with the fewest transfers in flight.
    ///
    /// Measured: with every transfer on the least busy thread, robots.txt and the image of a host often went to
    /// different threads, and so over two connections and two TLS handshakes (2,000 rows over 2,000 HTTPS hosts:
    /// 3,854 connections); with a host kept on its thread whatever the load, one fast host (loopback, 16 at once) kept
    /// one thread busy and the other idle (16 % fewer images a second).
    private func thread(for key: String?) -> Int {
        guard loops.count > 1 else { return 0 }
        let counts = loops.map { $0.inbox.liveCount }
        let least = counts.indices.min { counts[$0] < counts[$1] } ?? 0
        guard let key else { return least }
        let (known, inFlight) = routes.withLock { ($0.threads[key], $0.inFlight[key] ?? 0) }
        if let known, known < counts.count, inFlight < 4 || counts[known] <= counts[least] + 4 { return known }
        return least
    }

    /// Starts a transfer; `completion` runs exactly once, on the driver thread.
    ///
    /// - Returns: a handle that cancels the transfer from any thread.
    @discardableResult
    public func start(
        _ request: TransferRequest,
        completion: @escaping @Sendable (Result<HTTPResponse, TransportError>) -> Void
    ) -> TransferTask {
        let key = request.url.host.map { host in request.url.port.map { "\(host.lowercased()):\($0)" } ?? host.lowercased() }
        let index = thread(for: key)
        let inbox = loops[index].inbox
        let id = inbox.nextID()
        let task = TransferTask(id: id, inbox: inbox)
        var completion = completion
        if loops.count > 1, let key {
            routes.withLock { $0.started(key, on: index) }
            let done = completion
            completion = { [routes] result in
                routes.withLock { $0.ended(key) }
                done(result)
            }
        }
        let transfer: Transfer
        do {
            transfer = try Transfer(id: id, request: request, maximumConnectionAge: maximumConnectionAge, completion: completion)
        } catch {
            completion(.failure(error))
            return task
        }
        if !inbox.add(transfer) {
            transfer.cleanup()
            completion(.failure(.cancelled))
        }
        return task
    }

    /// Starts a transfer (``start(_:completion:)``), for callers that hold the driver as `any HTTPLoading`.
    @discardableResult
    public func load(
        _ request: TransferRequest,
        completion: @escaping @Sendable (Result<HTTPResponse, TransportError>) -> Void
    ) -> any Cancellable {
        start(request, completion: completion)
    }

    /// Cancels every transfer (each completes with `.cancelled`), stops the thread and frees the
    /// multi handle. Waits for the thread to end; call it from any thread but the driver's. Idempotent.
    public func shutdown() {
        for loop in loops where loop.inbox.requestStop() {
            loop.finished.wait()
        }
    }

    /// Transfers started and not yet completed (those queued for the threads and those in flight).
    public var activeTransferCount: Int { loops.reduce(0) { $0 + $1.inbox.liveCount } }
}

/// The driver thread each host's transfers went to last, and how many of them are in flight: at most 16,384 hosts
/// remembered (a table over millions of hosts sees each once or twice), the oldest half forgotten when full.
private struct HostRoutes {
    var threads: [String: Int] = [:]
    var inFlight: [String: Int] = [:]
    private var order: [String] = []

    mutating func started(_ host: String, on thread: Int) {
        inFlight[host, default: 0] += 1
        if threads.updateValue(thread, forKey: host) == nil {
            order.append(host)
            if order.count > 16_384 {
                for old in order.prefix(8_192) { threads[old] = nil }
                order.removeFirst(8_192)
            }
        }
    }

    mutating func ended(_ host: String) {
        let left = (inFlight[host] ?? 1) - 1
        inFlight[host] = left > 0 ? left : nil
    }
}

/// Cancels one transfer. Cheap to keep; cancelling a finished transfer does nothing.
public final class TransferTask: Cancellable {
    /// The transfer's identifier, unique within its driver.
    public let id: Int
    private let inbox: Inbox

    init(id: Int, inbox: Inbox) {
        self.id = id
        self.inbox = inbox
    }

    /// Cancels the transfer from any thread; its completion (`.cancelled`) follows promptly unless it already completed.
    public func cancel() {
        inbox.cancel(id)
    }
}


/// What other threads hand to the driver thread, behind one lock.
///
/// The multi handle pointer is used from other threads only for `curl_multi_wakeup`, which libcurl
/// documents as thread-safe, and only while `stopped` is false under `state`'s lock: the driver
/// sets `stopped` under that same lock before it frees the handle.
final class Inbox: @unchecked Sendable {
    private struct State {
        var adds: [Transfer] = []
        var cancels: [Int] = []
        var stopRequested = false
        var stopped = false
        var lastID = 0
        var live = 0
        /// A wakeup was sent since the driver last took its inbox: another would only cost a system call and a
        /// thread switch (under load, most adds arrive while one is pending).
        var wakeupPending = false
    }

    private let state = Locked(State())
    private let multi: UnsafeMutableRawPointer

    init(multi: UnsafeMutableRawPointer) {
        self.multi = multi
    }

    func nextID() -> Int {
        state.withLock { state in
            state.lastID += 1
            return state.lastID
        }
    }

    /// Queues a transfer for the driver; false once the driver is stopping.
    func add(_ transfer: Transfer) -> Bool {
        state.withLock { state in
            guard !state.stopRequested else { return false }
            state.adds.append(transfer)
            state.live += 1
            wake(&state)
            return true
        }
    }

    func cancel(_ id: Int) {
        state.withLock { state in
            guard !state.stopRequested else { return }
            state.cancels.append(id)
            wake(&state)
        }
    }

    /// Wakes the driver unless a wakeup is already on its way (under the lock, so never after the handle is freed).
    private func wake(_ state: inout State) {
        guard !state.wakeupPending else { return }
        state.wakeupPending = true
        curl_multi_wakeup(multi)
    }

    /// Asks the driver to stop; true for the first caller, who should then wait for the thread.
    func requestStop() -> Bool {
        state.withLock { state in
            guard !state.stopRequested else { return false }
            state.stopRequested = true
            curl_multi_wakeup(multi)
            return true
        }
    }

    /// Takes what arrived since the last call.
    func take() -> (adds: [Transfer], cancels: [Int], stop: Bool) {
        state.withLock { state in
            defer {
                state.adds.removeAll(keepingCapacity: true)
                state.cancels.removeAll(keepingCapacity: true)
                state.wakeupPending = false
            }
            return (state.adds, state.cancels, state.stopRequested)
        }
    }

    func completed() {
        state.withLock { $0.live -= 1 }
    }

    var liveCount: Int { state.withLock { $0.live } }

    /// Marks the multi handle as about to be freed; no wakeup may use it after this.
    func markStopped() {
        state.withLock { $0.stopped = true }
    }
}

/// The driver thread's own state: the multi handle and the transfers in it. Touched only by that thread.
private final class DriverLoop: @unchecked Sendable {
    private let multi: UnsafeMutableRawPointer
    private let inbox: Inbox
    private var active: [Int: Transfer] = [:]

    init(multi: UnsafeMutableRawPointer, inbox: Inbox) {
        self.multi = multi
        self.inbox = inbox
    }

    func run() {
        while true {
            let (adds, cancels, stop) = inbox.take()
            for transfer in adds {
                let code = curl_multi_add_handle(multi, transfer.handle)
                if code == CURLM_OK {
                    active[transfer.id] = transfer
                } else {
                    let message = String(cString: curl_multi_strerror(code))
                    complete(transfer, .failure(.other(CurlError(code: Int(code.rawValue), summary: message, message: ""))))
                }
            }
            for id in cancels {
                if let transfer = active.removeValue(forKey: id) {
                    curl_multi_remove_handle(multi, transfer.handle)
                    complete(transfer, .failure(.cancelled))
                }
            }
            if stop { break }

            var running: Int32 = 0
            curl_multi_perform(multi, &running)
            collectFinished()
            // Sleeps until a socket is ready, curl's next timeout, a wakeup, or at most one second.
            curl_multi_poll(multi, nil, 0, 1000, nil)
        }
        for transfer in active.values {
            curl_multi_remove_handle(multi, transfer.handle)
            complete(transfer, .failure(.cancelled))
        }
        active.removeAll()
        inbox.markStopped()
        // Transfers queued after the last take() were refused by `add`, so none is left behind.
        curl_multi_cleanup(multi)
    }

    private func collectFinished() {
        var remaining: Int32 = 0
        while let message = curl_multi_info_read(multi, &remaining) {
            guard message.pointee.msg == CURLMSG_DONE, let handle = message.pointee.easy_handle else { continue }
            let code = message.pointee.data.result
            var privateData: UnsafeMutableRawPointer?
            _ = ccurl_easy_getinfo_pointer(handle, CURLINFO_PRIVATE, &privateData)
            let id = Int(bitPattern: privateData)
            curl_multi_remove_handle(multi, handle)
            guard let transfer = active.removeValue(forKey: id) else { continue }
            complete(transfer, transfer.outcome(for: code))
        }
    }

    private func complete(_ transfer: Transfer, _ outcome: Result<HTTPResponse, TransportError>) {
        transfer.cleanup()
        inbox.completed()
        transfer.completion(outcome)
    }
}
