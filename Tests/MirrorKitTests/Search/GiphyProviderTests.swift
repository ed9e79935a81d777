import Foundation
@testable import MirrorCore
@testable import MirrorFetch
@testable import MirrorKit
@testable import MirrorSearch
@testable import MirrorStorage
import Testing

@Suite("Giphy provider")
struct GiphyProviderTests {
    let provider = GiphyProvider(apiKey: "test-key")

    @Test func parsesSDKMockSearch() throws {
        // Given Giphy's own SDK mock of /v1/gifs/search (5 of 5, string dimensions)
        let response = try Fixture.response("giphy/gifs_search_giphy-js_mock.json")

        // When it is parsed
        let page = try provider.parse(response, cursor: .offset(0))

        // Then 5 results, exhausted (total_count reached), dimensions read from strings
        #expect(page.results.count == 5)
        #expect(page.continuation == .exhausted)
        #expect(page.reportedTotal == 5)
        let first = try #require(page.results.first)
        #expect(first.id == "l0IylOPCNkiqOgMyA")
        #expect(first.title == "Always Sunny Fx GIF")
        #expect(first.imageURL.absoluteString == "https://media3.giphy.com/media/l0IylOPCNkiqOgMyA/giphy.gif")
        #expect(first.pageURL?.absoluteString == "https://giphy.com/gifs/fx-charlie-always-sunny-l0IylOPCNkiqOgMyA")
        #expect(first.width == 480)
        #expect(first.height == 304)
        #expect(first.byteSize == 4425475)
        #expect(first.mimeType == "image/gif")
        #expect(first.license == nil)
        #expect(first.creator == nil)
        #expect(first.thumbnailURL?.absoluteString == "https://media3.giphy.com/media/l0IylOPCNkiqOgMyA/200w_s.gif")
        let second = try #require(page.results.dropFirst().first)
        #expect(second.creator == ImageResult.Creator(name: "It's Always Sunny in Philadelphia", url: URL(string: "https://giphy.com/sunnyfxx/")))
    }

    @Test func parsesRecordedLimitOneSearch() throws {
        // Given a recorded limit=1 search: total_count 10049
        let response = try Fixture.response("giphy/gifs_search_limit1_giphy_get.json")

        // When it is parsed
        let page = try provider.parse(response, cursor: .offset(0))

        // Then one result and the next offset is 1
        #expect(page.results.count == 1)
        #expect(page.next == .offset(1))
        #expect(page.reportedTotal == 10049)
        let first = try #require(page.results.first)
        #expect(first.id == "5xaOcLDE64VMF4LqqrK")
        #expect(first.width == 325)
        #expect(first.height == 322)
        #expect(first.byteSize == 4093990)
    }

    @Test func parsesSingleGIFLookup() throws {
        // Given a /v1/gifs/{id} body (data is one object, no pagination)
        let response = try Fixture.response("giphy/gif_by_id_giphy-js_mock.json")

        // When it is parsed
        let page = try provider.parse(response, cursor: .offset(0))

        // Then it is one exhausted result, query string kept on the URL
        #expect(page.results.count == 1)
        #expect(page.continuation == .exhausted)
        let gif = try #require(page.results.first)
        #expect(gif.id == "l0HlyLQsbvhciAuKA")
        #expect(gif.imageURL.absoluteString == "https://media3.giphy.com/media/l0HlyLQsbvhciAuKA/giphy.gif?cid=9f0f64258d093c222a5c058e0ba384203b07211f39c5ec49&rid=giphy.gif")
        #expect(gif.width == 448)
        #expect(gif.height == 480)
        #expect(gif.creator?.url?.absoluteString == "https://giphy.com/haydiroket/")
    }

    @Test func syntheticEmptyPageIsTransientNotTheEnd() throws {
        // Given Giphy's synthetic answer: 200, data [], no pagination; and the real end past offset 5000
        let synthetic = response(200, #"{"data":[],"meta":{"msg":"OK","response_id":"","status":200}}"#)
        let realEnd = response(200, #"{"data":[],"pagination":{"total_count":0,"count":0,"offset":0},"meta":{"status":200,"msg":"OK","response_id":"x"}}"#)

        // When / Then
        #expect(providerError { try provider.parse(synthetic, cursor: .offset(50)) }?.kind == "transient")
        #expect(try provider.parse(realEnd, cursor: .offset(50)).continuation == .exhausted)
    }

    @Test func offsetCapAt4999() throws {
        // Given the page at offset 4950 of a huge result set
        let body = #"{"data":[{"id":"a","images":{"original":{"url":"https://media.giphy.com/a.gif","width":"1","height":"1"}}}],"pagination":{"total_count":90000,"count":50,"offset":4950},"meta":{"status":200,"msg":"OK","response_id":"r"}}"#

        // When it is parsed
        let page = try provider.parse(response(200, body), cursor: .offset(4950))

        // Then it is capped, and offset 5000 cannot be requested
        #expect(page.continuation == .capped)
        #expect(providerError { try provider.request(for: .offset(5000), query: SearchQuery(text: "x")) }?.kind == "configuration")
    }

    @Test func errorBodiesAreClassified() {
        // Given the documented 401/429 bodies, the gateway 403, and an error only in meta.status
        let unauthorized = response(401, #"{"data":[],"meta":{"status":401,"msg":"Unauthorized","response_id":""}}"#)
        let limited = response(429, #"{"data":[],"meta":{"status":429,"msg":"API rate limit exceeded","response_id":""}}"#, headers: ["retry-after": "0"])
        let gateway = response(403, #"{"message":"Invalid authentication credentials"}"#)
        let inMeta = response(200, #"{"data":[],"meta":{"status":403,"msg":"Forbidden"}}"#)

        // When / Then
        #expect(providerError { try provider.parse(unauthorized, cursor: .offset(0)) }?.kind == "authentication(GIPHY_API_KEY)")
        let rate = providerError { try provider.parse(limited, cursor: .offset(0)) }
        #expect(rate?.kind == "rateLimited")
        #expect(rate?.retryAfter == nil)  // "retry-after: 0" is no hint
        #expect(providerError { try provider.parse(gateway, cursor: .offset(0)) }?.message.contains("Invalid authentication credentials") == true)
        #expect(providerError { try provider.parse(inMeta, cursor: .offset(0)) }?.kind == "authentication(GIPHY_API_KEY)")
    }

    @Test func buildsSearchRequest() throws {
        // Given a long query
        let query = SearchQuery(text: String(repeating: "a", count: 60))

        // When offset 100 is requested
        let request = try provider.request(for: .offset(100), query: query)

        // Then the items are exact, q is cut to 50 characters, the key is not in the cache key
        #expect(queryItems(request.url) == ["api_key": "test-key", "q": String(repeating: "a", count: 50), "limit": "50", "offset": "100", "rating": "g"])
        #expect(!request.cacheKey.contains("test-key"))
        #expect(request.cacheKey.hasPrefix("https://api.giphy.com/v1/gifs/search?q="))
    }
}
