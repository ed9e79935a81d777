import Foundation

/// A value that can only be reached while holding its lock.
///
/// The single synchronisation primitive of `MirrorTestSupport`, in the spirit of `NIOLockedValueBox`:
/// there is no way to read or write `value` except inside ``withLock(_:)``, so state cannot be touched
/// unguarded by accident. Keep the closures short and never call back into the event loop from them.
final class Locked<Value> {
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) {
        self.value = value
    }

    /// Runs `body` with exclusive access to the value and returns its result.
    func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}

// Every access to `value` goes through `lock` in `withLock`, so the box is safe to share when its value is.
extension Locked: @unchecked Sendable where Value: Sendable {}
