import Foundation
@testable import MirrorCore
@testable import MirrorFetch
@testable import MirrorKit
@testable import MirrorSearch
@testable import MirrorStorage
import Testing

@Suite("Pexels provider")
struct PexelsProviderTests {
    let provider = PexelsProvider(apiKey: "test-key")

    @Test func parsesRecordedSearch() throws {
        // Given the recorded per_page=1 search with next_page
        let response = try Fixture.response("pexels/search_q=nature_per_page1_2021_images-map.json")

        // When it is parsed
        let page = try provider.parse(response, cursor: .page(1))

        // Then one result, page 2 follows
        #expect(page.results.count == 1)
        #expect(page.next == .page(2))
        #expect(page.reportedTotal == 10000)
        let first = try #require(page.results.first)
        #expect(first.id == "3031075")
        #expect(first.imageURL.absoluteString == "https://images.pexels.com/photos/3031075/pexels-photo-3031075.jpeg")
        #expect(first.pageURL?.absoluteString == "https://www.pexels.com/photo/grey-cliff-beside-ocean-3031075/")
        #expect(first.width == 3686)
        #expect(first.height == 4607)
        #expect(first.mimeType == "image/jpeg")
        #expect(first.license?.code == "pexels")
        #expect(first.creator == ImageResult.Creator(name: "Simon Clayton", url: URL(string: "https://www.pexels.com/@sglc")))
    }

    @Test func missingNextPageIsTheEnd() throws {
        // Given a last page: no next_page
        let body = #"{"total_results":81,"page":2,"per_page":80,"photos":[{"id":1,"width":10,"height":20,"url":"https://www.pexels.com/photo/1/","photographer":"A","src":{"original":"https://images.pexels.com/photos/1/a.png"}}],"prev_page":"https://api.pexels.com/v1/search/?page=1"}"#

        // When it is parsed
        let page = try provider.parse(response(200, body), cursor: .page(2))

        // Then it is exhausted
        #expect(page.continuation == .exhausted)
        #expect(page.results.first?.mimeType == "image/png")
    }

    @Test func errorsAndRequest() throws {
        // Given 401 and 429 answers
        #expect(providerError { try provider.parse(response(401, #"{"error":"Unauthorized"}"#), cursor: .page(1)) }?.kind == "authentication(PEXELS_API_KEY)")
        #expect(providerError { try provider.parse(response(429, "Too Many Requests", headers: ["Retry-After": "60"]), cursor: .page(1)) }?.retryAfter == .seconds(60))

        // When a page is requested
        let request = try provider.request(for: .page(3), query: SearchQuery(text: "sea"))

        // Then the key is the raw Authorization header and never in the URL
        #expect(request.headers["Authorization"] == "test-key")
        #expect(queryItems(request.url) == ["query": "sea", "page": "3", "per_page": "80"])
        #expect(!request.url.absoluteString.contains("test-key"))
    }
}
