import Foundation

/// The clock mirror reads and the sleep it waits with: one injected time source for pacing, backoff and cool-downs.
///
/// Every wait that paces requests goes through one of these — the API client's pacing and retries, the download
/// manager's one timer (retry delays and host slow-downs) — so tests drive time instead of waiting for it. (The one
/// `DispatchQueue` timer, `ImageCommitter`'s gather window before a batch of files is synced, paces the disk, not a
/// server.)
public struct Sleeper: Sendable {
    /// The current time.
    public var now: @Sendable () -> ContinuousClock.Instant
    /// Sleeps for a duration; throws when the calling task is cancelled.
    public var sleep: @Sendable (Duration) async throws -> Void

    /// Creates a sleeper from a clock reading and a sleep.
    public init(
        now: @escaping @Sendable () -> ContinuousClock.Instant,
        sleep: @escaping @Sendable (Duration) async throws -> Void
    ) {
        self.now = now
        self.sleep = sleep
    }

    /// `ContinuousClock.now` and `Task.sleep(for:)`.
    public static let real = Sleeper(now: { ContinuousClock.now }, sleep: { try await Task.sleep(for: $0) })

}
