/// Polls `condition` every 10 ms until it holds or `timeout` passes; returns whether it held. The one such helper of
/// every test target. The default deadline is generous: a condition that holds ends the wait at once, and under
/// ThreadSanitizer, with every suite running beside it on two cores, a request to the loopback server once took more
/// than 5 s to arrive (a CI run on 2026-11-26).
public func eventually(within timeout: Duration = .seconds(30), _ condition: () -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if condition() { return true }
        try? await Task.sleep(for: .milliseconds(10))
    }
    return condition()
}
