import Foundation

/// A value that can only be reached while holding its lock: the one lock of the package.
///
/// In the spirit of `NIOLockedValueBox`: there is no way to read or write the value except inside
/// ``withLock(_:)``, so state cannot be touched unguarded by accident. Keep the closures short; never
/// wait, call out or take another `Locked` inside one.
///
/// Why an `NSLock` and not `Synchronization.Mutex`: on Linux a contended `Mutex` is handed over by the
/// kernel (`FUTEX_LOCK_PI`) inside the uninstrumented runtime, so ThreadSanitizer never sees the
/// acquire/release and reports every access made under it as a race (Swift 6.3.1; reproduced outside
/// mirror). `NSLock` is a `pthread_mutex_t`, which TSan intercepts, so `scripts/sanitize thread` checks
/// our locking instead of being told to ignore it. Uncontended, both cost about the same.
package final class Locked<Value> {
    private let lock = NSLock()
    private var value: Value

    package init(_ value: Value) {
        self.value = value
    }

    /// Runs `body` with exclusive access to the value and returns its result.
    package func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}

// `value` is only ever read or written inside `withLock`, under `lock`, so the box is safe to share
// between threads whenever its value is.
extension Locked: @unchecked Sendable where Value: Sendable {}
