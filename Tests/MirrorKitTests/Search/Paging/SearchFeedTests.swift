import Foundation
import MirrorSync
@testable import MirrorCore
@testable import MirrorFetch
@testable import MirrorKit
@testable import MirrorSearch
@testable import MirrorStorage
import MirrorTestSupport
import MirrorTransport
import Testing

/// The feed end to end over a loopback server whose routes answer like the real APIs, parsed by the real providers.
// The time limit guards against a hang, not a slow machine: a loaded CI run (the suites beside this one holding the
// cooperative threads) took 487 s over the first test's 20 pages.
@Suite("Search feed", .serialized, .timeLimit(.minutes(20)))
struct SearchFeedTests {
    // MARK: - Paging and caps

    @Test func openversePagesUpToItsCapAndNeverAsksForPage21() async throws {
        // Given an Openverse that always claims 10,000 results (page_count 500), 20 per page
        let harness = try PagingHarness()
        harness.server.route(prefix: "/v1/images/") { request in
            let page = Int(request.query["page"] ?? "") ?? 0
            guard (1...20).contains(page) else {
                return .status(400, headers: [("Content-Type", "application/json")], body: PagingPages.json(["detail": ["page": ["Ensure this value is less than or equal to 20."]]]))
            }
            let numbers = Array((page - 1) * 20..<page * 20)
            return .ok(PagingPages.openverse(page: page, pageCount: 500, numbers: numbers), contentType: "application/json")
        }
        let feed = harness.makeFeed([harness.openverse])

        // When the feed is drained
        let (results, error) = await feed.drain()

        // Then 400 distinct results came from pages 1…20, page 21 was never requested, and Openverse ended capped
        #expect(error == nil)
        #expect(results.count == 400)
        #expect(Set(results.map(\.imageURL)).count == 400)
        let pages = harness.requests("/v1/images/").map { $0.query["page"] ?? "" }
        #expect(pages == (1...20).map(String.init))
        #expect(harness.requests("/v1/images/").allSatisfy { $0.query["page_size"] == "20" })
        let statistics = feed.statistics
        #expect(statistics.pagesFetched == 20)
        #expect(statistics.requestsMade == 20)
        #expect(statistics.perProvider["openverse"]?.end == .capped)
        #expect(statistics.perProvider["openverse"]?.results == 400)
        // And asking again stays at the end without another request
        #expect(try await feed.next() == nil)
        #expect(harness.server.totalRequests == 20)
    }

    @Test func pageLimitStopsEarly() async throws {
        // Given an Openverse with plenty of pages and --pages 3
        let harness = try PagingHarness()
        harness.server.route(prefix: "/v1/images/") { request in
            let page = Int(request.query["page"] ?? "") ?? 1
            return .ok(PagingPages.openverse(page: page, pageCount: 500, numbers: Array((page - 1) * 20..<page * 20)), contentType: "application/json")
        }
        let feed = harness.makeFeed([harness.openverse]) { $0.pageLimit = 3 }

        // When the feed is drained
        let (results, error) = await feed.drain()

        // Then exactly three pages were requested and the provider ended at the page limit
        #expect(error == nil)
        #expect(results.count == 60)
        #expect(harness.server.totalRequests == 3)
        #expect(feed.statistics.perProvider["openverse"]?.end == .pageLimit)
    }

    @Test func duplicatesAcrossPagesAreDropped() async throws {
        // Given page 2 repeating ten images of page 1, five of them with tracking noise and a different host case
        let harness = try PagingHarness()
        harness.server.route(prefix: "/v1/images/") { request in
            if request.query["page"] == "1" {
                return .ok(PagingPages.openverse(page: 1, pageCount: 2, numbers: Array(0..<20)), contentType: "application/json")
            }
            let numbers = Array(10..<30)
            let urls = numbers.map { number in
                number < 15 ? "https://CDN.test/openverse/\(number).jpg?utm_source=openverse" : PagingPages.imageURL("openverse", number)
            }
            return .ok(PagingPages.openverse(page: 2, pageCount: 2, numbers: numbers, urls: urls), contentType: "application/json")
        }
        let feed = harness.makeFeed([harness.openverse])

        // When the feed is drained
        let (results, error) = await feed.drain()

        // Then 30 distinct images come out, and the ten repeats are counted as duplicates
        #expect(error == nil)
        #expect(results.map(\.id) == (0..<30).map { "ov-\($0)" })
        #expect(feed.statistics.duplicatesDropped == 10)
        #expect(feed.statistics.perProvider["openverse"]?.duplicates == 10)
        #expect(feed.statistics.perProvider["openverse"]?.end == .exhausted)
    }

