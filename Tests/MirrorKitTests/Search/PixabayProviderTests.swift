import Foundation
@testable import MirrorCore
@testable import MirrorFetch
@testable import MirrorKit
@testable import MirrorSearch
@testable import MirrorStorage
import Testing

@Suite("Pixabay provider")
struct PixabayProviderTests {
    let provider = PixabayProvider(apiKey: "test-key")

    @Test func parsesCappedRecording() throws {
        // Given the 2022 recording: total 8737, totalHits 500, 20 hits
        let response = try Fixture.response("pixabay/search_total8737_totalHits500_per_page20_2022_flutter_image_gridview.json")

        // When it is parsed as page 1 (200 per page, so 200 < 500: more)
        let page = try provider.parse(response, cursor: .page(1))

        // Then 20 results with the large rendition's scaled dimensions
        #expect(page.results.count == 20)
        #expect(page.continuation == .more)
        #expect(page.reportedTotal == 8737)
        let first = try #require(page.results.first)
        #expect(first.id == "634572")
        #expect(first.imageURL.absoluteString.hasPrefix("https://pixabay.com/get/g13142aa34c3ea393fdcd2fb95901ade8f932b4f0240c8eb6963e6d47ed8ee2a85b8b0ce9e0638de90756d16997ec929d0e5443c47362c66c2559092047ae3226_1280.jpg"))
        #expect(first.width == 853)  // 3345 × 1280 / 5017
        #expect(first.height == 1280)
        #expect(first.byteSize == nil)  // imageSize is the original's
        #expect(first.pageURL?.absoluteString == "https://pixabay.com/photos/apples-fruits-red-ripe-vitamins-634572/")
        #expect(first.tags == ["apples", "fruits", "red"])
        #expect(first.creator == ImageResult.Creator(name: "Desertrose7", url: URL(string: "https://pixabay.com/users/Desertrose7-752536/")))
        #expect(first.license?.code == "pixabay")
        // and page 3 (600 ≥ totalHits 500 < total 8737) is capped
        #expect(try provider.parse(response, cursor: .page(3)).continuation == .capped)
    }

    @Test func parsesSmallRecording() throws {
        // Given the 2021 recording: total 3, totalHits 3
        let response = try Fixture.response("pixabay/search_q=nature_london_total3_2021_images-map.json")

        // When it is parsed
        let page = try provider.parse(response, cursor: .page(1))

        // Then 3 results, exhausted (everything that exists was reachable)
        #expect(page.results.count == 3)
        #expect(page.continuation == .exhausted)
        let first = try #require(page.results.first)
        #expect(first.id == "4910149")
        #expect(first.width == 1280)
        #expect(first.height == 853)
        #expect(first.creator?.name == "Meatle")
    }

    @Test func plainTextErrors() {
        // Given Pixabay's plain-text errors
        let outOfRange = response(400, #"[ERROR 400] "page" is out of valid range."#)
        let badKey = response(400, "[ERROR 400] Invalid or missing API key (test-key)")
        let limited = response(429, "[ERROR 429] Too many requests", headers: ["X-RateLimit-Reset": "42"])

        // When / Then: the end of results, the key variable, the reset header
        #expect((try? provider.parse(outOfRange, cursor: .page(4)))?.continuation == .exhausted)
        let keyError = providerError { try provider.parse(badKey, cursor: .page(1)) }
        #expect(keyError?.kind == "authentication(PIXABAY_API_KEY)")
        #expect(keyError?.description.contains("test-key") == false)
        #expect(providerError { try provider.parse(limited, cursor: .page(1)) }?.retryAfter == .seconds(42))
        #expect(providerError { try provider.parse(response(200, "[ERROR 500] oops"), cursor: .page(1)) }?.kind == "transient")
    }

    @Test func buildsRequest() throws {
        // When a filtered page is requested
        let request = try provider.request(for: .page(2), query: SearchQuery(text: "red apple", minWidth: 1024, minHeight: 768))

        // Then the items are exact and the key is not in the cache key
        #expect(queryItems(request.url) == ["key": "test-key", "q": "red apple", "image_type": "photo", "safesearch": "true", "page": "2", "per_page": "200", "min_width": "1024", "min_height": "768"])
        #expect(request.cacheKey == "https://pixabay.com/api/?q=red%20apple&image_type=photo&safesearch=true&page=2&per_page=200&min_width=1024&min_height=768")
    }
}
