import Synchronization

/// A value that can only be reached under its lock: a shareable box around a `Mutex`.
///
/// Use it where a `Mutex` would have to be captured by escaping closures (a `Mutex` cannot be
/// copied, so it cannot be captured); elsewhere prefer a `Mutex` stored property.
final class Locked<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>

    init(_ value: Value) {
        mutex = Mutex(value)
    }

    /// Runs `body` with exclusive access to the value.
    func withLock<Result>(_ body: (inout sending Value) throws -> sending Result) rethrows -> sending Result {
        try mutex.withLock(body)
    }
}
