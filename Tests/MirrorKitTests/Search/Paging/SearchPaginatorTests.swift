import Foundation
@testable import MirrorCore
@testable import MirrorFetch
@testable import MirrorKit
@testable import MirrorSearch
@testable import MirrorStorage
import Testing

/// The state machine alone: canned pages and errors, a hand-held clock, no network.
@Suite("Search paginator")
struct SearchPaginatorTests {
    let t0 = ContinuousClock.now

    func result(_ number: Int, url: String? = nil) -> ImageResult {
        ImageResult(provider: "test", id: "\(number)", imageURL: URL(string: url ?? "https://cdn.test/img/\(number).jpg")!)
    }

    func page(_ numbers: ClosedRange<Int>, next: Int?, _ continuation: SearchPage.Continuation = .more) -> SearchPage {
        SearchPage(results: numbers.map { result($0) }, next: next.map { .page($0) }, continuation: continuation)
    }

    func paginator(pageLimit: Int? = nil, retry: RetryPolicy = RetryPolicy(maximumRetries: 2, baseDelay: .milliseconds(100), maximumDelay: .seconds(1))) -> SearchPaginator {
        SearchPaginator(initialCursor: .page(1), configuration: .init(pageLimit: pageLimit, retry: retry), seed: 1)
    }

    @Test func startsAtTheInitialCursorAndFollowsNext() {
        // Given a fresh paginator
        var paginator = paginator()

        // When more is wanted, page 1 arrives, and more is wanted again
        let first = paginator.wantMore(now: t0)
        let yielded = paginator.pageArrived(page(1...3, next: 2))
        let second = paginator.wantMore(now: t0)

        // Then it fetches page 1, yields its results, then fetches page 2
        #expect(first == .fetch(.page(1)))
        #expect(yielded == .yield([result(1), result(2), result(3)]))
        #expect(second == .fetch(.page(2)))
        #expect(paginator.pagesFetched == 1)
        #expect(!paginator.isFinished)
    }

    @Test func dropsResultsWhoseNormalisedURLAppearedOnAnEarlierPage() {
        // Given page 1 and a page 2 repeating two of its images (once with tracking noise and a loud host)
        var paginator = paginator()
        _ = paginator.wantMore(now: t0)
        _ = paginator.pageArrived(page(1...3, next: 2))
        _ = paginator.wantMore(now: t0)
        let repeated = SearchPage(
            results: [
                result(2),
                result(3, url: "https://CDN.test:443/img/3.jpg?utm_source=feed#top"),
                result(4),
            ],
            next: .page(3),
            continuation: .more
        )

        // When page 2 arrives
        let action = paginator.pageArrived(repeated)

        // Then only the new image is yielded and two duplicates are counted
        #expect(action == .yield([result(4)]))
        #expect(paginator.duplicates == 2)
        #expect(paginator.resultsYielded == 4)
    }

    @Test func stopsAtThePageLimitEvenWhenMoreExist() {
        // Given a limit of two pages
        var paginator = paginator(pageLimit: 2)

        // When two full pages arrive
        _ = paginator.wantMore(now: t0)
        _ = paginator.pageArrived(page(1...2, next: 2))
        #expect(paginator.wantMore(now: t0) == .fetch(.page(2)))
        _ = paginator.pageArrived(page(3...4, next: 3))

        // Then the next want finishes at the page limit without fetching page 3
        #expect(paginator.wantMore(now: t0) == .finish(.pageLimit))
        #expect(paginator.endReason == .pageLimit)
    }

    @Test func aZeroPageLimitFinishesAtOnce() {
        var paginator = paginator(pageLimit: 0)
        #expect(paginator.wantMore(now: t0) == .finish(.pageLimit))
    }

    @Test(arguments: [(SearchPage.Continuation.capped, SearchPaginator.EndReason.capped), (.exhausted, .exhausted)])
    func endsWhenThePageSaysSo(continuation: SearchPage.Continuation, reason: SearchPaginator.EndReason) {
        // Given a paginator whose first page is the last
        var paginator = paginator()
        _ = paginator.wantMore(now: t0)

        // When that page arrives
        let action = paginator.pageArrived(page(1...2, next: nil, continuation))

        // Then its results are yielded, and the walk finishes for the page's reason
        #expect(action == .yield([result(1), result(2)]))
        #expect(paginator.wantMore(now: t0) == .finish(reason))
        #expect(paginator.wantMore(now: t0) == .finish(reason))
    }

    @Test func oneRepeatedPageIsToleratedTwoInARowEndTheWalk() {
        // Given page 1, then a page with nothing new (a prop-continuation, say)
        var paginator = paginator()
        _ = paginator.wantMore(now: t0)
        _ = paginator.pageArrived(page(1...3, next: 2))
        _ = paginator.wantMore(now: t0)

        // When the first repeat arrives it goes straight on to the next page
        #expect(paginator.pageArrived(page(1...3, next: 3)) == .fetch(.page(3)))

        // And when a second repeat in a row arrives (Flickr past 4,000), the walk ends as exhausted
        #expect(paginator.pageArrived(page(2...3, next: 4)) == .finish(.repeatedPages))
        #expect(paginator.duplicates == 5)
        #expect(paginator.pagesFetched == 3)
    }

