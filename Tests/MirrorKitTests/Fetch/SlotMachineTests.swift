@testable import MirrorCore
@testable import MirrorFetch
import Testing

/// The slot machine driven without I/O: every event is a call, every decision an action to look at.
@Suite("Slot machine")
struct SlotMachineTests {
    typealias Instant = ContinuousClock.Instant
    let now = ContinuousClock.now

    // MARK: Admission and caps

    @Test func noMoreThanConcurrencyRunAndTheOldestWaitingStartsFirst() {
        // Given two slots and five downloads over three hosts
        let slots = Machine(concurrency: 2, perHost: 6)
        var started: [Int] = []
        for (id, host) in [(1, "a"), (2, "b"), (3, "c"), (4, "a"), (5, "b")] {
            started += starts(slots.submit(id, host: host, now: now))
        }

        // Then two run, and each slot given back goes to the oldest download waiting, whatever its host
        #expect(started == [1, 2])
        #expect(slots.running == 2)
        #expect(starts(slots.finished(2, outcome: .success, now: now)) == [3])
        #expect(starts(slots.finished(1, outcome: .success, now: now)) == [4])
        #expect(starts(slots.finished(3, outcome: .failure, now: now)) == [5])
        #expect(starts(slots.finished(4, outcome: .success, now: now)).isEmpty)
        #expect(slots.running == 1 && slots.count == 1)
    }

    @Test func aHostAtItsCapDoesNotHoldBackAnother() {
        // Given one slot per host and four slots in all
        let slots = Machine(concurrency: 4, perHost: 1)

        // When three downloads of one host come before one of another
        let first = (1...3).flatMap { starts(slots.submit($0, host: "busy", now: now)) }
        let other = starts(slots.submit(4, host: "other", now: now))

        // Then the busy host runs one, the other host is not kept waiting behind it, and the busy host's next
        // starts when its one slot is given back
        #expect(first == [1])
        #expect(other == [4])
        #expect(starts(slots.finished(1, outcome: .success, now: now)) == [2])
        #expect(slots.active(on: "busy") == 1)
    }

