import Foundation
@testable import MirrorCore
@testable import MirrorFetch
@testable import MirrorKit
@testable import MirrorSearch
@testable import MirrorStorage
import Testing

@Suite("Google Custom Search provider")
struct GoogleCustomSearchProviderTests {
    let provider = GoogleCustomSearchProvider(apiKey: "test-key", engineID: "engine-1")

    @Test func parses2017Response() throws {
        // Given the 2017 num=5 recording (nextPage startIndex 6)
        let response = try Fixture.response("google_cse/cse_image_search_q=red_num5_2017.json")

        // When it is parsed as the first page
        let page = try provider.parse(response, cursor: .offset(0))

        // Then 5 results and the next offset is 5 (start=6)
        #expect(page.results.count == 5)
        #expect(page.next == .offset(5))
        #expect(page.reportedTotal == 655000000)
        let first = try #require(page.results.first)
        #expect(first.imageURL.absoluteString == "https://www.google.com/maps/about/behind-the-scenes/streetview/treks/petra/images/og-image.jpg")
        #expect(first.id == StableFingerprint.hex(first.imageURL.absoluteString))
        #expect(first.id.count == 16)
        #expect(first.title == "Street View Treks: Petra")
        #expect(first.pageURL?.absoluteString == "https://www.google.com/maps/about/behind-the-scenes/streetview/treks/petra/")
        #expect(first.width == 1200)
        #expect(first.height == 630)
        #expect(first.byteSize == 206982)
        #expect(first.mimeType == "image/jpeg")
        #expect(first.license == nil)
    }

    @Test func parses2023ResponseWithBareImageMime() throws {
        // Given the 2023 num=10 recording where 4 of 10 items have mime "image/"
        let response = try Fixture.response("google_cse/cse_image_search_q=google_num10_2023.json")

        // When it is parsed
        let page = try provider.parse(response, cursor: .offset(0))

        // Then 10 results, next offset 10, and the bare "image/" becomes nil
        #expect(page.results.count == 10)
        #expect(page.next == .offset(10))
        let first = try #require(page.results.first)
        #expect(first.imageURL.absoluteString == "https://www.google.com/chrome/static/images/home-experiment/hero-img_desktop.png")
        #expect(first.width == 840)
        #expect(first.height == 508)
        #expect(first.mimeType == "image/png")
        #expect(page.results[1].mimeType == nil)
        #expect(page.results.filter { $0.mimeType == nil }.count == 4)
    }

