import CSyscalls
import Foundation

/// How the process keeps a long run's resident memory close to its heap.
///
/// The heap a run needs is flat (its growing lookups spill to disk), but glibc gives each thread that allocates an
/// arena of its own (up to 8 per core) and each arena keeps the pages its threads freed: a 100,000-image run's
/// resident set grew to 73 MB around a heap of 18 MB. A trim twice a second gives those pages back (62.7 MB, CPU
/// unchanged within the noise). Capping the arenas at one per core took it to 58.9 MB but cost 3–5 % CPU (threads
/// wait on each other's arena locks), so the cap is not set (BENCHMARKS.md, "Memory").
enum MemoryPolicy {
    /// How often free pages go back to the kernel. `malloc_trim` walks the arenas' free lists; on a heap of tens of
    /// megabytes that is well under a millisecond.
    static let trimInterval: Duration = .milliseconds(500)

    /// Starts the trimming thread; call once.
    static func apply() {
        let thread = Thread {
            mirror_name_this_thread("mirror.trim")
            while true {
                Thread.sleep(forTimeInterval: trimInterval.seconds)
                _ = mirror_malloc_trim()
            }
        }
        thread.start()
    }
}
