import Foundation
@testable import MirrorCore
@testable import MirrorFetch
@testable import MirrorKit
@testable import MirrorSearch
@testable import MirrorStorage
import MirrorTestSupport
import MirrorTransport
import Testing

/// Every provider paged over loopback against the API emulator, up to its hard cap and not one request past it.
@Suite("Provider caps against the API emulator", .serialized)
struct ProviderCapTests {
    struct Case: Sendable, CustomTestStringConvertible {
        let provider: String
        /// Results the provider can reach for one query.
        let reachable: Int
        /// Requests that takes, at the provider's page size.
        let requests: Int
        var testDescription: String { provider }
    }

    static let cases: [Case] = [
        // 20 pages of 20, then page 21 would be refused (HTTP 400).
        Case(provider: "openverse", reachable: 400, requests: 20),
        // 8 pages of 500; past 4,000 Flickr repeats its last page.
        Case(provider: "flickr", reachable: 4_000, requests: 8),
        // offset ≤ 4,999 in steps of 50: offsets 0…4,950.
        Case(provider: "giphy", reachable: 5_000, requests: 100),
        // Results up to the 100th: 10 pages of 10, the last start=91&num=10.
        Case(provider: "google", reachable: 100, requests: 10),
        // totalHits ≤ 500: 3 pages of 200.
        Case(provider: "pixabay", reachable: 500, requests: 3),
        // 200 pages of 30.
        Case(provider: "unsplash", reachable: 6_000, requests: 200),
    ]

    @Test(arguments: cases)
    func pagesToTheCapAndStops(_ testCase: Case) async throws {
        // Given the emulator and the provider pointed at it
        let emulator = try APIEmulator.start()
        defer { emulator.stop() }

        // When every result is drawn
        let (urls, feed) = try await Self.drawAll(testCase.provider, from: emulator)

        // Then exactly the reachable results arrived, each once, in the minimum number of requests
        #expect(urls.count == testCase.reachable)
        #expect(emulator.apiRequestCount(provider: testCase.provider) == testCase.requests)
        #expect(feed.statistics.perProvider[testCase.provider]?.end == .capped)
    }

    @Test func googleRefusingTheLastPageFallsBackToNineOnce() async throws {
        // Given a Google that reads "start + num ≤ 100" strictly (start=91&num=10 → 400 INVALID_ARGUMENT)
        let emulator = try APIEmulator.start()
        defer { emulator.stop() }
        emulator.configure { $0.googleStrictLastPage = true }

        // When every result is drawn
        let (urls, feed) = try await Self.drawAll("google", from: emulator)

        // Then the refused page is asked for once more with num=9, and that is the cap: 99 results in 11 requests
        let requests = emulator.apiRequests(provider: .google)
        #expect(urls.count == 99)
        #expect(requests.count == 11)
        #expect(requests.suffix(2).map { [$0.query["start"], $0.query["num"]] } == [["91", "10"], ["91", "9"]])
        #expect(feed.statistics.perProvider["google"]?.end == .capped)
    }

    /// Draws every result of `provider` from the emulator through a feed with no pacing; returns the distinct image
    /// URLs and the feed (for its statistics).
    static func drawAll(_ provider: String, from emulator: APIEmulator) async throws -> (Set<URL>, SearchFeed) {
        let made = try ProviderRegistry.make(named: provider, environment: emulator.environment, endpointOverride: nil)
        let driver = CurlMultiDriver()
        defer { driver.shutdown() }
        var configuration = SearchFeed.Configuration()
        configuration.requestInterval = .zero
        let feed = SearchFeed(
            providers: [made], query: SearchQuery(text: "kittens"),
            client: APIClient(loader: driver, cache: nil), configuration: configuration
        )
        var urls = Set<URL>()
        while let result = try await feed.next() { urls.insert(result.imageURL) }
        return (urls, feed)
    }
}