    @Test func noItemsIsExhaustedAndTheHundredthResultCaps() throws {
        // Given an answer without "items", and the page at start=91 whose nextPage would be 100
        let empty = response(200, #"{"kind":"customsearch#search","queries":{"request":[{"startIndex":1,"count":10}]},"searchInformation":{"totalResults":"0"}}"#)
        let last = response(200, #"{"kind":"customsearch#search","queries":{"request":[{"startIndex":91,"count":9}],"nextPage":[{"startIndex":100}]},"items":[{"link":"https://a.test/x.gif","mime":"image/gif","image":{"width":1,"height":2}}]}"#)

        // When they are parsed
        let emptyPage = try provider.parse(empty, cursor: .offset(0))
        let lastPage = try provider.parse(last, cursor: .offset(90))

        // Then no items means exhausted, and start=91 is the last page the API allows
        #expect(emptyPage.results.isEmpty)
        #expect(emptyPage.continuation == .exhausted)
        #expect(lastPage.continuation == .capped)
        #expect(lastPage.results.first?.mimeType == "image/gif")
    }

    @Test func aRefusedLastPageFallsBackToNumNineOnceAndCaps() throws {
        // Given the service refusing start=91&num=10 as INVALID_ARGUMENT
        let refused = response(400, #"{"error":{"code":400,"message":"Request contains an invalid argument.","errors":[{"message":"Request contains an invalid argument.","domain":"global","reason":"badRequest"}],"status":"INVALID_ARGUMENT"}}"#)
        let narrowed = response(200, #"{"kind":"customsearch#search","queries":{"request":[{"startIndex":91,"count":9}]},"items":[{"link":"https://a.test/y.png","mime":"image/png","image":{"width":3,"height":4}}]}"#)

        // When it is parsed, and the page it points to is requested and parsed
        let fallback = try provider.parse(refused, cursor: .offset(90))
        let next = try #require(fallback.next)
        let request = try provider.request(for: next, query: SearchQuery(text: "red"))
        let last = try provider.parse(narrowed, cursor: next)

        // Then the fallback asks for start=91&num=9, and that page is the cap
        #expect(fallback.results.isEmpty)
        #expect(fallback.continuation == .more)
        #expect(queryItems(request.url)["start"] == "91")
        #expect(queryItems(request.url)["num"] == "9")
        #expect(last.continuation == .capped)
        #expect(last.results.count == 1)
        // Only once: the same refusal of any other page (or of the fallback itself) is an error
        #expect(providerError { try provider.parse(refused, cursor: next) }?.kind == "permanent")
        #expect(providerError { try provider.parse(refused, cursor: .offset(80)) }?.kind == "permanent")
    }

    @Test func errorEnvelopeIsClassified() {
        // Given the quota 429, the pre-2020 quota 403, a bad key and a bad argument
        let quota = response(429, #"{"error":{"code":429,"message":"Quota exceeded for quota metric 'Queries' and limit 'Queries per day' of service 'customsearch.googleapis.com' for consumer 'project_number:1'.","errors":[{"message":"Quota exceeded","domain":"global","reason":"rateLimitExceeded"}],"status":"RESOURCE_EXHAUSTED"}}"#)
        let daily = response(403, #"{"error":{"errors":[{"domain":"usageLimits","reason":"dailyLimitExceeded","message":"Daily Limit Exceeded"}],"code":403,"message":"Daily Limit Exceeded"}}"#)
        let badKey = response(400, #"{"error":{"code":400,"message":"API key not valid. Please pass a valid API key.","errors":[{"message":"API key not valid. Please pass a valid API key.","domain":"global","reason":"badRequest"}],"status":"INVALID_ARGUMENT"}}"#)
        let badArgument = response(400, #"{"error":{"code":400,"message":"Request contains an invalid argument.","errors":[{"message":"Request contains an invalid argument.","domain":"global","reason":"badRequest"}],"status":"INVALID_ARGUMENT"}}"#)

        // When / Then
        #expect(providerError { try provider.parse(quota, cursor: .offset(0)) }?.kind == "rateLimited")
        #expect(providerError { try provider.parse(daily, cursor: .offset(0)) }?.kind == "rateLimited")
        #expect(providerError { try provider.parse(badKey, cursor: .offset(0)) }?.kind == "authentication(GOOGLE_API_KEY)")
        #expect(providerError { try provider.parse(badArgument, cursor: .offset(0)) }?.kind == "permanent")
        #expect(providerError { try provider.parse(response(500, "{}"), cursor: .offset(0)) }?.kind == "transient")
    }

    @Test func buildsRequestsWithinTheHundredResultWindow() throws {
        // Given the provider and a single-format query
        let query = SearchQuery(text: "red", formats: ["jpeg"])

        // When the first and the last pages are requested
        let first = try provider.request(for: .offset(0), query: query)
        let last = try provider.request(for: .offset(90), query: query)

        // Then the last page is results 91–100 (start=91&num=10), and the secrets stay out of the cache key
        #expect(queryItems(first.url) == ["key": "test-key", "cx": "engine-1", "q": "red", "searchType": "image", "start": "1", "num": "10", "safe": "active", "fileType": "jpg"])
        #expect(queryItems(last.url)["start"] == "91")
        #expect(queryItems(last.url)["num"] == "10")
        #expect(queryItems(try provider.request(for: .offset(99), query: query).url)["num"] == "1")
        #expect(providerError { try provider.request(for: .offset(100), query: query) }?.kind == "configuration")
        #expect(!first.cacheKey.contains("test-key"))
        #expect(!first.cacheKey.contains("engine-1"))
        #expect(queryItems(try #require(URL(string: first.cacheKey)))["cx"] == "fp-" + StableFingerprint.hex("engine-1"))
        #expect(providerError { try GoogleCustomSearchProvider.make(environment: ["GOOGLE_API_KEY": "k"], endpointOverride: nil) }?.kind == "authentication(GOOGLE_CSE_ID)")
    }
}