    @Test func theChainMovesFromAnExhaustedOpenverseToWikimedia() async throws {
        // Given an Openverse with one short page and a Wikimedia with two batches, one image of which Openverse had
        let harness = try PagingHarness()
        harness.server.route(prefix: "/v1/images/") { _ in
            .ok(PagingPages.openverse(page: 1, pageCount: 1, resultCount: 5, numbers: Array(0..<5)), contentType: "application/json")
        }
        harness.server.route(prefix: "/w/api.php") { request in
            if request.query["gsroffset"] == nil {
                return .ok(PagingPages.wikimedia(numbers: [0, 1, 2], nextOffset: 3, urls: [PagingPages.imageURL("openverse", 4), PagingPages.imageURL("wikimedia", 1), PagingPages.imageURL("wikimedia", 2)]), contentType: "application/json")
            }
            return .ok(PagingPages.wikimedia(numbers: [3, 4, 5], nextOffset: nil), contentType: "application/json")
        }
        let feed = harness.makeFeed([harness.openverse, harness.wikimedia])

        // When the feed is drained
        let (results, error) = await feed.drain()

        // Then Openverse's five come first, then Wikimedia's five new ones (the shared image once), and both ended exhausted
        #expect(error == nil)
        #expect(results.map(\.provider) == Array(repeating: "openverse", count: 5) + Array(repeating: "wikimedia", count: 5))
        #expect(Set(results.map { CacheKey(url: $0.imageURL) }).count == 10)
        #expect(harness.requests("/w/api.php").map { $0.query["gsroffset"] } == [nil, "3"])
        #expect(harness.requests("/w/api.php").allSatisfy { $0.header("User-Agent")?.hasPrefix("mirror/") == true })
        let statistics = feed.statistics
        #expect(statistics.perProvider["openverse"]?.end == .exhausted)
        #expect(statistics.perProvider["wikimedia"]?.end == .exhausted)
        #expect(statistics.perProvider["wikimedia"]?.duplicates == 1)
        #expect(statistics.duplicatesDropped == 1)
    }

    // MARK: - Errors in 200 bodies and plain text

    @Test func wikimediaMaxlagIsWaitedOut() async throws {
        // Given a Wikimedia whose first answer is a maxlag error inside HTTP 200 with Retry-After: 1
        let harness = try PagingHarness()
        let calls = PagingCounter()
        harness.server.route(prefix: "/w/api.php") { _ in
            if calls.increment() == 1 {
                let body = PagingPages.json(["error": ["code": "maxlag", "info": "Waiting for db1: 6 seconds lagged", "host": "db1", "lag": 6], "servedby": "mw1"])
                return .status(200, headers: [("Content-Type", "application/json"), ("Retry-After", "1"), ("X-Database-Lag", "6")], body: body)
            }
            return .ok(PagingPages.wikimedia(numbers: [1, 2, 3], nextOffset: nil), contentType: "application/json")
        }
        let feed = harness.makeFeed([harness.wikimedia])

        // When the feed is drained
        let (results, error) = await feed.drain()

        // Then the retry arrived at least one second after the first request, and the results came through
        #expect(error == nil)
        #expect(results.count == 3)
        let arrivals = harness.requests("/w/api.php").map(\.arrivedAt)
        try #require(arrivals.count == 2)
        #expect(arrivals[1] - arrivals[0] >= .seconds(1))
        #expect(feed.statistics.requestsMade == 2)
    }

