import Foundation

/// The memory that the transforms running at once share: each takes what its decode will need (estimated from the
/// image's headers) before it decodes, and gives it back after. One that would pass the budget waits, in arrival order,
/// rather than exceed it, so a handful of large images at once cannot together take what none would alone (six bombs at
/// once once took 2.4 GB on a 2-core machine).
///
/// Taking the whole budget is how a transform decodes with nothing beside it (``DecodeJournal``'s suspects).
///
/// Thread safety: `take` blocks the calling thread (the download queue's, never the cooperative pool's) until its turn;
/// every method may be called from any thread.
package final class DecodeBudget: @unchecked Sendable {  // every var below is read and written under `condition`'s lock
    /// The bytes the transforms may hold together.
    package let capacity: Int

    private let condition = NSCondition()
    private var inUse = 0
    private var highest = 0
    private var nextTicket = 0
    private var serving = 0

    /// A budget of `capacity` bytes.
    package init(capacity: Int) {
        self.capacity = max(1, capacity)
    }

    /// Waits until `bytes` (at most the capacity: more is taken as all of it) fit beside what is taken, after everyone
    /// who asked before, then takes them. Returns what was taken, for ``give(_:)``.
    package func take(_ bytes: Int) -> Int {
        let bytes = min(max(bytes, 0), capacity)
        condition.lock()
        defer { condition.unlock() }
        let ticket = nextTicket
        nextTicket += 1
        while ticket != serving || inUse + bytes > capacity {
            condition.wait()
        }
        serving += 1
        inUse += bytes
        highest = max(highest, inUse)
        condition.broadcast()  // the next in line may fit too
        return bytes
    }

    /// Gives back what ``take(_:)`` returned.
    package func give(_ bytes: Int) {
        condition.lock()
        inUse -= bytes
        condition.broadcast()
        condition.unlock()
    }

    /// Transforms waiting for their turn (for tests).
    package var waiting: Int {
        condition.lock()
        defer { condition.unlock() }
        return nextTicket - serving
    }

    /// The most bytes ever taken at once (for tests).
    package var peak: Int {
        condition.lock()
        defer { condition.unlock() }
        return highest
    }

    /// The bytes taken now (for tests).
    package var taken: Int {
        condition.lock()
        defer { condition.unlock() }
        return inUse
    }
}
