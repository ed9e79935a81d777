import Foundation
import MirrorCore
import MirrorStorage

/// The page-by-page walk through one provider's results, as an explicit state machine that performs no I/O.
///
/// The paginator decides *what* to do next and its owner does it (AsyncHTTPClient style): each `mutating` method
/// takes an event — more results wanted, a page arrived, a request failed — and returns an ``Action``: fetch the page
/// at a cursor, wait, hand out results, or finish for a reason. Because it never touches the network or the clock
/// (the caller passes `now`, and jitter comes from a seedable generator), it is tested with canned pages alone.
///
/// Behaviour:
/// - **De-duplication.** Results are keyed by their normalised image URL (``CacheKey/init(url:droppingQueryItems:)``),
///   so tracking parameters, default ports and fragments do not make a repeat look new; a URL seen on an earlier page
///   of this provider is dropped and counted in ``duplicates``.
/// - **Ends.** The walk ends when a page says ``SearchPage/Continuation/exhausted`` or ``SearchPage/Continuation/capped``,
///   when ``Configuration/pageLimit`` pages have arrived (`--pages`), when ``Configuration/repeatLimit`` pages in a row
///   brought nothing new (Flickr past its 4,000-result window serves the same page again and again), or when a request
///   fails for good.
/// - **Retries.** A failure that ``ProviderError/isRetryable`` is retried at the same cursor after the delay
///   ``Configuration/retry`` decides (full-jitter backoff, never sooner than a `Retry-After`, never waiting beyond
///   ``RetryPolicy/maximumRetryAfter``); others end the walk at once.
///
/// Not thread-safe on its own: it is a value, so its owner serialises the events (``SearchFeed`` holds it under a lock).
///
/// ```swift
/// var paginator = SearchPaginator(initialCursor: provider.initialCursor)
/// var action = paginator.wantMore(now: .now)
/// while true {
///     switch action {
///     case .fetch(let cursor): action = paginator.pageArrived(try await load(cursor))
///     case .wait(let delay): try await Task.sleep(for: delay); action = paginator.wantMore(now: .now)
///     case .yield(let results): consume(results); action = paginator.wantMore(now: .now)
///     case .finish: return
///     }
/// }
/// ```
public struct SearchPaginator: Sendable {
    /// Limits and retry rules for one walk.
    public struct Configuration: Sendable, Hashable {
        /// The most pages to fetch (`--pages`), or `nil` (the default) for no limit. Cached pages count too.
        public var pageLimit: Int?
        /// How failed requests are retried. Default: ``RetryPolicy/init(maximumRetries:baseDelay:maximumDelay:maximumRetryAfter:)``'s
        /// defaults (3 retries, 0.5 s base, 30 s ceiling, `Retry-After` waited out up to 5 minutes).
        public var retry: RetryPolicy
        /// Consecutive pages without a single new result that end the walk as exhausted. Default: 2.
        ///
        /// Why 2 and not 1: one page with nothing new happens legitimately — a MediaWiki prop-continuation returns the
        /// same files again with more metadata, and a page whose every item lacks a usable URL yields nothing. Two in a
        /// row is the signature of Flickr beyond 4,000 results (gallery-dl #116: "page 102 was the same as page 103,
        /// 104"), and costs just one wasted request before stopping, where 3 or more would spend quota on pages that
        /// keep repeating.
        public var repeatLimit: Int

        /// Creates a configuration; the defaults are documented on each property.
        public init(pageLimit: Int? = nil, retry: RetryPolicy = RetryPolicy(), repeatLimit: Int = 2) {
            self.pageLimit = pageLimit
            self.retry = retry
            self.repeatLimit = max(1, repeatLimit)
        }
    }

    /// Why a walk ended.
    public enum EndReason: Sendable, Hashable {
        /// The provider has no more results.
        case exhausted
        /// ``Configuration/repeatLimit`` pages in a row brought nothing new; treated as exhausted.
        case repeatedPages
        /// More results exist, but the provider's hard cap forbids asking for them.
        case capped
        /// ``Configuration/pageLimit`` pages have been fetched.
        case pageLimit
        /// A request failed and could not, or should not, be retried.
        case failed(ProviderError)
    }

    /// What the owner should do next.
    public enum Action: Sendable, Hashable {
        /// Request the page at the cursor, then report ``SearchPaginator/pageArrived(_:)`` or ``SearchPaginator/errorArrived(_:now:)``.
        case fetch(PageCursor)
        /// Sleep this long, then call ``SearchPaginator/wantMore(now:)`` again.
        case wait(Duration)
        /// Hand out these results (new to this walk, in rank order, never empty), then call ``SearchPaginator/wantMore(now:)`` when more are wanted.
        case yield([ImageResult])
        /// The walk is over; every later event returns this again.
        case finish(EndReason)
    }

    private enum State: Sendable, Hashable {
        /// Ready to fetch the page at `next`.
        case idle(next: PageCursor)
        /// The page at the cursor has been asked for and its outcome not yet reported.
        case fetching(PageCursor)
        /// A retry of the page at `cursor` is due at `until`.
        case waiting(until: ContinuousClock.Instant, cursor: PageCursor)
        /// No more pages will be fetched.
        case exhausted(EndReason)
        /// A request failed for good.
        case failed(ProviderError)
    }

    /// The limits in force.
    public let configuration: Configuration
    private var state: State
    private var seen: Set<String> = []
    private var pagesWithoutNews = 0
    private var attempt = 0
    private var random: SeededRandom

    /// Pages that arrived (from the network or a cache).
    public private(set) var pagesFetched = 0
    /// Results handed out by ``Action/yield(_:)``.
    public private(set) var resultsYielded = 0
    /// Results dropped because their normalised URL had appeared on an earlier page.
    public private(set) var duplicates = 0