    @Test func flickrInvalidKeyInA200BodyIsAnAuthenticationErrorNamingTheVariable() async throws {
        // Given a Flickr that rejects the key with stat:fail code 100 inside HTTP 200, and a Wikimedia after it
        let harness = try PagingHarness()
        harness.server.route(prefix: "/services/rest/") { _ in
            .ok(PagingPages.json(["stat": "fail", "code": 100, "message": "Invalid API Key (Key has invalid format)"]), contentType: "application/json")
        }
        harness.server.route(prefix: "/w/api.php") { _ in .ok(PagingPages.wikimedia(numbers: [1], nextOffset: nil), contentType: "application/json") }
        let flickr = FlickrProvider(endpoint: harness.server.url("/services/rest/"), apiKey: "sekrit-flickr-key")
        let feed = harness.makeFeed([flickr, harness.wikimedia])

        // When the feed is asked for a result
        let (results, error) = await feed.drain()

        // Then it throws at once, naming FLICKR_API_KEY and not the key, without retrying or moving on
        #expect(results.isEmpty)
        guard case .authentication(let provider, let variable, let message) = error else {
            Issue.record("expected an authentication error, got \(String(describing: error))")
            return
        }
        #expect(provider == "flickr")
        #expect(variable == "FLICKR_API_KEY")
        #expect(!message.contains("sekrit"))
        #expect(!(error?.description.contains("sekrit") ?? true))
        #expect(harness.server.totalRequests == 1)
        #expect(harness.requests("/w/api.php").isEmpty)
        #expect(feed.statistics.perProvider["flickr"]?.end == .failed(message))
    }

    @Test func pixabayPlainTextOutOfRangeEndsThePaging() async throws {
        // Given a Pixabay whose page 2 is refused with its plain-text "[ERROR 400]" body
        let harness = try PagingHarness()
        harness.server.route(prefix: "/api/") { request in
            if request.query["page"] == "1" {
                return .ok(PagingPages.pixabay(numbers: [1, 2, 3], total: 8737, totalHits: 500), contentType: "application/json")
            }
            return .status(400, headers: [("Content-Type", "text/plain")], body: Data("[ERROR 400] \"page\" is out of valid range.".utf8))
        }
        let pixabay = PixabayProvider(endpoint: harness.server.url("/api/"), apiKey: "pixabay-key")
        let feed = harness.makeFeed([pixabay])

        // When the feed is drained
        let (results, error) = await feed.drain()

        // Then the three results come out, the refusal ends the walk as exhausted, and nothing was retried
        #expect(error == nil)
        #expect(results.count == 3)
        #expect(harness.server.totalRequests == 2)
        #expect(feed.statistics.perProvider["pixabay"]?.end == .exhausted)
    }

    @Test func unsplashPlainTextRateLimitIsRetried() async throws {
        // Given an Unsplash whose first answer is 403 "Rate Limit Exceeded" in plain text
        let harness = try PagingHarness()
        let calls = PagingCounter()
        harness.server.route(prefix: "/search/photos") { _ in
            if calls.increment() == 1 {
                return .status(403, headers: [("Content-Type", "text/plain"), ("X-Ratelimit-Remaining", "0")], body: Data("Rate Limit Exceeded".utf8))
            }
            return .ok(PagingPages.unsplash(numbers: [1, 2], totalPages: 1), contentType: "application/json")
        }
        let unsplash = UnsplashProvider(endpoint: harness.server.url("/search/photos"), accessKey: "unsplash-key")
        let feed = harness.makeFeed([unsplash])

        // When the feed is drained
        let (results, error) = await feed.drain()

        // Then the 403 was taken as a rate limit, retried, and the results came through
        #expect(error == nil)
        #expect(results.count == 2)
        #expect(harness.server.totalRequests == 2)
    }

    @Test func unsplashRejectedKeyIsAnAuthenticationError() async throws {
        // Given an Unsplash that answers 401 with its JSON error list
        let harness = try PagingHarness()
        harness.server.route(prefix: "/search/photos") { _ in
            .status(401, headers: [("Content-Type", "application/json")], body: PagingPages.json(["errors": ["OAuth error: The access token is invalid"]]))
        }
        let feed = harness.makeFeed([UnsplashProvider(endpoint: harness.server.url("/search/photos"), accessKey: "unsplash-key")])

        // When the feed is asked for a result
        let (_, error) = await feed.drain()

        // Then the error names UNSPLASH_ACCESS_KEY, after a single request
        guard case .authentication(_, let variable, let message) = error else {
            Issue.record("expected an authentication error, got \(String(describing: error))")
            return
        }
        #expect(variable == "UNSPLASH_ACCESS_KEY")
        #expect(!message.contains("unsplash-key"))
        #expect(harness.server.totalRequests == 1)
    }

    // MARK: - Retries and rate limits

