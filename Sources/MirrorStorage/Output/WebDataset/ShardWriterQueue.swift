import Foundation
import MirrorSync
import MirrorCore

/// One background thread that writes shards in the order they complete, and tells when all are written.
final class ShardWriterQueue: Sendable {
    private struct Waiting {
        var pending = 0
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    private let pool = BlockingPool(maximumThreads: 1, name: "mirror.shards")
    private let waiting = Locked(Waiting())

    package func submit(_ job: @escaping @Sendable () -> Void) {
        waiting.withLock { $0.pending += 1 }
        pool.submit { [self] in
            job()
            let ready = waiting.withLock { waiting -> [CheckedContinuation<Void, Never>] in
                waiting.pending -= 1
                guard waiting.pending == 0 else { return [] }
                defer { waiting.waiters = [] }
                return waiting.waiters
            }
            for waiter in ready { waiter.resume() }
        }
    }

    /// Returns once every job submitted so far has run.
    package func drain() async {
        await withCheckedContinuation { continuation in
            let idle = waiting.withLock { waiting -> Bool in
                if waiting.pending == 0 { return true }
                waiting.waiters.append(continuation)
                return false
            }
            if idle { continuation.resume() }
        }
    }
}