    @Test func aRepeatFollowedByNewsResetsTheCount() {
        var paginator = paginator()
        _ = paginator.wantMore(now: t0)
        _ = paginator.pageArrived(page(1...3, next: 2))
        _ = paginator.wantMore(now: t0)
        #expect(paginator.pageArrived(page(1...3, next: 3)) == .fetch(.page(3)))
        #expect(paginator.pageArrived(page(3...5, next: 4)) == .yield([result(4), result(5)]))
        _ = paginator.wantMore(now: t0)
        #expect(paginator.pageArrived(page(1...2, next: 5)) == .fetch(.page(5)))
        #expect(!paginator.isFinished)
    }

    @Test func transientFailuresAreRetriedAtTheSameCursorThenGiveUp() throws {
        // Given a paginator on page 1 with two retries
        var paginator = paginator()
        _ = paginator.wantMore(now: t0)
        let error = ProviderError.transient(message: "HTTP 503")

        // When the first attempt fails
        let first = paginator.errorArrived(error, now: t0)

        // Then it waits at most the first backoff ceiling, and after that fetches page 1 again
        guard case .wait(let delay) = first else { Issue.record("expected a wait, got \(first)"); return }
        #expect(delay <= .milliseconds(100))
        #expect(paginator.wantMore(now: t0 + delay) == .fetch(.page(1)))

        // And when the retries are spent, it finishes with the error
        guard case .wait(let second) = paginator.errorArrived(error, now: t0) else { Issue.record("expected a second wait"); return }
        #expect(paginator.wantMore(now: t0 + second) == .fetch(.page(1)))
        #expect(paginator.errorArrived(error, now: t0) == .finish(.failed(error)))
        #expect(paginator.wantMore(now: t0 + .seconds(60)) == .finish(.failed(error)))
    }

    @Test func rateLimitsAreWaitedOutNeverSoonerThanAsked() {
        // Given a fetch that is rate limited for 7 s
        var paginator = paginator()
        _ = paginator.wantMore(now: t0)

        // When the error arrives
        let action = paginator.errorArrived(.rateLimited(retryAfter: .seconds(7), message: "429"), now: t0)

        // Then the wait is at least 7 s, an early want gets the rest of the wait, and a timely one refetches
        guard case .wait(let delay) = action else { Issue.record("expected a wait, got \(action)"); return }
        #expect(delay >= .seconds(7))
        #expect(paginator.wantMore(now: t0 + .seconds(2)) == .wait(delay - .seconds(2)))
        #expect(paginator.wantMore(now: t0 + delay) == .fetch(.page(1)))
    }

    @Test func aRateLimitBeyondTheCapFailsWithoutWaiting() {
        // Given a cap of 5 minutes on Retry-After
        var paginator = paginator()
        _ = paginator.wantMore(now: t0)
        let error = ProviderError.rateLimited(retryAfter: .seconds(3600), message: "come back in an hour")

        // When the server asks for an hour
        let action = paginator.errorArrived(error, now: t0)

        // Then the walk fails at once
        #expect(action == .finish(.failed(error)))
    }

    @Test(arguments: [
        ProviderError.authentication(variable: "FLICKR_API_KEY", message: "Invalid API Key"),
        .configuration(message: "bad endpoint"),
        .permanent(message: "HTTP 400"),
    ])
    func nonRetryableFailuresEndTheWalkAtOnce(error: ProviderError) {
        var paginator = paginator()
        _ = paginator.wantMore(now: t0)
        #expect(paginator.errorArrived(error, now: t0) == .finish(.failed(error)))
        #expect(paginator.endReason == .failed(error))
    }

    @Test func anAbandonedFetchIsIssuedAgain() {
        // Given a fetch that was never answered (its task was cancelled)
        var paginator = paginator()
        #expect(paginator.wantMore(now: t0) == .fetch(.page(1)))

        // When more is wanted again, the same page is fetched, and a stale report later is ignored
        #expect(paginator.wantMore(now: t0) == .fetch(.page(1)))
        _ = paginator.pageArrived(page(1...1, next: nil, .exhausted))
        #expect(paginator.pageArrived(page(2...2, next: nil, .exhausted)) == .finish(.exhausted))
        #expect(paginator.resultsYielded == 1)
    }

    @Test func anEmptyLastPageFinishesWithoutYielding() {
        var paginator = paginator()
        _ = paginator.wantMore(now: t0)
        #expect(paginator.pageArrived(SearchPage(results: [], next: nil, continuation: .exhausted)) == .finish(.exhausted))
    }

    @Test func theSameSeedGivesTheSameJitter() {
        func firstDelay(seed: UInt64) -> SearchPaginator.Action {
            var paginator = SearchPaginator(initialCursor: .page(1), seed: seed)
            _ = paginator.wantMore(now: t0)
            return paginator.errorArrived(.transient(message: "x"), now: t0)
        }
        #expect(firstDelay(seed: 42) == firstDelay(seed: 42))
    }
}