    @Test func a429IsWaitedOutNoSoonerThanRetryAfter() async throws {
        // Given an Openverse that throttles the first request with Retry-After: 1
        let harness = try PagingHarness()
        let calls = PagingCounter()
        harness.server.route(prefix: "/v1/images/") { _ in
            if calls.increment() == 1 {
                return .status(429, headers: [("Content-Type", "application/json"), ("Retry-After", "1")], body: PagingPages.json(["detail": "Request was throttled. Expected available in 1 second."]))
            }
            return .ok(PagingPages.openverse(page: 1, pageCount: 1, numbers: [1, 2]), contentType: "application/json")
        }
        let feed = harness.makeFeed([harness.openverse])

        // When the feed is drained
        let (results, error) = await feed.drain()

        // Then the retry arrived at least a second later and succeeded
        #expect(error == nil)
        #expect(results.count == 2)
        let arrivals = harness.requests("/v1/images/").map(\.arrivedAt)
        try #require(arrivals.count == 2)
        #expect(arrivals[1] - arrivals[0] >= .seconds(1))
    }

    @Test func aRateLimitLongerThanTheCapFailsWithoutWaiting() async throws {
        // Given an Openverse that asks for ten minutes, over the five-minute cap
        let harness = try PagingHarness()
        harness.server.route(prefix: "/v1/images/") { _ in
            .status(429, headers: [("Retry-After", "600")], body: PagingPages.json(["detail": "Request was throttled."]))
        }
        let feed = harness.makeFeed([harness.openverse])
        let started = ContinuousClock.now

        // When the feed is asked for a result
        let (_, error) = await feed.drain()

        // Then it fails as unavailable at once, after one request
        guard case .unavailable(let provider, _) = error else {
            Issue.record("expected unavailable, got \(String(describing: error))")
            return
        }
        #expect(provider == "openverse")
        // (a tenth of the 600 s it would have waited: a bound no loaded machine comes near, not a race)
        #expect(ContinuousClock.now - started < .seconds(60))
        #expect(harness.server.totalRequests == 1)
    }

    @Test func a500OnceIsRetried() async throws {
        // Given an Openverse that fails once with 500
        let harness = try PagingHarness()
        let calls = PagingCounter()
        harness.server.route(prefix: "/v1/images/") { _ in
            if calls.increment() == 1 {
                return .status(500, headers: [("Content-Type", "application/json")], body: PagingPages.json(["detail": "An internal server error occurred."]))
            }
            return .ok(PagingPages.openverse(page: 1, pageCount: 1, numbers: [1, 2, 3]), contentType: "application/json")
        }
        let feed = harness.makeFeed([harness.openverse])

        // When the feed is drained
        let (results, error) = await feed.drain()

        // Then the page came on the second request
        #expect(error == nil)
        #expect(results.count == 3)
        #expect(harness.server.totalRequests == 2)
        #expect(feed.statistics.requestsMade == 2)
        #expect(feed.statistics.pagesFetched == 1)
    }

    @Test func malformedJSONIsRetried() async throws {
        // Given an Openverse whose first 200 body is cut off mid-JSON
        let harness = try PagingHarness()
        let calls = PagingCounter()
        harness.server.route(prefix: "/v1/images/") { _ in
            if calls.increment() == 1 {
                return .ok(Data("{\"result_count\": 10, \"results\": [".utf8), contentType: "application/json")
            }
            return .ok(PagingPages.openverse(page: 1, pageCount: 1, numbers: [1]), contentType: "application/json")
        }
        let feed = harness.makeFeed([harness.openverse])

        // When the feed is drained, then the second request's page is used
        let (results, error) = await feed.drain()
        #expect(error == nil)
        #expect(results.count == 1)
        #expect(harness.server.totalRequests == 2)
    }

    @Test func aProviderThatKeepsFailingIsUnavailableWhenNothingElseProduced() async throws {
        // Given the only provider answering 503 without Retry-After every time
        let harness = try PagingHarness()
        harness.server.route(prefix: "/v1/images/") { _ in .status(503) }
        let feed = harness.makeFeed([harness.openverse])

        // When the feed is asked for a result
        let (results, error) = await feed.drain()

        // Then after 1 + 3 attempts it throws unavailable (exit 5), and says so again when asked again
        #expect(results.isEmpty)
        guard case .unavailable(let provider, _) = error else {
            Issue.record("expected unavailable, got \(String(describing: error))")
            return
        }
        #expect(provider == "openverse")
        #expect(harness.server.totalRequests == 4)
        #expect(feed.statistics.perProvider["openverse"]?.end != nil)
        await #expect(throws: SearchError.self) { try await feed.next() }
        #expect(harness.server.totalRequests == 4)
    }

