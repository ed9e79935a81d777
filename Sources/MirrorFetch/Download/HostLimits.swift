import Foundation
import MirrorCore
import MirrorStorage

/// Per-host limits as a value: which downloads may start now, and when to look again.
///
/// A state machine in the manner of async-http-client's connection pool: the download manager owns one inside its
/// lock, tells it what happened (a download wants to start, one finished, time passed) and carries out what it
/// returns (the downloads to start now, in arrival order). It keeps every host under its cap and holds a host back
/// while it asked us to wait: a host that answers 429 has its cap halved (never below one) and, when it sent
/// `Retry-After`, gets no new request until that time; each run of `recoveryStreak` successes then gives back one
/// slot, up to the configured cap. With a rate (`--host-rate`), requests to a host also start at least `1/rate` apart,
/// so that no second holds more than `rate` of them. A host with nothing running, nothing waiting, no slow-down and
/// no rate spacing still to keep is forgotten, so that its state stays bounded over a table of millions of hosts.
///
/// It never sleeps and never calls out, so it is tested by calling it (``DownloadManager`` arms one timer for
/// ``nextDeadline``).
struct HostLimits {
    /// What happened to a request, as far as the host's limits care.
    package enum Outcome: Sendable {
        case success
        case throttled(retryAfter: Duration?)
        case failure
    }

    private struct Host {
        var active = 0
        var limit: Int
        /// Identifiers waiting for a slot, in arrival order; `waiting[head...]` are live.
        var waiting: [Int] = []
        var head = 0
        var notBefore: ContinuousClock.Instant?
        /// With a rate: the earliest time the next request may start.
        var nextStart: ContinuousClock.Instant?
        var successStreak = 0

        var hasWaiting: Bool { head < waiting.count }

        /// Starts `id` now if the host has a slot and nothing holds it back, or queues it.
        mutating func admit(_ id: Int, now: ContinuousClock.Instant, spacing: Duration?) -> Admission {
            let coolingDown = (notBefore.map { $0 > now } ?? false) || (nextStart.map { $0 > now } ?? false)
            if active < limit && !coolingDown && !hasWaiting {
                active += 1
                if let spacing { nextStart = now + spacing }
                return .start
            }
            waiting.append(id)
            return coolingDown ? .waitForTime : .wait
        }

        /// Takes the waiting downloads that may start at `now`, in arrival order.
        mutating func drain(now: ContinuousClock.Instant, spacing: Duration?) -> [Int] {
            if let notBefore {
                if notBefore > now { return [] }
                self.notBefore = nil
            }
            var starts: [Int] = []
            while active < limit, hasWaiting {
                if let spacing {
                    if let next = nextStart, next > now { break }
                    nextStart = now + spacing
                }
                starts.append(popWaiting())
                active += 1
            }
            return starts
        }

        mutating func popWaiting() -> Int {
            let id = waiting[head]
            head += 1
            if head == waiting.count {
                waiting.removeAll(keepingCapacity: true)
                head = 0
            }
            return id
        }
    }

    /// Requests in flight per host at most.
    package let perHost: Int
    /// Successes that give a throttled host back one slot.
    let recoveryStreak: Int
    /// The least time between two requests' starts on one host (`1 s / --host-rate`), or `nil` for no rate.
    package let spacing: Duration?
    private var hosts: [String: Host] = [:]
    /// Requests since idle hosts' expired spacing was last swept out.
    private var requestsSinceSweep = 0

    /// - Parameters:
    ///   - perHost: requests in flight per host at most. Default 6.
    ///   - rate: requests started per host per second at most, or `nil` (the default) for no limit.
    ///   - recoveryStreak: successes that give a throttled host back one slot. Default 8.
    package init(perHost: Int = 6, rate: Double? = nil, recoveryStreak: Int = 8) {
        self.perHost = max(1, perHost)
        self.recoveryStreak = max(1, recoveryStreak)
        // 5 % more than 1/rate: a request's start here and its arrival there differ by a connection's set-up (tens
        // of milliseconds on a busy machine), and that jitter must not put rate + 1 requests into one of the
        // server's seconds.
        spacing = rate.flatMap { $0 > 0 ? .nanoseconds(Int64((1.05e9 / $0).rounded(.up))) : nil }
    }

    /// What becomes of a download that asks for a slot.
    package enum Admission: Equatable {
        /// It may start now, and holds a slot until ``HostLimits/finished(host:outcome:now:)``.
        case start
        /// It waits for a slot, in arrival order.
        case wait
        /// It waits for the host's slow-down to end (``HostLimits/nextDeadline``), then for a slot.
        case waitForTime
    }