    @Test func aThrottledHostGetsFewerConcurrentRequests() {
        let slots = Machine(concurrency: 64, perHost: 6, recoveryStreak: 2)
        for id in 0..<6 { #expect(starts(slots.submit(id, host: "h", now: now)) == [id]) }
        #expect(slots.active(on: "h") == 6)
        #expect(starts(slots.finished(0, outcome: .throttled(retryAfter: nil), now: now)).isEmpty)
        #expect(slots.limit(of: "h") == 3)
        #expect(starts(slots.finished(1, outcome: .throttled(retryAfter: nil), now: now)).isEmpty)
        #expect(slots.limit(of: "h") == 1)
        // Four in flight above the new limit: nothing new starts until they drain below it.
        #expect(starts(slots.submit(6, host: "h", now: now)).isEmpty)
        var started: [Int] = []
        for id in 2..<6 { started += starts(slots.finished(id, outcome: .success, now: now)) }
        #expect(started == [6])
        // Recovery: every two successes give one slot back.
        #expect(slots.limit(of: "h") == 3)
    }

    @Test func aRetryAfterHoldsTheHostUntilItsTime() {
        // Given a host that answered 429 with Retry-After: 5 s
        let slots = Machine(concurrency: 16, perHost: 2)
        #expect(starts(slots.submit(1, host: "h", now: now)) == [1])
        _ = slots.finished(1, outcome: .throttled(retryAfter: .seconds(5)), now: now)

        // When another download asks before that time; and one for another host
        let held = slots.submit(2, host: "h", now: now + .seconds(1))
        #expect(starts(held).isEmpty)
        #expect(wake(held) == now + .seconds(5))
        #expect(starts(slots.submit(3, host: "other", now: now + .seconds(1))) == [3])

        // Then it waits for the deadline, and starts when time reaches it; the idle host's state is then dropped
        #expect(slots.nextDeadline == now + .seconds(5))
        #expect(starts(slots.tick(now: now + .seconds(4))).isEmpty)
        #expect(starts(slots.tick(now: now + .seconds(5))) == [2])
        #expect(slots.nextDeadline == nil)
        _ = slots.finished(3, outcome: .success, now: now + .seconds(5))
        #expect(slots.hostCount == 1)
    }

    // MARK: Rate

    @Test func aHostRateSpacesTheStartsOfOneHost() {
        // Given five requests per host per second at most (210 ms apart: 5 % for arrival jitter), and six slots
        let slots = Machine(concurrency: 16, perHost: 6, rate: 5)
        let spacing = slots.spacing!
        #expect(spacing == .milliseconds(210))

        // When three downloads ask at once: one starts, the others wait for time; another host is not held back
        #expect(starts(slots.submit(1, host: "h", now: now)) == [1])
        #expect(starts(slots.submit(2, host: "h", now: now)).isEmpty)
        #expect(starts(slots.submit(3, host: "h", now: now)).isEmpty)
        #expect(starts(slots.submit(4, host: "other", now: now)) == [4])

        // Then one starts each spacing, even when a slot is given back before it
        #expect(slots.nextDeadline == now + spacing)
        #expect(starts(slots.finished(1, outcome: .success, now: now + .milliseconds(50))).isEmpty)
        #expect(starts(slots.tick(now: now + .milliseconds(209))).isEmpty)
        #expect(starts(slots.tick(now: now + spacing)) == [2])
        #expect(slots.nextDeadline == now + spacing + spacing)
        #expect(starts(slots.tick(now: now + spacing + spacing)) == [3])
        #expect(slots.nextDeadline == nil)

        // And a request made outside an attempt (robots.txt) counts against the rate
        slots.noteRequest(host: "fresh", now: now)
        #expect(starts(slots.submit(5, host: "fresh", now: now + .milliseconds(100))).isEmpty)
        #expect(starts(slots.tick(now: now + spacing)) == [5])
    }

    @Test func anAttemptWhoseSlotFetchedTheSiteFilesQueuesAgainBehindTheRateFirstOfItsHost() {
        // Given a rate and two downloads of one host; the first starts and its slot fetches the host's site files,
        // which take its start (noted at the fetch's end)
        let slots = Machine(concurrency: 4, perHost: 4, rate: 5)
        let spacing = slots.spacing!
        #expect(starts(slots.submit(1, host: "h", now: now)) == [1])
        #expect(starts(slots.submit(2, host: "h", now: now)).isEmpty)
        let fetched = now + .milliseconds(30)
        slots.noteRequest(host: "h", now: fetched)

        // When it gives its slot back without a request of its own
        let actions = slots.yielded(1, now: fetched)

        // Then it holds no slot, waits for the host's next start on the one timer, and starts then — before the download
        // that came after it
        #expect(starts(actions).isEmpty && slots.running == 0)
        #expect(wake(actions) != nil)
        #expect(starts(slots.tick(now: fetched + spacing - .milliseconds(1))).isEmpty)
        #expect(slots.nextDeadline == fetched + spacing)
        #expect(starts(slots.tick(now: fetched + spacing)) == [1])
        #expect(starts(slots.tick(now: fetched + spacing + spacing)) == [2])
    }

    @Test("the spacing is taken when an attempt starts, not when it is queued")
    func theSpacingIsTakenAtTheStart() {
        // Given three slots, all busy, and five requests per second per host
        let slots = Machine(concurrency: 3, perHost: 4, rate: 5)
        let spacing = slots.spacing!
        #expect(starts(slots.submit(1, host: "a", now: now)) == [1])
        #expect(starts(slots.submit(2, host: "b", now: now)) == [2])
        #expect(starts(slots.submit(6, host: "c", now: now)) == [6])

        // When three downloads of one host queue behind them, and all slots come free a second later at once
        for id in 3...5 { #expect(starts(slots.submit(id, host: "h", now: now)).isEmpty) }
        let later = now + .seconds(1)
        let freed = [1, 2, 6].flatMap { starts(slots.finished($0, outcome: .success, now: later)) }

        // Then only one of them starts then (queued a second earlier, they are not spaced already), the next one a
        // spacing later, and the last a spacing after that, though a slot was free all along
        #expect(freed == [3])
        #expect(starts(slots.tick(now: later + spacing - .milliseconds(1))).isEmpty)
        #expect(starts(slots.tick(now: later + spacing)) == [4])
        #expect(starts(slots.tick(now: later + spacing + spacing)) == [5])
    }

    @Test func idleHostsAreForgottenOnceTheirSpacingPasses() {
        // Given 10,000 hosts, each asked once and finished at once, at a rate of 10 per second
        let slots = Machine(concurrency: 16, perHost: 2, rate: 10)
        var now = now
        for id in 0..<10_000 {
            let host = "h\(id)"
            #expect(starts(slots.submit(id, host: host, now: now)) == [id])
            _ = slots.finished(id, outcome: .success, now: now)
            now += .milliseconds(1)
        }
        // Then only the hosts whose spacing (105 ms) has not passed are kept: state stays bounded by the recent hosts
        #expect(slots.hostCount < 4_096 + 200, "\(slots.hostCount) hosts kept")
        // And without a rate an idle host is forgotten at once
        let plain = Machine(concurrency: 16, perHost: 2)
        for id in 0..<1_000 {
            _ = plain.submit(id, host: "h\(id)", now: now)
            _ = plain.finished(id, outcome: .success, now: now)
        }
        #expect(plain.hostCount == 0)
        #expect(plain.count == 0)
    }

    // MARK: Retries and cancellation

    @Test func aRetryHoldsNoSlotUntilItsTimeAndThenQueuesBehindOthers() {
        // Given one slot
        let slots = Machine(concurrency: 1, perHost: 4)
        #expect(starts(slots.submit(1, host: "h", now: now)) == [1])
        #expect(starts(slots.submit(2, host: "h", now: now)).isEmpty)

        // When the first fails and is to be retried in 2 s
        let actions = slots.finished(1, outcome: .failure, retryAt: now + .seconds(2), now: now)

        // Then its slot goes to the waiting one at once, and a wake-up is asked for the retry
        #expect(starts(actions) == [2])
        #expect(wake(actions) == now + .seconds(2))
        #expect(slots.count == 2)
        // and the retry queues at its time, behind what is running, and starts when the slot comes free
        #expect(starts(slots.tick(now: now + .seconds(1))).isEmpty)
        #expect(starts(slots.tick(now: now + .seconds(2))).isEmpty)
        #expect(starts(slots.finished(2, outcome: .success, now: now + .seconds(3))) == [1])
        #expect(starts(slots.finished(1, outcome: .success, now: now + .seconds(4))).isEmpty)
        #expect(slots.count == 0 && slots.running == 0)
    }

    @Test func cancellingWithdrawsWhatHoldsNoSlotAndLeavesWhatRuns() {
        let slots = Machine(concurrency: 1, perHost: 4)
        #expect(starts(slots.submit(1, host: "h", now: now)) == [1])
        #expect(starts(slots.submit(2, host: "h", now: now)).isEmpty)
        #expect(starts(slots.submit(3, host: "h", now: now)).isEmpty)

        // A running attempt is not withdrawn (it must be cancelled and finish); a waiting one is, and never starts
        #expect(!slots.cancel(1, now: now))
        #expect(slots.cancel(2, now: now))
        #expect(!slots.cancel(2, now: now))
        #expect(!slots.cancel(99, now: now))
        // A retry waiting for its time is withdrawn too, and its time comes to nothing
        #expect(starts(slots.finished(1, outcome: .failure, retryAt: now + .seconds(1), now: now)) == [3])
        #expect(slots.cancel(1, now: now))
        #expect(starts(slots.finished(3, outcome: .success, now: now + .seconds(2))).isEmpty)
        #expect(starts(slots.tick(now: now + .seconds(2))).isEmpty)
        #expect(slots.count == 0 && slots.running == 0 && slots.hostCount == 0)
    }

    // MARK: Invariants under random events

    @Test("caps, rate and exactness hold over 20,000 random events", arguments: [1, 2, 3])
    func invariantsHoldUnderRandomEvents(seed: UInt64) {
        // Given a machine with every limit on, and a random stream of submissions, finishes (some throttled, some
        // retried), cancellations and ticks over a few hosts
        var random = SeededRandom(seed: seed)
        let slots = Machine(concurrency: 5, perHost: 3, rate: 20, recoveryStreak: 3)
        let spacing = slots.spacing!
        let hosts = ["a", "b", "c", "d"]
        var clock = now
        var hostOf: [Int: String] = [:]
        var running: Set<Int> = []
        var alive: Set<Int> = []
        var lastStart: [String: Instant] = [:]
        var nextID = 0
        var startedTotal = 0

        func apply(_ actions: [SlotMachine.Action]) {
            for id in starts(actions) {
                // Then nothing starts twice, nothing unknown starts, and a host's starts are a spacing apart
                #expect(alive.contains(id) && !running.contains(id), "start of \(id)")
                running.insert(id)
                startedTotal += 1
                let host = hostOf[id]!
                if let last = lastStart[host] { #expect(clock - last >= spacing, "\(host) started \(clock - last) after its last") }
                lastStart[host] = clock
            }
            #expect(running.count <= 5)
            for host in hosts { #expect(slots.active(on: host) <= 3) }
        }

        for _ in 0..<20_000 {
            clock += .milliseconds(Int.random(in: 0...20, using: &random))
            switch Int.random(in: 0..<10, using: &random) {
            case 0...3:
                nextID += 1
                let host = hosts.randomElement(using: &random)!
                hostOf[nextID] = host
                alive.insert(nextID)
                apply(slots.submit(nextID, host: host, now: clock))
            case 4...6:
                guard let id = running.randomElement(using: &random) else { continue }
                running.remove(id)
                let roll = Int.random(in: 0..<10, using: &random)
                let outcome: SlotMachine.Outcome = roll == 0 ? .throttled(retryAfter: .milliseconds(300)) : roll == 1 ? .failure : .success
                let retryAt: Instant? = roll <= 1 ? clock + .milliseconds(100) : nil
                if retryAt == nil { alive.remove(id) }
                apply(slots.finished(id, outcome: outcome, retryAt: retryAt, now: clock))
            case 7:
                guard let id = alive.randomElement(using: &random) else { continue }
                if slots.cancel(id, now: clock) {
                    #expect(!running.contains(id))
                    alive.remove(id)
                } else {
                    #expect(running.contains(id))
                }
            default:
                apply(slots.tick(now: clock))
            }
            #expect(slots.running == running.count)
            #expect(slots.count == alive.count)
        }
        // And when everything running finishes, time passes and nothing is cancelled, everything alive runs
        for _ in 0..<10_000 where !alive.isEmpty {
            clock += .milliseconds(50)
            let finishing = running
            running.removeAll()
            for id in finishing {
                alive.remove(id)
                apply(slots.finished(id, outcome: .success, now: clock))
            }
            apply(slots.tick(now: clock))
        }
        #expect(alive.isEmpty)
        #expect(slots.count == 0 && slots.running == 0)
        #expect(startedTotal > 1_000)
    }

    // MARK: Helpers

    /// The machine behind a reference, so that `#expect` can look at what a call returns (it cannot call a mutating
    /// method of a local variable).
    @dynamicMemberLookup
    final class Machine {
        var slots: SlotMachine

        init(concurrency: Int, perHost: Int, rate: Double? = nil, recoveryStreak: Int = 8) {
            slots = SlotMachine(concurrency: concurrency, perHost: perHost, rate: rate, recoveryStreak: recoveryStreak)
        }

        subscript<Value>(dynamicMember path: KeyPath<SlotMachine, Value>) -> Value { slots[keyPath: path] }
        func limit(of host: String) -> Int { slots.limit(of: host) }
        func active(on host: String) -> Int { slots.active(on: host) }
        func submit(_ id: Int, host: String, now: Instant) -> [SlotMachine.Action] { slots.submit(id, host: host, now: now) }
        func finished(_ id: Int, outcome: SlotMachine.Outcome, retryAt: Instant? = nil, now: Instant) -> [SlotMachine.Action] {
            slots.finished(id, outcome: outcome, retryAt: retryAt, now: now)
        }
        func cancel(_ id: Int, now: Instant) -> Bool { slots.cancel(id, now: now) }
        func tick(now: Instant) -> [SlotMachine.Action] { slots.tick(now: now) }
        func noteRequest(host: String, now: Instant) { slots.noteRequest(host: host, now: now) }
        func yielded(_ id: Int, now: Instant) -> [SlotMachine.Action] { slots.yielded(id, now: now) }
    }

    private func starts(_ actions: [SlotMachine.Action]) -> [Int] {
        actions.compactMap { if case let .start(id) = $0 { id } else { nil } }
    }

    private func wake(_ actions: [SlotMachine.Action]) -> Instant? {
        actions.lazy.compactMap { if case let .wake(at) = $0 { at } else { nil } }.first
    }
}
