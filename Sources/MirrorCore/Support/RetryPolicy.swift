import Foundation

/// When a failed download is tried again, and after how long.
///
/// Downloads are retried after connect errors, truncation, lost connections, 5xx, 408 and 429; never after
/// another 4xx, a policy refusal or an invalid image, nor after a timeout or a stall (the attempt spent its time:
/// it is filed transient, for `--retry-failed`). The delay is exponential backoff with full
/// jitter — uniform in `0...min(maximumDelay, baseDelay × 2^(attempt-1))` — and a `Retry-After`
/// is never undercut: the delay is at least what the server asked for. A server that asks for more
/// than `maximumRetryAfter` is taken at its word and the download fails instead of waiting.
public struct RetryPolicy: Sendable, Hashable {
    /// Retries after the first attempt. Default 3.
    public var maximumRetries: Int
    /// The first backoff ceiling. Default 0.5 s.
    public var baseDelay: Duration
    /// The largest backoff ceiling. Default 30 s.
    public var maximumDelay: Duration
    /// The longest `Retry-After` waited out. Default 5 minutes.
    public var maximumRetryAfter: Duration

    public init(
        maximumRetries: Int = 3,
        baseDelay: Duration = .milliseconds(500),
        maximumDelay: Duration = .seconds(30),
        maximumRetryAfter: Duration = .seconds(300)
    ) {
        self.maximumRetries = maximumRetries
        self.baseDelay = baseDelay
        self.maximumDelay = maximumDelay
        self.maximumRetryAfter = maximumRetryAfter
    }

    /// What to do after a failed attempt.
    public enum Decision: Sendable, Hashable {
        case retry(after: Duration)
        case giveUp
    }

    /// Decides whether attempt number `attempt` (1 for the first) is followed by another.
    ///
    /// - Parameters:
    ///   - attempt: attempts made so far, including the failed one.
    ///   - retryable: whether the failure is of a kind worth retrying (see `isRetryable`).
    ///   - retryAfter: the server's `Retry-After`, if it sent one.
    public func decision<R: RandomNumberGenerator>(
        afterAttempt attempt: Int,
        retryable: Bool,
        retryAfter: Duration?,
        using generator: inout R
    ) -> Decision {
        guard retryable, attempt <= maximumRetries else { return .giveUp }
        if let retryAfter, retryAfter > maximumRetryAfter { return .giveUp }
        let backoff = jitteredBackoff(attempt: attempt, using: &generator)
        return .retry(after: max(backoff, retryAfter ?? .zero))
    }

    /// A full-jitter backoff for the given attempt.
    public func jitteredBackoff<R: RandomNumberGenerator>(attempt: Int, using generator: inout R) -> Duration {
        let ceiling = backoffCeiling(attempt: attempt)
        let nanoseconds = ceiling.nanoseconds
        guard nanoseconds > 0 else { return .zero }
        return .nanoseconds(Int64.random(in: 0...nanoseconds, using: &generator))
    }

    /// `min(maximumDelay, baseDelay × 2^(attempt-1))`.
    public func backoffCeiling(attempt: Int) -> Duration {
        let exponent = min(max(attempt - 1, 0), 30)
        let scaled = Double(baseDelay.nanoseconds) * pow(2, Double(exponent))
        return min(maximumDelay, .nanoseconds(Int64(min(scaled, Double(Int64.max / 2)))))
    }

    /// Runs `attempt` until it succeeds, fails in a way not worth retrying, or the retries are spent; between attempts,
    /// sleeps the delay ``decision(afterAttempt:retryable:retryAfter:using:)`` gives. The one retry loop of the
    /// package: the API client and the object store call it; the download manager and the search paginator, which
    /// do not wait in a loop (a waiting retry holds no slot), ask ``decision(afterAttempt:retryable:retryAfter:using:)``
    /// from their state machines instead.
    ///
    /// - Parameters:
    ///   - sleeper: The clock and sleep of the delays.
    ///   - attempt: One attempt.
    ///   - isRetryable: Whether a failure is of a kind worth retrying.
    ///   - retryAfter: How long the server asked to wait after a failure, if it did. Default: never.
    ///   - interrupted: What to throw when the task is cancelled during a delay, given the last failure. Default: it.
    /// - Throws: The last failure (or what `interrupted` makes of it).
    public func run<Value, Failure: Error>(
        using sleeper: Sleeper,
        _ attempt: () async throws(Failure) -> Value,
        isRetryable: (Failure) -> Bool,
        retryAfter: (Failure) -> Duration? = { _ in nil },
        interrupted: (Failure) -> Failure = { $0 }
    ) async throws(Failure) -> Value {
        var random = SystemRandomNumberGenerator()
        var attempts = 0
        while true {
            let failure: Failure
            do {
                return try await attempt()
            } catch {
                failure = error
            }
            attempts += 1
            let decision = decision(afterAttempt: attempts, retryable: isRetryable(failure), retryAfter: retryAfter(failure), using: &random)
            guard case let .retry(delay) = decision else { throw failure }
            do {
                try await sleeper.sleep(delay)
            } catch {
                throw interrupted(failure)
            }
        }
    }

    /// Whether an HTTP status is worth retrying: 408, 429 and 5xx.
    public static func isRetryable(status: Int) -> Bool {
        status == 408 || status == 429 || (500..<600).contains(status)
    }
}
