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
/// slot, up to the configured cap. A host with nothing running, nothing waiting and no slow-down is forgotten.
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
        var successStreak = 0

        var hasWaiting: Bool { head < waiting.count }

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
    private var hosts: [String: Host] = [:]

    /// - Parameters:
    ///   - perHost: requests in flight per host at most. Default 6.
    ///   - recoveryStreak: successes that give a throttled host back one slot. Default 8.
    package init(perHost: Int = 6, recoveryStreak: Int = 8) {
        self.perHost = max(1, perHost)
        self.recoveryStreak = max(1, recoveryStreak)
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
        var entry = hosts[host] ?? Host(limit: perHost)
        defer { hosts[host] = entry }
        let coolingDown = entry.notBefore.map { $0 > now } ?? false
        if entry.active < entry.limit && !coolingDown && !entry.hasWaiting {
            entry.active += 1
            return .start
        }
        entry.waiting.append(id)
        return coolingDown ? .waitForTime : .wait
    }

    /// Removes a download that is still waiting; false when it is not waiting (it started, or never asked).
    mutating func withdraw(_ id: Int, host: String) -> Bool {
        guard var entry = hosts[host], let index = entry.waiting[entry.head...].firstIndex(of: id) else { return false }
        entry.waiting.remove(at: index)
        hosts[host] = entry
        forgetIfIdle(host)
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

    /// Time passed: the downloads of hosts whose slow-down ended that start now.
    package mutating func wake(now: ContinuousClock.Instant) -> [Int] {
        let due = hosts.compactMap { key, entry in
            entry.hasWaiting && (entry.notBefore.map { $0 <= now } ?? false) ? key : nil
        }
        return due.flatMap { drain($0, now: now) }
    }

    /// The earliest time a host with waiting downloads ends its slow-down, or nil when none waits for time.
    var nextDeadline: ContinuousClock.Instant? {
        hosts.values.lazy.filter(\.hasWaiting).compactMap(\.notBefore).min()
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
        guard var entry = hosts[host] else { return [] }
        if let notBefore = entry.notBefore {
            if notBefore > now { return [] }
            entry.notBefore = nil
        }
        var starts: [Int] = []
        while entry.active < entry.limit, entry.hasWaiting {
            starts.append(entry.popWaiting())
            entry.active += 1
        }
        hosts[host] = entry
        forgetIfIdle(host)
        return starts
    }

    private mutating func forgetIfIdle(_ host: String) {
        guard let entry = hosts[host], entry.active == 0, !entry.hasWaiting, entry.limit == perHost, entry.notBefore == nil else {
            return
        }
        hosts[host] = nil
    }
}
