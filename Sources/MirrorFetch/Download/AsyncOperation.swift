import Foundation
import MirrorSync

/// An `Operation` that finishes when its work says so, not when `start()` returns.
///
/// Subclasses override `execute()`, start their asynchronous work there, and call `finish()` exactly
/// when it is done (extra calls are ignored). If the operation was cancelled before the queue
/// started it, `execute()` is never called: the operation finishes at once and `didSkipExecution()`
/// runs instead, so that a subclass can still deliver its completion.
///
/// - Important: On Linux, swift-corelibs-foundation has no KVO: `didChangeValue(forKey: "isFinished")`
///   is the call that tells the queue to free the slot, and the overridden `isFinished` must already
///   return true when it is made. Forgetting it hangs the queue.
class AsyncOperation: Operation, @unchecked Sendable {
    // `state` is the only mutable stored property, and its lock guards it.
    private struct State {
        var isExecuting = false
        var isFinished = false
    }

    private let state = Locked(State())

    override var isAsynchronous: Bool { true }
    override var isExecuting: Bool { state.withLock { $0.isExecuting } }
    override var isFinished: Bool { state.withLock { $0.isFinished } }

    override final func start() {
        if isCancelled {
            finish(wasStarted: false)
            didSkipExecution()
            return
        }
        willChangeValue(forKey: "isExecuting")
        state.withLock { $0.isExecuting = true }
        didChangeValue(forKey: "isExecuting")
        execute()
    }

    /// The operation's work. Call `finish()` when it is done, from any thread.
    func execute() {
        finish()
    }

    /// Called, after the operation finished, instead of `execute()` when it was cancelled before the
    /// queue started it. Subclasses that promise a completion must report the cancellation here.
    func didSkipExecution() {}

    /// Marks the operation finished; only the first call has an effect.
    final func finish() {
        finish(wasStarted: true)
    }

    private func finish(wasStarted: Bool) {
        let changed = state.withLock { state -> Bool in
            guard !state.isFinished else { return false }
            state.isFinished = true
            state.isExecuting = false
            return true
        }
        guard changed else { return }
        willChangeValue(forKey: "isFinished")
        if wasStarted { willChangeValue(forKey: "isExecuting") }
        if wasStarted { didChangeValue(forKey: "isExecuting") }
        didChangeValue(forKey: "isFinished")
    }
}