    @Test func aFailedProviderIsSkippedWhenTheNextOneProduces() async throws {
        // Given an Openverse that keeps failing and a healthy Wikimedia
        let harness = try PagingHarness()
        harness.server.route(prefix: "/v1/images/") { _ in .status(502) }
        harness.server.route(prefix: "/w/api.php") { _ in .ok(PagingPages.wikimedia(numbers: [1, 2], nextOffset: nil), contentType: "application/json") }
        let feed = harness.makeFeed([harness.openverse, harness.wikimedia])

        // When the feed is drained
        let (results, error) = await feed.drain()

        // Then Wikimedia's results come out, the feed ends normally, and Openverse is reported failed
        #expect(error == nil)
        #expect(results.map(\.provider) == ["wikimedia", "wikimedia"])
        guard case .failed(let message)? = feed.statistics.perProvider["openverse"]?.end else {
            Issue.record("expected openverse to have failed")
            return
        }
        #expect(message.contains("502"))
    }

    // MARK: - Caching

    @Test func aSecondIdenticalSearchWithinTheTTLMakesNoRequest() async throws {
        // Given a first search that fetched two Openverse pages into a disk cache
        let harness = try PagingHarness()
        harness.server.route(prefix: "/v1/images/") { request in
            let page = Int(request.query["page"] ?? "") ?? 1
            return .ok(PagingPages.openverse(page: page, pageCount: 2, numbers: Array((page - 1) * 20..<page * 20)), contentType: "application/json")
        }
        let first = await harness.makeFeed([harness.openverse], cache: harness.makeCache()).drain()
        #expect(first.results.count == 40)
        harness.server.resetCounters()

        // When the same search runs again with a fresh memory layer over the same disk (a new process, say)
        let feed = harness.makeFeed([harness.openverse], cache: harness.makeCache())
        let second = await feed.drain()

        // Then it produces the same results without a single API request
        #expect(second.error == nil)
        #expect(second.results == first.results)
        #expect(harness.server.totalRequests == 0)
        #expect(feed.statistics.cacheHits == 2)
        #expect(feed.statistics.requestsMade == 0)
        #expect(feed.statistics.pagesFetched == 2)
    }

    @Test func errorsInside200BodiesAreNotCached() async throws {
        // Given a Wikimedia that is lagged on the first request only, and a cache
        let harness = try PagingHarness()
        let calls = PagingCounter()
        harness.server.route(prefix: "/w/api.php") { _ in
            if calls.increment() == 1 {
                return .status(200, headers: [("Retry-After", "1")], body: PagingPages.json(["error": ["code": "maxlag", "info": "lagged", "lag": 1]]))
            }
            return .ok(PagingPages.wikimedia(numbers: [1], nextOffset: nil), contentType: "application/json")
        }
        let cache = harness.makeCache()
        _ = await harness.makeFeed([harness.wikimedia], cache: cache).drain()
        harness.server.resetCounters()

        // When the search runs again
        let again = await harness.makeFeed([harness.wikimedia], cache: cache).drain()

        // Then the good page came from the cache and the lag error was never replayed
        #expect(again.error == nil)
        #expect(again.results.count == 1)
        #expect(harness.server.totalRequests == 0)
    }

    // MARK: - Pacing

    @Test func consecutiveRequestsToOneProviderArePaced() async throws {
        // Given a Wikimedia with three batches and a 300 ms minimum interval
        let harness = try PagingHarness()
        harness.server.route(prefix: "/w/api.php") { request in
            let offset = Int(request.query["gsroffset"] ?? "0") ?? 0
            let next = offset < 6 ? offset + 3 : nil
            return .ok(PagingPages.wikimedia(numbers: [offset, offset + 1, offset + 2], nextOffset: next), contentType: "application/json")
        }
        let interval = Duration.milliseconds(300)
        let feed = harness.makeFeed([harness.wikimedia]) { $0.requestInterval = interval }

        // When the feed is drained
        let (results, error) = await feed.drain()

        // Then each request arrived at least the interval after the one before
        #expect(error == nil)
        #expect(results.count == 9)
        let arrivals = harness.requests("/w/api.php").map(\.arrivedAt)
        try #require(arrivals.count == 3)
        for (earlier, later) in zip(arrivals, arrivals.dropFirst()) {
            #expect(later - earlier >= interval)
        }
    }

