import Foundation
import MirrorTransport

/// Keeps each host under its concurrency cap, and holds a host back while it asked us to wait.
///
/// Work for a host starts at once while the host has a free slot and no cool-down; otherwise it
/// waits here, in arrival order, holding no queue slot and no thread. A host that answers 429 has
/// its cap halved (never below one) and, when it sent `Retry-After`, gets no new request until that
/// time; each run of `recoveryStreak` successes then gives back one slot, up to the configured cap.
final class HostGate: Sendable {
    /// What happened to a request, as far as the host's limits care.
    enum Outcome: Sendable {
        case success
        case throttled(retryAfter: Duration?)
        case failure
    }

    private struct Waiter {
        let id: Int
        let start: @Sendable () -> Void
    }

    private struct Host {
        var active = 0
        var limit: Int
        var waiting: [Waiter] = []
        var notBefore: ContinuousClock.Instant?
        var successStreak = 0
        var wakeScheduled = false
    }

    private struct State {
        var hosts: [String: Host] = [:]
        var nextID = 0
    }

    let perHost: Int
    let recoveryStreak: Int
    private let state = Locked(State())
    private let sleeper: Sleeper

    /// - Parameters:
    ///   - perHost: requests in flight per host at most. Default 6.
    ///   - recoveryStreak: successes that give a throttled host back one slot. Default 8.
    ///   - sleeper: the clock and the sleep of cool-downs. Default ``Sleeper/real``.
    init(perHost: Int = 6, recoveryStreak: Int = 8, sleeper: Sleeper = .real) {
        self.perHost = max(1, perHost)
        self.recoveryStreak = max(1, recoveryStreak)
        self.sleeper = sleeper
    }

    /// Runs `start` when `host` has room; returns an identifier that `withdraw` accepts until then.
    @discardableResult
    func submit(host: String, _ start: @escaping @Sendable () -> Void) -> Int {
        let now = sleeper.now()
        let (id, runNow) = state.withLock { state -> (Int, Bool) in
            state.nextID += 1
            let id = state.nextID
            var entry = state.hosts[host] ?? Host(limit: perHost)
            let coolingDown = entry.notBefore.map { $0 > now } ?? false
            if entry.active < entry.limit && !coolingDown && entry.waiting.isEmpty {
                entry.active += 1
                state.hosts[host] = entry
                return (id, true)
            }
            entry.waiting.append(Waiter(id: id, start: start))
            state.hosts[host] = entry
            return (id, false)
        }
        if runNow {
            start()
        } else {
            scheduleWakeIfCoolingDown(host)
        }
        return id
    }

    /// Removes work that has not started yet; false if it already started (or never existed).
    func withdraw(host: String, id: Int) -> Bool {
        state.withLock { state in
            guard var entry = state.hosts[host], let index = entry.waiting.firstIndex(where: { $0.id == id }) else {
                return false
            }
            entry.waiting.remove(at: index)
            state.hosts[host] = entry
            return true
        }
    }

    /// Removes all waiting work; returns how many were waiting.
    func withdrawAll() -> Int {
        state.withLock { state in
            var count = 0
            for key in state.hosts.keys {
                count += state.hosts[key]?.waiting.count ?? 0
                state.hosts[key]?.waiting.removeAll()
            }
            return count
        }
    }

    /// Gives back a slot taken by `submit`, adapting the host's limit to how the request went.
    func finished(host: String, outcome: Outcome) {
        let now = sleeper.now()
        state.withLock { state in
            guard var entry = state.hosts[host] else { return }
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
            state.hosts[host] = entry
        }
        drain(host)
    }

    /// The current limit of a host (for tests and progress display).
    func limit(of host: String) -> Int {
        state.withLock { $0.hosts[host]?.limit ?? perHost }
    }

    /// Requests in flight to a host.
    func active(on host: String) -> Int {
        state.withLock { $0.hosts[host]?.active ?? 0 }
    }

    private func drain(_ host: String) {
        let now = sleeper.now()
        let starts = state.withLock { state -> [@Sendable () -> Void] in
            guard var entry = state.hosts[host] else { return [] }
            if let notBefore = entry.notBefore {
                if notBefore > now { return [] }
                entry.notBefore = nil
            }
            var starts: [@Sendable () -> Void] = []
            while entry.active < entry.limit, !entry.waiting.isEmpty {
                starts.append(entry.waiting.removeFirst().start)
                entry.active += 1
            }
            if entry.active == 0 && entry.waiting.isEmpty && entry.limit == perHost {
                state.hosts[host] = nil
            } else {
                state.hosts[host] = entry
            }
            return starts
        }
        for start in starts { start() }
        scheduleWakeIfCoolingDown(host)
    }

    private func scheduleWakeIfCoolingDown(_ host: String) {
        let now = sleeper.now()
        let delay = state.withLock { state -> Duration? in
            guard var entry = state.hosts[host], !entry.waiting.isEmpty, !entry.wakeScheduled,
                  let notBefore = entry.notBefore, notBefore > now else { return nil }
            entry.wakeScheduled = true
            state.hosts[host] = entry
            return notBefore - now
        }
        guard let delay else { return }
        sleeper.after(delay) { [self] in
            state.withLock { $0.hosts[host]?.wakeScheduled = false }
            drain(host)
        }
    }
}
