import DequeModule
import HeapModule

/// Every download slot, as a value: the one place that decides when an attempt starts.
///
/// A state machine in the manner of async-http-client's connection pool: ``DownloadManager`` owns one inside its lock,
/// tells it what happened (a download was submitted, an attempt finished, one was cancelled, time passed) and carries
/// out the ``Action``s it returns. It never sleeps and never calls out, so it is tested by calling it.
///
/// What it keeps:
/// - **`concurrency`** attempts at once over all hosts (`--concurrency`); the manager begins what it starts at once,
///   so a start here is a start there.
/// - **`perHost`** attempts at once per host (`--per-host`). A host that answers 429 has its cap halved (never below
///   one) and, when it sent `Retry-After`, gets no new request until then; each run of `recoveryStreak` successes
///   gives back one slot, up to `perHost`.
/// - **A rate** (`--host-rate`): requests to a host *start* at least `1/rate` apart — taken when an attempt starts,
///   never when it is queued, so that attempts waiting for a global slot cannot start together later. A request made
///   on a slot outside an attempt (robots.txt) takes its start too (``reserveStart(host:now:)``).
/// - **Retry waits**: an attempt that failed and is retried holds no slot until its time comes, then queues again.
///
/// Fairness: a host that may start now does so in the order its oldest waiting download arrived, whatever the host;
/// a host held back (by its cap, a slow-down or its rate) never blocks another. A host with nothing running, nothing
/// waiting, its full cap and no time still to keep is forgotten, so the state stays bounded over millions of hosts.
///
/// Costs: O(log n) a start, a finish or a due deadline (heaps of ready hosts, of hosts waiting for time, and of
/// retries), O(waiting on the host) to withdraw a cancelled download.
package struct SlotMachine {
    package typealias Instant = ContinuousClock.Instant

    /// What happened to an attempt, as far as its host's limits care.
    package enum Outcome: Sendable, Equatable {
        case success
        case throttled(retryAfter: Duration?)
        case failure
    }

    /// What the owner carries out.
    package enum Action: Equatable {
        /// Run an attempt of this download now: it holds a slot (and one of its host's) until ``finished(_:outcome:retryAt:now:)``.
        case start(Int)
        /// Call ``tick(now:)`` at this time: a retry falls due, or a host's slow-down or rate spacing ends. The
        /// earliest such time; one timer is enough.
        case wake(at: Instant)
    }

    // MARK: Configuration

    /// Attempts in flight at most, over all hosts.
    package let concurrency: Int
    /// Attempts in flight per host at most.
    package let perHost: Int
    /// Successes that give a throttled host back one slot.
    package let recoveryStreak: Int
    /// The least time between two starts on one host (`1 s / --host-rate`, 5 % more), or `nil` for no rate.
    package let spacing: Duration?

    // MARK: State

    private enum Phase: Equatable {
        case waiting
        case running
        case retrying(at: Instant)
    }

    private struct Download {
        let host: String
        var phase: Phase
        /// Arrival order (taken again when a retry queues anew).
        var sequence: Int
    }

    private struct Host {
        var active = 0
        var limit: Int
        /// Waiting downloads, oldest first.
        var waiting = Deque<Int>()
        /// No request before this (a 429's `Retry-After`).
        var notBefore: Instant?
        /// With a rate: the earliest time the next request may start.
        var nextStart: Instant?
        var successStreak = 0
        /// The `sequence` this host was last put into ``SlotMachine/ready`` with, or nil when it is not there.
        var readyAs: Int?
        /// The time this host was last put into ``SlotMachine/timed`` for, or nil when it is not there.
        var timedFor: Instant?

        /// When time is what holds the host back: the later of its slow-down and its spacing; nil when neither is
        /// still to come at `now`.
        func heldUntil(_ now: Instant) -> Instant? {
            let until = [notBefore, nextStart].compactMap { $0 }.max()
            return until.flatMap { $0 > now ? $0 : nil }
        }
    }

    private struct ReadyHost: Comparable {
        let sequence: Int
        let host: String
        static func < (a: Self, b: Self) -> Bool { a.sequence < b.sequence }
    }

    private struct TimedHost: Comparable {
        let at: Instant
        let host: String
        static func < (a: Self, b: Self) -> Bool { a.at < b.at }
    }

    private struct DueRetry: Comparable {
        let at: Instant
        let id: Int
        static func < (a: Self, b: Self) -> Bool { (a.at, a.id) < (b.at, b.id) }
    }

    private var downloads: [Int: Download] = [:]
    private var hosts: [String: Host] = [:]
    /// Hosts with a waiting download that only a global slot holds back, by their oldest download's arrival.
    private var ready = Heap<ReadyHost>()
    /// Hosts with a waiting download that time holds back, by that time.
    private var timed = Heap<TimedHost>()
    /// Retries, by the time they queue again.
    private var retries = Heap<DueRetry>()
    private var nextSequence = 0
    /// Requests since idle hosts' expired spacing was last swept out.
    private var startsSinceSweep = 0

    /// Attempts holding a slot.
    package private(set) var running = 0

    /// - Parameters:
    ///   - concurrency: attempts in flight at most. Default 16.
    ///   - perHost: attempts in flight per host at most. Default 6.
    ///   - rate: requests started per host per second at most, or `nil` (the default) for no limit.
    ///   - recoveryStreak: successes that give a throttled host back one slot. Default 8.
    package init(concurrency: Int = 16, perHost: Int = 6, rate: Double? = nil, recoveryStreak: Int = 8) {
        self.concurrency = max(1, concurrency)
        self.perHost = max(1, perHost)
        self.recoveryStreak = max(1, recoveryStreak)
        // 5 % more than 1/rate: a request's start here and its arrival there differ by a connection's set-up (tens
        // of milliseconds on a busy machine), and that jitter must not put rate + 1 requests into one of the
        // server's seconds.
        spacing = rate.flatMap { $0 > 0 ? .nanoseconds(Int64((1.05e9 / $0).rounded(.up))) : nil }
    }

    // MARK: Events

    /// A new download `id` for `host` wants to run.
    package mutating func submit(_ id: Int, host: String, now: Instant) -> [Action] {
        downloads[id] = Download(host: host, phase: .waiting, sequence: takeSequence())
        enqueue(id, host: host, now: now)
        return pump(now: now)
    }

    /// An attempt of `id` ended, `outcome` as its host sees it. With `retryAt`, the download waits (holding no slot)
    /// and queues again at that time; without, it is done here.
    package mutating func finished(_ id: Int, outcome: Outcome, retryAt: Instant? = nil, now: Instant) -> [Action] {
        guard let download = downloads[id], download.phase == .running else { return pump(now: now) }
        running -= 1
        let host = download.host
        if var entry = hosts[host] {
            entry.active = max(0, entry.active - 1)
            switch outcome {
            case let .throttled(retryAfter):
                entry.limit = max(1, entry.limit / 2)
                entry.successStreak = 0
                if let retryAfter {
                    let until = now + retryAfter
                    entry.notBefore = max(entry.notBefore ?? until, until)
                }
            case .success:
                entry.successStreak += 1
                if entry.successStreak >= recoveryStreak && entry.limit < perHost {
                    entry.limit += 1
                    entry.successStreak = 0
                }
            case .failure:
                break
            }
            hosts[host] = entry
        }
        if let retryAt {
            downloads[id]?.phase = .retrying(at: retryAt)
            retries.insert(DueRetry(at: retryAt, id: id))
        } else {
            downloads[id] = nil
        }
        reconsider(host, now: now)
        return pump(now: now)
    }

    /// An attempt of `id` gave its slot back without a request of its own: its host's site files were fetched on it,
    /// which took the start it had been given (``noteRequest(host:now:)``). It queues again at once, as the oldest of
    /// its host's, and starts when a slot and the host's spacing allow — through the same timer as every other wait.
    package mutating func yielded(_ id: Int, now: Instant) -> [Action] {
        guard let download = downloads[id], download.phase == .running else { return pump(now: now) }
        running -= 1
        if var entry = hosts[download.host] {
            entry.active = max(0, entry.active - 1)
            entry.waiting.prepend(id)
            hosts[download.host] = entry
        }
        downloads[id]?.phase = .waiting
        reconsider(download.host, now: now)
        return pump(now: now)
    }

    /// Withdraws a download that holds no slot (waiting for one, or for its retry); false when it is running (its
    /// attempt must be cancelled and finish) or unknown.
    package mutating func cancel(_ id: Int, now: Instant) -> Bool {
        guard let download = downloads[id] else { return false }
        switch download.phase {
        case .running:
            return false
        case .retrying:
            // Its heap entry is dropped when it comes up (it no longer names a retrying download).
            downloads[id] = nil
            return true
        case .waiting:
            downloads[id] = nil
            if let index = hosts[download.host]?.waiting.firstIndex(of: id) {
                hosts[download.host]?.waiting.remove(at: index)
            }
            reconsider(download.host, now: now)
            return true
        }
    }

    /// Time passed: retries that fell due queue again; hosts whose slow-down or spacing ended may start.
    package mutating func tick(now: Instant) -> [Action] {
        while let retry = retries.min, retry.at <= now {
            retries.removeMin()
            guard let download = downloads[retry.id], download.phase == .retrying(at: retry.at) else { continue }
            downloads[retry.id] = Download(host: download.host, phase: .waiting, sequence: takeSequence())
            enqueue(retry.id, host: download.host, now: now)
        }
        return pump(now: now)
    }

    /// With a rate: the time a request to `host` that is ready now may start — the host's next start, or now — taken
    /// for it (the next request waits a spacing more). `nil` without a rate. For a request made on a slot outside an
    /// attempt's own start: robots.txt, fetched on the slot of the host's first download, which then waits for its
    /// own start.
    package mutating func reserveStart(host: String, now: Instant) -> Instant? {
        guard let spacing else { return nil }
        var entry = hosts[host] ?? Host(limit: perHost)
        let start = max(entry.nextStart ?? now, now)
        entry.nextStart = start + spacing
        hosts[host] = entry
        return start
    }

    /// A request to `host` was made on a slot outside an attempt (its robots.txt), at the latest `now`: with a rate,
    /// the next starts no sooner than a spacing later.
    package mutating func noteRequest(host: String, now: Instant) {
        guard let spacing else { return }
        var entry = hosts[host] ?? Host(limit: perHost)
        entry.nextStart = max(entry.nextStart ?? now, now + spacing)
        hosts[host] = entry
    }

    // MARK: Reading

    /// Downloads known: waiting, running or waiting to retry.
    package var count: Int { downloads.count }

    /// The current cap of a host (for tests and progress display).
    package func limit(of host: String) -> Int { hosts[host]?.limit ?? perHost }

    /// Attempts in flight to a host.
    package func active(on host: String) -> Int { hosts[host]?.active ?? 0 }

    /// Hosts with any state kept.
    package var hostCount: Int { hosts.count }

    /// The earliest time ``tick(now:)`` has something to do, or nil.
    package var nextDeadline: Instant? {
        [timed.min?.at, retries.min?.at].compactMap { $0 }.min()
    }

    // MARK: Inside

    private mutating func takeSequence() -> Int {
        nextSequence += 1
        return nextSequence
    }

    private mutating func enqueue(_ id: Int, host: String, now: Instant) {
        hosts[host, default: Host(limit: perHost)].waiting.append(id)
        reconsider(host, now: now)
    }

    /// Puts `host` where it belongs now: among the ready hosts, the timed ones, or neither (nothing waiting, or at
    /// its cap, which a finish reconsiders); forgets it when it keeps nothing worth keeping.
    private mutating func reconsider(_ host: String, now: Instant) {
        guard var entry = hosts[host] else { return }
        // Drop waiting entries of downloads withdrawn meanwhile (cancel removes them; this is only a guard).
        while let head = entry.waiting.first, downloads[head]?.phase != .waiting { entry.waiting.removeFirst() }
        if let head = entry.waiting.first, entry.active < entry.limit {
            if let until = entry.heldUntil(now) {
                if entry.timedFor != until {
                    entry.timedFor = until
                    timed.insert(TimedHost(at: until, host: host))
                }
            } else if let sequence = downloads[head]?.sequence, entry.readyAs != sequence {
                entry.readyAs = sequence
                ready.insert(ReadyHost(sequence: sequence, host: host))
            }
            hosts[host] = entry
            return
        }
        hosts[host] = entry
        forgetIfIdle(host, now: now)
    }

    /// Starts what may start: hosts whose time came join the ready ones; then, while a global slot is free, the
    /// ready host whose oldest download arrived first starts it.
    private mutating func pump(now: Instant) -> [Action] {
        while let due = timed.min, due.at <= now {
            timed.removeMin()
            guard hosts[due.host]?.timedFor == due.at else { continue }
            hosts[due.host]?.timedFor = nil
            reconsider(due.host, now: now)
        }
        var actions: [Action] = []
        while running < concurrency, let next = ready.popMin() {
            guard var entry = hosts[next.host], entry.readyAs == next.sequence else { continue }
            entry.readyAs = nil
            guard entry.active < entry.limit, entry.heldUntil(now) == nil, let id = entry.waiting.popFirst() else {
                hosts[next.host] = entry
                reconsider(next.host, now: now)
                continue
            }
            entry.active += 1
            if let spacing { entry.nextStart = now + spacing }
            hosts[next.host] = entry
            downloads[id]?.phase = .running
            running += 1
            actions.append(.start(id))
            reconsider(next.host, now: now)
        }
        if spacing != nil { sweepIfDue(now: now, starts: actions.count) }
        if let deadline = nextDeadline { actions.append(.wake(at: deadline)) }
        return actions
    }

    /// Forgets a host that keeps nothing worth keeping: nothing running or waiting, its full cap, no slow-down or
    /// spacing still to come.
    private mutating func forgetIfIdle(_ host: String, now: Instant) {
        guard let entry = hosts[host], entry.active == 0, entry.waiting.isEmpty, entry.limit == perHost,
              entry.heldUntil(now) == nil, entry.timedFor == nil, entry.readyAs == nil else { return }
        hosts[host] = nil
    }

    /// With a rate, a host that went idle keeps its spacing until it passes; every 4,096 starts the hosts whose
    /// spacing has passed are swept out, so that a table of millions of hosts keeps only the recent ones.
    private mutating func sweepIfDue(now: Instant, starts: Int) {
        startsSinceSweep += starts
        guard startsSinceSweep >= 4_096 else { return }
        startsSinceSweep = 0
        for host in Array(hosts.keys) { forgetIfIdle(host, now: now) }
    }
}