    @Test func pacingUsesTheInjectedSleeperAndSkipsCacheHits() async throws {
        // Given a client whose sleeper records instead of sleeping, and a provider paced at 2 s
        let harness = try PagingHarness()
        harness.server.route(prefix: "/v1/images/") { request in
            let page = Int(request.query["page"] ?? "") ?? 1
            return .ok(PagingPages.openverse(page: page, pageCount: 3, numbers: Array((page - 1) * 20..<page * 20)), contentType: "application/json")
        }
        let sleeps = SleepRecorder()
        let client = APIClient(loader: harness.driver, cache: harness.makeCache(), retry: PagingConfig.fastRetry, sleeper: sleeps.sleeper)
        let configuration = SearchFeed.Configuration { $0.requestInterval = .seconds(2) }
        let query = SearchQuery(text: "kittens")

        // When the search runs, and then runs again from the cache
        let first = await SearchFeed(providers: [harness.openverse], query: query, client: client, configuration: configuration).drain()
        let pacedSleeps = sleeps.all
        let second = await SearchFeed(providers: [harness.openverse], query: query, client: client, configuration: configuration).drain()

        // Then the network run slept about 2 s before each request after the first, and the cached run not at all
        #expect(first.results.count == 60)
        #expect(second.results.count == 60)
        #expect(pacedSleeps.count == 2)
        // Each sleep is the interval less the time since the previous request started, so it is at most 2 s; a loaded
        // ThreadSanitizer run once took over half a second for a loopback page, so no lower bound but "slept at all".
        #expect(pacedSleeps.allSatisfy { $0 > .zero && $0 <= .seconds(2) })
        #expect(sleeps.all.count == 2)
        #expect(harness.server.totalRequests == 3)
    }

    // MARK: - Openverse token

    @Test func openverseCredentialsFetchATokenOnce() async throws {
        // Given an Openverse with client credentials and a token endpoint
        let harness = try PagingHarness()
        harness.server.route("/v1/auth_tokens/token/", .ok(PagingPages.json(["access_token": "tok-123", "scope": "read", "expires_in": 36000, "token_type": "Bearer"]), contentType: "application/json"))
        harness.server.route(prefix: "/v1/images/") { request in
            guard request.header("Authorization") == "Bearer tok-123" else { return .status(401) }
            let page = Int(request.query["page"] ?? "") ?? 1
            return .ok(PagingPages.openverse(page: page, pageCount: 2, numbers: Array((page - 1) * 500..<(page - 1) * 500 + 3)), contentType: "application/json")
        }
        let provider = OpenverseProvider(endpoint: harness.server.url("/v1/images/"), credentials: .init(clientID: "id", clientSecret: "secret"))
        let feed = harness.makeFeed([provider])

        // When the feed is drained
        let (results, error) = await feed.drain()

        // Then one POST fetched the token, both searches carried it, with the authenticated page size
        #expect(error == nil)
        #expect(results.count == 6)
        let tokenRequests = harness.requests("/v1/auth_tokens/token/")
        #expect(tokenRequests.count == 1)
        #expect(tokenRequests.first?.method == "POST")
        #expect(harness.requests("/v1/images/").map { $0.query["page_size"] } == ["500", "500"])
        #expect(feed.statistics.requestsMade == 3)
    }

    @Test func aRejectedOpenverseTokenIsAnAuthenticationError() async throws {
        let harness = try PagingHarness()
        harness.server.route("/v1/auth_tokens/token/", .status(401, headers: [("Content-Type", "application/json")], body: PagingPages.json(["error": "invalid_client"])))
        let provider = OpenverseProvider(endpoint: harness.server.url("/v1/images/"), credentials: .init(clientID: "id", clientSecret: "secret"))
        let (_, error) = await harness.makeFeed([provider]).drain()
        guard case .authentication(let name, let variable, _) = error else {
            Issue.record("expected an authentication error, got \(String(describing: error))")
            return
        }
        #expect(name == "openverse")
        #expect(variable == "OPENVERSE_CLIENT_ID")
        #expect(harness.requests("/v1/images/").isEmpty)
    }