    /// Creates a paginator that starts at `initialCursor`.
    /// - Parameters:
    ///   - initialCursor: The provider's ``ImageProvider/initialCursor``.
    ///   - configuration: Limits and retry rules. Default: no page limit, default retries, a repeat limit of 2.
    ///   - seed: Seeds the backoff jitter, for reproducible tests; `nil` (the default) seeds from the system generator.
    public init(initialCursor: PageCursor, configuration: Configuration = Configuration(), seed: UInt64? = nil) {
        self.configuration = configuration
        self.random = SeededRandom(seed: seed)
        if let limit = configuration.pageLimit, limit <= 0 {
            state = .exhausted(.pageLimit)
        } else {
            state = .idle(next: initialCursor)
        }
    }

    /// Whether the walk is over (``Action/finish(_:)`` is all it will return).
    public var isFinished: Bool {
        switch state {
        case .exhausted, .failed: return true
        case .idle, .fetching, .waiting: return false
        }
    }

    /// Why the walk ended, or `nil` while it goes on.
    public var endReason: EndReason? {
        switch state {
        case .exhausted(let reason): return reason
        case .failed(let error): return .failed(error)
        case .idle, .fetching, .waiting: return nil
        }
    }

    // MARK: - Events

    /// The owner wants more results.
    ///
    /// Returns ``Action/fetch(_:)`` for the next page, ``Action/wait(_:)`` for what is left of a retry delay, or
    /// ``Action/finish(_:)``. While a fetch is outstanding it returns the same fetch again: a fetch abandoned by
    /// cancellation is simply issued anew.
    /// - Parameter now: The current time, used only against a pending retry delay.
    public mutating func wantMore(now: ContinuousClock.Instant) -> Action {
        switch state {
        case .idle(let cursor):
            state = .fetching(cursor)
            return .fetch(cursor)
        case .fetching(let cursor):
            return .fetch(cursor)
        case .waiting(let until, let cursor):
            if now >= until {
                state = .fetching(cursor)
                return .fetch(cursor)
            }
            return .wait(until - now)
        case .exhausted(let reason):
            return .finish(reason)
        case .failed(let error):
            return .finish(.failed(error))
        }
    }

    /// The page asked for by the last ``Action/fetch(_:)`` arrived.
    ///
    /// Returns ``Action/yield(_:)`` with the results new to this walk; when there are none, the next step straight away
    /// (another ``Action/fetch(_:)`` or ``Action/finish(_:)``). A report when no fetch is outstanding is stale and
    /// ignored: it returns ``Action/finish(_:)`` for a finished walk, else `wait(.zero)`.
    public mutating func pageArrived(_ page: SearchPage) -> Action {
        guard case .fetching = state else {
            return finishedOrIdleAction()
        }
        pagesFetched += 1
        attempt = 0
        var fresh: [ImageResult] = []
        for result in page.results {
            if seen.insert(CacheKey(url: result.imageURL).normalizedURL).inserted {
                fresh.append(result)
            } else {
                duplicates += 1
            }
        }
        pagesWithoutNews = fresh.isEmpty ? pagesWithoutNews + 1 : 0

        switch page.continuation {
        case .exhausted:
            state = .exhausted(.exhausted)
        case .capped:
            state = .exhausted(.capped)
        case .more:
            if pagesWithoutNews >= configuration.repeatLimit {
                state = .exhausted(.repeatedPages)
            } else if let limit = configuration.pageLimit, pagesFetched >= limit {
                state = .exhausted(.pageLimit)
            } else if let next = page.next {
                state = .idle(next: next)
            } else {
                state = .exhausted(.exhausted)
            }
        }

        if !fresh.isEmpty {
            resultsYielded += fresh.count
            return .yield(fresh)
        }
        // Nothing to hand out: go straight on to the next page, or finish.
        if case .idle(let next) = state {
            state = .fetching(next)
            return .fetch(next)
        }
        return finishedOrIdleAction()
    }

    /// The request asked for by the last ``Action/fetch(_:)`` failed with `error`.
    ///
    /// A retryable error (``ProviderError/isRetryable``) within the retry budget returns ``Action/wait(_:)``: at least
    /// the error's `retryAfter` and at least the jittered backoff, after which ``wantMore(now:)`` fetches the same
    /// cursor. Anything else, including a `retryAfter` beyond ``RetryPolicy/maximumRetryAfter``, returns
    /// ``Action/finish(_:)`` with ``EndReason/failed(_:)``.
    public mutating func errorArrived(_ error: ProviderError, now: ContinuousClock.Instant) -> Action {
        guard case .fetching(let cursor) = state else {
            return finishedOrIdleAction()
        }
        attempt += 1
        let retryAfter: Duration?
        if case .rateLimited(let hint, _) = error { retryAfter = hint } else { retryAfter = nil }
        let decision = configuration.retry.decision(
            afterAttempt: attempt,
            retryable: error.isRetryable,
            retryAfter: retryAfter,
            using: &random
        )
        switch decision {
        case .retry(let delay):
            state = .waiting(until: now + delay, cursor: cursor)
            return .wait(delay)
        case .giveUp:
            state = .failed(error)
            return .finish(.failed(error))
        }
    }

    /// The answer to an event that does not fit the state (a stale report): `finish` when the walk is over,
    /// otherwise `wait(.zero)`, which sends the owner back to ``wantMore(now:)``.
    private func finishedOrIdleAction() -> Action {
        switch state {
        case .exhausted(let reason): return .finish(reason)
        case .failed(let error): return .finish(.failed(error))
        case .idle, .fetching, .waiting: return .wait(.zero)
        }
    }
}
