import Foundation
import MirrorSync

/// Resources kept for reuse from one transfer or image to the next (byte buffers, libcurl easy handles): a fresh one
/// costs allocations and setup every time, a reused one nothing. At most ``limit`` are kept; more are discarded when
/// given back. Thread-safe.
package final class ReusePool<Resource>: @unchecked Sendable {
    // A resource is owned by one caller at a time and crosses threads only in `free`, under its lock.
    private let free = Locked<[Resource]>([])
    /// Resources kept for reuse at most.
    package let limit: Int
    private let make: @Sendable () -> Resource?
    private let reset: @Sendable (Resource) -> Void
    private let discard: @Sendable (Resource) -> Void

    /// - Parameters:
    ///   - make: a new resource, or nil when none can be made.
    ///   - reset: readies a resource given back for its next taker (before it is kept).
    ///   - discard: frees a resource that is not kept.
    package init(
        limit: Int, make: @escaping @Sendable () -> Resource?, reset: @escaping @Sendable (Resource) -> Void = { _ in },
        discard: @escaping @Sendable (Resource) -> Void
    ) {
        self.limit = limit
        self.make = make
        self.reset = reset
        self.discard = discard
    }

    deinit {
        for resource in free.withLock({ $0 }) { discard(resource) }
    }

    /// A kept resource, or a new one (nil only when `make` fails).
    package func take() -> Resource? {
        free.withLock { $0.popLast() } ?? make()
    }

    /// Gives back a resource from ``take()`` that its taker no longer uses.
    package func give(_ resource: Resource) {
        reset(resource)
        let kept = free.withLock { free -> Bool in
            guard free.count < limit else { return false }
            free.append(resource)
            return true
        }
        if !kept { discard(resource) }
    }
}