    // MARK: - Cancellation

    @Test func cancellationDuringATransferIsPrompt() async throws {
        // Given an Openverse whose answer is held until the test is done (it once took 20 s, and the test polled for its
        // request with a 10-s deadline of its own)
        let harness = try PagingHarness()
        let gate = Gate()
        defer { gate.open() }
        harness.server.route(prefix: "/v1/images/") { _ in
            Response.ok(PagingPages.openverse(page: 1, pageCount: 1, numbers: [1]), contentType: "application/json").held(by: gate)
        }
        let feed = harness.makeFeed([harness.openverse])

        // When the task asking for a result is cancelled once the request is held at the server
        let task = Task { try await feed.next() }
        try #require(await gate.waitForArrivals(1))
        let cancelledAt = ContinuousClock.now
        task.cancel()
        let result = await task.result

        // Then it ends with .cancelled at once: the answer never comes (without the cancel it would wait for ever; the
        // bound is generous so that a loaded or sanitized run cannot fail it)
        #expect(ContinuousClock.now - cancelledAt < .seconds(30))
        guard case .failure(let error) = result else {
            Issue.record("expected cancellation, got \(result)")
            return
        }
        #expect(error as? SearchError == .cancelled)
    }

    @Test func cancellationDuringARateLimitWaitIsPrompt() async throws {
        // Given an Openverse that asks to come back in 60 s, and a client whose sleeper says when a wait begins (the test
        // once slept 100 ms after the request arrived, hoping the client was in its wait by then)
        let harness = try PagingHarness()
        harness.server.route(prefix: "/v1/images/") { _ in .status(429, headers: [("Retry-After", "60")]) }
        let waits = WaitSignal(threshold: .seconds(30))
        let client = APIClient(loader: harness.driver, cache: nil, retry: PagingConfig.fastRetry, sleeper: waits.sleeper)
        let configuration = SearchFeed.Configuration {
            $0.requestInterval = .zero
            $0.retry = PagingConfig.fastRetry
            $0.jitterSeed = 7
        }
        let feed = SearchFeed(providers: [harness.openverse], query: SearchQuery(text: "kittens"), client: client, configuration: configuration)

        // When the task is cancelled during the wait: once the sleeper is asked to wait 60 s
        let task = Task { try await feed.next() }
        try #require(await waits.begun.wait(for: 1))
        let cancelledAt = ContinuousClock.now
        task.cancel()
        let result = await task.result

        // Then it ends with .cancelled at once (not after the 60-s wait: the bound is half of it), without a second request
        #expect(ContinuousClock.now - cancelledAt < .seconds(30))
        guard case .failure(let error) = result else {
            Issue.record("expected cancellation, got \(result)")
            return
        }
        #expect(error as? SearchError == .cancelled)
        #expect(harness.server.totalRequests == 1)
    }
}

/// A real sleeper that signals when a sleep of at least `threshold` begins: for acting during a wait, not after a guess.
struct WaitSignal: Sendable {
    let threshold: Duration
    let begun = Beacon()

    var sleeper: APIClient.Sleeper {
        APIClient.Sleeper(now: { ContinuousClock.now }) { [threshold, begun] duration in
            if duration >= threshold { begun.signal() }
            try await Task.sleep(for: duration)
        }
    }
}

/// A sleeper that records what it was asked to sleep and returns at once, moving its own clock forward instead.
final class SleepRecorder: Sendable {
    private let durations = PagingBox<[Duration]>([])

    var all: [Duration] { durations.get() }

    var sleeper: APIClient.Sleeper {
        let durations = self.durations
        return APIClient.Sleeper(
            now: { ContinuousClock.now + durations.get().reduce(.zero, +) },
            sleep: { duration in durations.mutate { $0.append(duration) } }
        )
    }
}

/// A value behind a lock, shareable by closures.
final class PagingBox<Value: Sendable>: Sendable {
    private let lock: Locked<Value>

    init(_ value: Value) { lock = Locked(value) }

    func get() -> Value { lock.withLock { $0 } }

    func mutate(_ body: (inout Value) -> Void) { lock.withLock { body(&$0) } }
}
