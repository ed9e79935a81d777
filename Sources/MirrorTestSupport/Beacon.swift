import Foundation
import MirrorSync

/// Counts events and wakes whoever waits for a number of them: how a test learns that a process, a server or a
/// component reached a point (a request held at a ``Gate``, a retry scheduled, a long wait begun) at the moment it
/// happens, instead of polling for it and guessing how long that takes on a busy machine.
///
/// ```swift
/// let retrying = Beacon()
/// let manager = DownloadManager(configuration: configuration) { if case .retrying = $0 { retrying.signal() } }
/// // …
/// #expect(await retrying.wait(for: 1))
/// ```
public final class Beacon: Sendable {
    private struct State {
        var count = 0
        var waiters: [Int: (count: Int, continuation: CheckedContinuation<Bool, Never>)] = [:]
        var nextWaiter = 0
    }

    private let state = Locked(State())

    public init() {}

    /// Events signalled so far.
    public var count: Int { state.withLock { $0.count } }

    /// Counts one event, waking the waits it completes.
    public func signal() {
        let woken = state.withLock { state -> [CheckedContinuation<Bool, Never>] in
            state.count += 1
            let due = state.waiters.filter { $0.value.count <= state.count }
            for id in due.keys { state.waiters[id] = nil }
            return due.values.map(\.continuation)
        }
        for continuation in woken { continuation.resume(returning: true) }
    }

    /// Returns once `count` events have been signalled: `true` at the event that makes the count (not at a poll after
    /// it), `false` when `timeout` passed first — a bound for a test that would otherwise wait forever, not a guess at
    /// how fast anything is.
    public func wait(for count: Int, within timeout: Duration = .seconds(300)) async -> Bool {
        let id = state.withLock { state -> Int in
            defer { state.nextWaiter += 1 }
            return state.nextWaiter
        }
        // The timer starts once the wait is registered, so that it cannot fire before there is a wait to end.
        let timer = Locked<Task<Void, Never>?>(nil)
        let reached = await withCheckedContinuation { continuation in
            let ready = state.withLock { state -> Bool in
                guard state.count < count else { return true }
                state.waiters[id] = (count, continuation)
                return false
            }
            if ready {
                continuation.resume(returning: true)
                return
            }
            timer.withLock {
                $0 = Task { [state] in
                    try? await Task.sleep(for: timeout)
                    guard !Task.isCancelled else { return }
                    let continuation = state.withLock { $0.waiters.removeValue(forKey: id)?.continuation }
                    continuation?.resume(returning: false)
                }
            }
        }
        timer.withLock { $0?.cancel() }
        return reached
    }
}
