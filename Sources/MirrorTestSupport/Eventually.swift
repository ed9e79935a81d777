/// Polls `condition` every 10 ms until it holds or `timeout` has been spent looking; returns whether it held. The one
/// such helper of every test target.
///
/// The wait is counted in looks (`timeout` / 10 ms of them), not read off the clock: a test whose task the process does
/// not run for a while is not charged for that time. Under ThreadSanitizer, with every suite started at once on two
/// cores, the whole process once made no progress for 225 s (a CI run on 2026-11-28) — a request to the loopback server
/// took more than 5 s to arrive in another (2026-11-26) — and a deadline on the clock would have run out while neither
/// the condition nor the test had a chance to run. On a machine that runs the test, the wait is as long as before.
public func eventually(within timeout: Duration = .seconds(30), _ condition: () -> Bool) async -> Bool {
    let interval = Duration.milliseconds(10)
    let looks = max(1, Int((timeout / interval).rounded(.up)))
    for _ in 0..<looks {
        if condition() { return true }
        try? await Task.sleep(for: interval)
    }
    return condition()
}
