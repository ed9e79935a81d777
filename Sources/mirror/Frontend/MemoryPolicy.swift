import CMalloc
import Foundation
import MirrorKit

/// How the process asks glibc's allocator to keep a long run's memory flat.
///
/// The heap a run needs is flat (its growing lookups spill to disk), but glibc keeps up to 8 arenas per core, one per
/// thread that allocates, and each arena holds on to the pages its threads freed: a 100,000-image run's resident set
/// grew to 73 MB around a heap of 18 MB. A trim twice a second gives the free pages back (62.7 MB); one arena per core
/// keeps fewer partly used pages (58.9 MB) at the price of more lock waits between threads (+3 % CPU in paired runs;
/// BENCHMARKS.md, "Memory").
enum MemoryPolicy {
    /// How often free pages go back to the kernel. `malloc_trim` walks the arenas' free lists; on a heap of tens of
    /// megabytes that is well under a millisecond.
    static let trimInterval: Duration = .milliseconds(500)

    /// Applies the policy for this process; call once, before the work starts its threads.
    static func apply() {
        _ = mirror_malloc_limit_arenas(Int32(max(2, ProcessInfo.processInfo.activeProcessorCount)))
        let thread = Thread {
            while true {
                Thread.sleep(forTimeInterval: trimInterval.seconds)
                _ = mirror_malloc_trim()
            }
        }
        thread.name = "mirror-trim"
        thread.start()
    }
}