    /// Download `id` wants to start on `host`. When it may not start now it waits here until
    /// ``finished(host:outcome:now:)`` or ``wake(now:)`` returns it.
    package mutating func request(_ id: Int, host: String, now: ContinuousClock.Instant) -> Admission {
        if spacing != nil { sweepIfDue(now: now) }
        // In place: a copy of the entry taken out and put back shares its `waiting` array with the dictionary's, so
        // the append copied the whole queue every time.
        let perHost = perHost
        return hosts[host, default: Host(limit: perHost)].admit(id, now: now, spacing: spacing)
    }

    /// A request to `host` was made outside the limits (its robots.txt), at the latest `now`: with a rate, the next
    /// starts no sooner than a spacing later.
    package mutating func noteRequest(host: String, now: ContinuousClock.Instant) {
        guard let spacing else { return }
        var entry = hosts[host] ?? Host(limit: perHost)
        entry.nextStart = max(entry.nextStart ?? now, now + spacing)
        hosts[host] = entry
    }

    /// With a rate: the time a request to `host` that is ready now may start — the host's next start, or now — taken
    /// for it (the next after it waits a spacing more). `nil` without a rate. For a download that was admitted, then
    /// waited for its host's robots.txt on its slot: the fetch took the spacing it had been given.
    package mutating func reserveStart(host: String, now: ContinuousClock.Instant) -> ContinuousClock.Instant? {
        guard let spacing else { return nil }
        var entry = hosts[host] ?? Host(limit: perHost)
        let start = max(entry.nextStart ?? now, now)
        entry.nextStart = start + spacing
        hosts[host] = entry
        return start
    }

    /// Removes a download that is still waiting; false when it is not waiting (it started, or never asked).
    mutating func withdraw(_ id: Int, host: String) -> Bool {
        // The index first, so that no copy of the entry shares its list when it is changed in place.
        guard let index = hosts[host].flatMap({ $0.waiting[$0.head...].firstIndex(of: id) }) else { return false }
        hosts[host]?.waiting.remove(at: index)
        forgetIfIdle(host, now: nil)
        return true
    }

    /// Gives back the slot of a download that ended, adapting the host's limit to how it went; returns the downloads
    /// that start now (each holding a slot).
    package mutating func finished(host: String, outcome: Outcome, now: ContinuousClock.Instant) -> [Int] {
        guard var entry = hosts[host] else { return [] }
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
        return drain(host, now: now)
    }

    /// Time passed: the downloads of hosts whose slow-down (or rate spacing) ended that start now.
    package mutating func wake(now: ContinuousClock.Instant) -> [Int] {
        let due = hosts.compactMap { key, entry in
            entry.hasWaiting && Self.waitsForTime(entry).map { $0 <= now } == true ? key : nil
        }
        return due.flatMap { drain($0, now: now) }
    }

    /// The earliest time a host with waiting downloads ends its slow-down or its spacing, or nil when none waits for
    /// time.
    var nextDeadline: ContinuousClock.Instant? {
        hosts.values.lazy.filter(\.hasWaiting).compactMap(Self.waitsForTime).min()
    }

    /// When a host's waiting downloads may start as far as time goes, or `nil` when time is not what they wait for
    /// (the host is at its cap, or not held back).
    private static func waitsForTime(_ entry: Host) -> ContinuousClock.Instant? {
        let spacing = entry.active < entry.limit ? entry.nextStart : nil
        return [entry.notBefore, spacing].compactMap { $0 }.max()
    }

    /// The current limit of a host (for tests and progress display).
    package func limit(of host: String) -> Int {
        hosts[host]?.limit ?? perHost
    }

    /// Requests in flight to a host.
    package func active(on host: String) -> Int {
        hosts[host]?.active ?? 0
    }

    /// Hosts with any state kept.
    var hostCount: Int { hosts.count }

    private mutating func drain(_ host: String, now: ContinuousClock.Instant) -> [Int] {
        let spacing = spacing
        guard let starts = hosts[host]?.drain(now: now, spacing: spacing) else { return [] }
        forgetIfIdle(host, now: now)
        return starts
    }

    /// Forgets a host that keeps nothing worth keeping: nothing running or waiting, its full cap, no slow-down, and no
    /// spacing still to keep at `now` (with no time known, a host with spacing is kept).
    private mutating func forgetIfIdle(_ host: String, now: ContinuousClock.Instant?) {
        guard let entry = hosts[host], entry.active == 0, !entry.hasWaiting, entry.limit == perHost, entry.notBefore == nil else {
            return
        }
        if let next = entry.nextStart {
            guard let now, next <= now else { return }
        }
        hosts[host] = nil
    }

    /// With a rate, a host that went idle keeps its spacing until it passes; every 4,096 requests the hosts whose
    /// spacing has passed are swept out, so that a table of millions of hosts keeps only the recent ones.
    private mutating func sweepIfDue(now: ContinuousClock.Instant) {
        requestsSinceSweep += 1
        guard requestsSinceSweep >= 4_096 else { return }
        requestsSinceSweep = 0
        for host in Array(hosts.keys) { forgetIfIdle(host, now: now) }
    }
}
