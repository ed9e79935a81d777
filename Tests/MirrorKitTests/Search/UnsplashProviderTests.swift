import Foundation
@testable import MirrorCore
@testable import MirrorFetch
@testable import MirrorKit
@testable import MirrorSearch
@testable import MirrorStorage
import Testing

@Suite("Unsplash provider")
struct UnsplashProviderTests {
    let provider = UnsplashProvider(accessKey: "test-key")

    @Test func parsesRecordedSearchBody() throws {
        // Given the search body extracted from the official client's cassette (3 of 15149, 5050 pages)
        let response = try Fixture.response("unsplash/search_photos_q=dog_per_page3_2019_body.json")

        // When it is parsed as page 1
        let page = try provider.parse(response, cursor: .page(1))

        // Then 3 results and page 2 follows
        #expect(page.results.count == 3)
        #expect(page.next == .page(2))
        #expect(page.reportedTotal == 15149)
        let first = try #require(page.results.first)
        #expect(first.id == "ngqyo2AYYnE")
        #expect(first.width == 5184)
        #expect(first.height == 3456)
        #expect(first.imageURL.absoluteString == "https://unsplash.imgix.net/photo-1507146426996-ef05306b995a?ixlib=rb-1.2.1&q=85&fm=jpg&crop=entropy&cs=srgb&ixid=eyJhcHBfaWQiOjEwOTJ9")
        #expect(first.mimeType == "image/jpeg")
        #expect(first.pageURL?.absoluteString == "http://staging.unsplash.com/photos/ngqyo2AYYnE")
        #expect(first.creator == ImageResult.Creator(name: "Berkay Gumustekin", url: URL(string: "http://staging.unsplash.com/@berkaygumustekin")))
        #expect(first.license?.code == "unsplash")
        #expect(first.tags.prefix(3) == ["puppy", "collar", "fur"])
    }

    @Test func parsesEverySearchInTheCassette() throws {
        // Given every search/photos interaction of the recorded cassette (bodies extracted from the YAML)
        let searches = try Cassette.interactions("unsplash/cassette_unsplash_rb_photos.yml").filter { $0.uri.contains("search/photos") }
        #expect(searches.count == 6)
        // (the extractor is checked against the body file that was extracted from the same cassette)
        let extracted = try Fixture.data("unsplash/search_photos_q=dog_per_page3_2019_body.json")
        #expect(searches.first { $0.uri.hasSuffix("search/photos?page=1&per_page=3&query=dog") }?.body == String(decoding: extracted, as: UTF8.self))

        for search in searches {
            // When each is parsed
            let page = try provider.parse(response(search.status, search.body), cursor: .page(1))
            let perPage = try #require(URLComponents(string: search.uri.replacingOccurrences(of: "<API_URI>", with: "https://api.unsplash.com/"))?.queryItems?.first { $0.name == "per_page" }?.value.flatMap(Int.init))

            // Then each page is full and has a next page
            #expect(search.status == 200)
            #expect(page.results.count == perPage, "\(search.uri)")
            #expect(page.continuation == .more)
        }
    }

    @Test func recordedErrorsFailLoudly() throws {
        // Given the recorded 401 and 404 bodies
        let unauthorized = try Fixture.response("unsplash/error_401_oauth_invalid_token.json", status: 401)
        let notFound = try Fixture.response("unsplash/error_404_couldnt_find_photo.json", status: 404)

        // When / Then
        let authError = providerError { try provider.parse(unauthorized, cursor: .page(1)) }
        #expect(authError?.kind == "authentication(UNSPLASH_ACCESS_KEY)")
        #expect(authError?.message.contains("OAuth error: The access token is invalid") == true)
        #expect(providerError { try provider.parse(notFound, cursor: .page(1)) }?.kind == "permanent")
    }

    @Test func plainText403IsRateLimited() {
        // Given Unsplash's plain-text 403 over the limit, and a 403 that is not about the limit
        let limited = response(403, "Rate Limit Exceeded", headers: ["Content-Type": "text/plain", "X-Ratelimit-Remaining": "0"])
        let forbidden = response(403, #"{"errors":["You do not have access to this resource"]}"#)

        // When / Then
        #expect(providerError { try provider.parse(limited, cursor: .page(1)) }?.kind == "rateLimited")
        #expect(providerError { try provider.parse(forbidden, cursor: .page(1)) }?.kind == "authentication(UNSPLASH_ACCESS_KEY)")
    }

    @Test func page200IsCappedAndRequestUsesClientIDHeader() throws {
        // Given page 200 of a query with 5050 pages
        let body = #"{"total":151490,"total_pages":5050,"results":[{"id":"x","width":1,"height":1,"urls":{"full":"https://images.unsplash.com/x?fm=jpg"}}]}"#

        // When it is parsed and a request is built
        let page = try provider.parse(response(200, body), cursor: .page(200))
        let request = try provider.request(for: .page(2), query: SearchQuery(text: "dog"))

        // Then it is capped; the request carries the key only in the header
        #expect(page.continuation == .capped)
        #expect(providerError { try provider.request(for: .page(201), query: SearchQuery(text: "dog")) }?.kind == "configuration")
        #expect(request.headers["Authorization"] == "Client-ID test-key")
        #expect(request.headers["Accept-Version"] == "v1")
        #expect(queryItems(request.url) == ["query": "dog", "page": "2", "per_page": "30", "content_filter": "high"])
    }
}
