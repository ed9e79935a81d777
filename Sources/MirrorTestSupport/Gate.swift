import Foundation
import MirrorSync

/// A hold on responses that the test opens: the way to stop a server at the moment a test needs, instead of making it
/// slow and hoping the process under test is still mid-way when the test acts.
///
/// A ``Response`` with a ``Response/gate`` is not answered while its gate is shut: the request is read and counted, then
/// its response waits — no thread sleeps, the connection stays open — until ``open()``, after which it goes out (after
/// any latency) and every later one passes at once. A gate made ``init(letting:)`` a number lets that many responses
/// through before it holds the rest. The test learns that a request reached the gate from the gate itself
/// (``waitForArrivals(_:within:)``, woken by the arrival, not by polling), so it acts knowing where the process is:
///
/// ```swift
/// let gate = Gate()
/// server.route("/late.png", Response.ok(png).held(by: gate))
/// // … start the process; it blocks on /late.png
/// #expect(await gate.waitForArrivals(1))
/// // … kill it, signal it, or run a second one beside it; then
/// gate.open()
/// ```
public final class Gate: Sendable {
    private struct State {
        var isOpen = false
        /// Responses still let through before the gate holds.
        var passes: Int
        var held: [@Sendable () -> Void] = []
    }

    private let state: Locked<State>
    /// The requests that reached the gate, held or let through.
    private let reached = Beacon()

    /// A shut gate that lets the first `passing` responses through (default none).
    public init(letting passing: Int = 0) {
        state = Locked(State(passes: passing))
    }

    /// Requests that reached the gate, held or let through.
    public var arrivals: Int { reached.count }

    /// Responses waiting at the gate now.
    public var held: Int { state.withLock { $0.held.count } }

    /// Whether the gate has been opened.
    public var isOpen: Bool { state.withLock { $0.isOpen } }

    /// Lets every held response go, and every later one through.
    public func open() {
        let released = state.withLock { state -> [@Sendable () -> Void] in
            state.isOpen = true
            defer { state.held = [] }
            return state.held
        }
        for release in released { release() }
    }

    /// Returns once `count` requests have reached the gate: `true` at the arrival that makes the count (not at a poll
    /// after it), `false` when `timeout` passed first — a bound for a test that would otherwise wait forever, not a
    /// guess at how fast the process is.
    public func waitForArrivals(_ count: Int, within timeout: Duration = .seconds(300)) async -> Bool {
        await reached.wait(for: count, within: timeout)
    }

    /// A request reached the gate: `release` runs now when the gate is open or still letting responses through, else
    /// when it opens (on the thread that opens it).
    func admit(_ release: @escaping @Sendable () -> Void) {
        let passes = state.withLock { state -> Bool in
            let passes = state.isOpen || state.passes > 0
            if passes {
                state.passes = max(0, state.passes - 1)
            } else {
                state.held.append(release)
            }
            return passes
        }
        reached.signal()
        if passes { release() }
    }
}
