import Foundation
import MirrorSync
@testable import MirrorCore
@testable import MirrorFetch
@testable import MirrorKit
@testable import MirrorSearch
@testable import MirrorStorage
import MirrorTransport
import Testing

@Suite("AsyncOperation on an OperationQueue")
struct AsyncOperationTests {
    final class Probe: AsyncOperation, @unchecked Sendable {
        // Counters only; the lock guards them.
        let calls = Locked((executed: 0, skipped: 0))
        let finishLater: Bool

        init(finishLater: Bool) {
            self.finishLater = finishLater
        }

        override func execute() {
            calls.withLock { $0.executed += 1 }
            if finishLater {
                DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(20)) { self.finish() }
            } else {
                finish()
            }
        }

        override func didSkipExecution() {
            calls.withLock { $0.skipped += 1 }
        }
    }

    @Test func finishesFromAnotherThreadAndFreesItsSlot() {
        // Given a queue of width 2 and ten operations that finish asynchronously
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 2
        let probes = (0..<10).map { _ in Probe(finishLater: true) }

        // When they run
        queue.addOperations(probes, waitUntilFinished: true)

        // Then each executed once and is finished (the queue would hang otherwise)
        #expect(probes.allSatisfy { $0.isFinished && !$0.isExecuting })
        #expect(probes.allSatisfy { $0.calls.withLock { $0 } == (1, 0) })
    }

    @Test func aCancelledOperationSkipsExecutionButStillReports() {
        // Given a suspended queue holding an operation that is then cancelled
        let queue = OperationQueue()
        queue.isSuspended = true
        let probe = Probe(finishLater: false)
        queue.addOperation(probe)
        probe.cancel()

        // When the queue resumes
        queue.isSuspended = false
        queue.waitUntilAllOperationsAreFinished()

        // Then it finished without executing, and said so
        #expect(probe.isFinished)
        #expect(probe.calls.withLock { $0 } == (0, 1))
    }
}
