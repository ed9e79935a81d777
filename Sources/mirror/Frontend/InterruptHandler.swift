import Dispatch
import Foundation
import Synchronization

/// Turns SIGINT and SIGTERM into a call of `onInterrupt` (once), so the run can cancel its work,
/// remove temporary files and commit what it saved; a second signal exits at once with 130.
final class InterruptHandler {
    // Kept only to keep the sources alive and cancel them at the end.
    private let sources: [any DispatchSourceSignal]
    private let flag = Flag()

    private final class Flag: Sendable {
        let interrupted = Atomic<Bool>(false)
    }

    init(onInterrupt: @escaping @Sendable () -> Void) {
        let flag = self.flag
        sources = [SIGINT, SIGTERM].map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler {
                if flag.interrupted.exchange(true, ordering: .relaxed) {
                    _exit(130)
                }
                onInterrupt()
            }
            source.resume()
            return source
        }
    }

    /// Whether a signal arrived.
    var wasInterrupted: Bool { flag.interrupted.load(ordering: .relaxed) }

    deinit {
        for source in sources { source.cancel() }
    }
}
