import Foundation
@testable import MirrorCore
@testable import MirrorFetch
@testable import MirrorKit
@testable import MirrorSearch
@testable import MirrorStorage
import Testing

// The fixture `flickr/cassette_photos_search_tags_sunset_xml.yml` is a REST/XML recording. This provider always
// requests `format=json&nojsoncallback=1`, so XML answers are out of scope and that cassette is not parsed here;
// its `flickr.photos.licenses.getInfo` answer is the source of `FlickrProvider.licenses`.
@Suite("Flickr provider")
struct FlickrProviderTests {
    let provider = FlickrProvider(apiKey: "test-key")
    let query = SearchQuery(text: "sunset")

    // MARK: - Recorded samples

    @Test func parsesSearchWithExtras() throws {
        // Given the recorded per_page=500 search with extras (total "30" as a string, one page)
        let response = try Fixture.response("flickr/photos_search_openverse_pretty.json")

        // When it is parsed
        let page = try provider.parse(response, cursor: .page(1))

        // Then 30 results, exhausted, and the first uses url_l (there is no url_o) with its own dimensions
        #expect(page.results.count == 30)
        #expect(page.continuation == .exhausted)
        #expect(page.reportedTotal == 30)
        let first = try #require(page.results.first)
        #expect(first.provider == "flickr")
        #expect(first.id == "49514337848")
        #expect(first.title == "Warsy (\u{e9}glise) \u{2022} 7433")
        #expect(first.imageURL.absoluteString == "https://live.staticflickr.com/65535/49514337848_bbdbb5f761_b.jpg")
        #expect(first.width == 660)
        #expect(first.height == 1024)
        #expect(first.mimeType == "image/jpeg")
        #expect(first.license == ImageResult.License(code: "cc-by-nc-sa", version: "2.0", url: URL(string: "https://creativecommons.org/licenses/by-nc-sa/2.0/")))
        #expect(first.creator == ImageResult.Creator(name: "markustrois", url: URL(string: "https://www.flickr.com/photos/7478087@N06/")))
        #expect(first.pageURL?.absoluteString == "https://www.flickr.com/photos/7478087@N06/49514337848")
        #expect(first.thumbnailURL?.absoluteString == "https://live.staticflickr.com/65535/49514337848_bbdbb5f761_t.jpg")
        #expect(first.description?.hasPrefix("Warsy (Somme, France) - www.google.com/maps/") == true)
        #expect(first.tags.isEmpty)
        // and photos without url_l fall back to url_m (500 px)
        let small = try #require(page.results.first { $0.id == "49515058172" })
        #expect(small.imageURL.absoluteString == "https://live.staticflickr.com/65535/49515058172_e52c8df29f.jpg")
    }

    @Test func parsesListWithoutExtrasByBuildingURLs() throws {
        // Given a recorded list with no extras at all (perpage 2, pages 635, total "1270")
        let response = try Fixture.response("flickr/photos_list_perpage2_flickrex.json")

        // When it is parsed
        let page = try provider.parse(response, cursor: .page(1))

        // Then the 500 px URL is built from server/id/secret and page 2 follows
        #expect(page.results.count == 2)
        #expect(page.next == .page(2))
        #expect(page.continuation == .more)
        #expect(page.reportedTotal == 1270)
        let first = try #require(page.results.first)
        #expect(first.id == "477842380")
        #expect(first.imageURL.absoluteString == "https://live.staticflickr.com/200/477842380_ee69046f6f.jpg")
        #expect(first.width == nil)
        #expect(first.license == nil)
        #expect(first.creator == ImageResult.Creator(name: nil, url: URL(string: "https://www.flickr.com/photos/35034362831@N01/")))
    }

    @Test func builtURLMatchesTheRecordedMediumSize() throws {
        // Given getSizes for photo 8436466166 (secret e2dc3b83de, server 8056), which is not a search answer
        let sizes = try Fixture.object("flickr/photos_getSizes_flickrex.json")
        let entries = try #require((sizes["sizes"] as? [String: Any])?["size"] as? [[String: Any]])
        let medium = try #require(entries.first { $0["label"] as? String == "Medium" }?["source"] as? String)

        // When the provider builds a URL for that photo without extras
        let built = try #require(FlickrProvider.result(.object(["id": .string("8436466166"), "secret": .string("e2dc3b83de"), "server": .string("8056")])))

        // Then it is the recorded "Medium" (500 px) file, on the current host
        #expect(URL(string: medium)?.path == built.imageURL.path)
        // and the search parser refuses a getSizes body as unexpected (retryable), rather than inventing a page
        let error = providerError { try provider.parse(try Fixture.response("flickr/photos_getSizes_flickrex.json"), cursor: .page(1)) }
        #expect(error?.kind == "transient")
    }

    @Test func pageSizeAndCapMatchTheOfficialMethodInfo() throws {
        // Given the official reflection data for flickr.photos.search
        let info = try Fixture.object("flickr/reflection_getMethodInfo_photos_search.json")
        let arguments = try #require((info["arguments"] as? [String: Any])?["argument"] as? [[String: Any]])
        let perPage = try #require(arguments.first { $0["name"] as? String == "per_page" }?["_content"] as? String)
        let explanation = try #require(((info["method"] as? [String: Any])?["explanation"] as? [String: Any])?["_content"] as? String)

        // Then our page size is the documented maximum and our cap is the documented one
        #expect(perPage.contains("maximum allowed value is \(provider.pageSize)"))
        #expect(explanation.contains("at most the first 4,000 results"))
        #expect(FlickrProvider.resultCap == 4000)
        // and the reflection body itself is not mistaken for a search page
        #expect(providerError { try provider.parse(try Fixture.response("flickr/reflection_getMethodInfo_photos_search.json"), cursor: .page(1)) }?.kind == "transient")
    }

    @Test func recordedFailureIsPermanent() throws {
        // Given the recorded {"stat":"fail","code":112} body (HTTP 200)
        let response = try Fixture.response("flickr/error_method_not_found_112.json")

        // When it is parsed
        let error = providerError { try provider.parse(response, cursor: .page(1)) }

        // Then it fails loudly as permanent, with Flickr's message
        #expect(error?.kind == "permanent")
        #expect(error?.message.contains("Method \"flickr.fakeMethod\" not found") == true)
    }

    // MARK: - Emulated edge cases

    @Test func statFailCodesAreClassified() {
        // Given stat:fail bodies with HTTP 200
        func fail(_ code: Int, _ message: String) -> APIResponse {
            response(200, #"{"stat":"fail","code":\#(code),"message":"\#(message)"}"#)
        }

        // When / Then: 100 names the key variable, 105/10/201 are transient, 20 is the cap, 3 is permanent
        #expect(providerError { try provider.parse(fail(100, "Invalid API Key (Key has invalid format)"), cursor: .page(1)) }?.kind == "authentication(FLICKR_API_KEY)")
        #expect(providerError { try provider.parse(fail(105, "Service currently unavailable"), cursor: .page(1)) }?.kind == "transient")
        #expect(providerError { try provider.parse(fail(10, "Sorry, the Flickr search API is not currently available."), cursor: .page(1)) }?.kind == "transient")
        #expect(providerError { try provider.parse(fail(201, "Sorry, the Flickr API service is not currently available."), cursor: .page(1)) }?.kind == "transient")
        #expect(providerError { try provider.parse(fail(3, "Parameterless searches have been disabled"), cursor: .page(1)) }?.kind == "permanent")
        let capped = try? provider.parse(fail(20, "Excessive photo offset in search"), cursor: .page(9))
        #expect(capped?.continuation == .capped)
    }

    @Test func fourThousandResultCapEndsThePaginator() throws {
        // Given page 8 of 500 where Flickr claims 206,304 pages (total as an int this time)
        let body = #"{"photos":{"page":8,"pages":206304,"perpage":500,"total":2063031,"photo":[{"id":"1","secret":"s","server":"9","farm":1,"title":"t","url_o":"https://live.staticflickr.com/9/1_o1_o.png","width_o":"4000","o_width":"4000","o_height":"3000","originalformat":"png","license":"9"}]},"stat":"ok"}"#

        // When it is parsed
        let page = try provider.parse(response(200, body), cursor: .page(8))

        // Then the page is capped (8 × 500 = 4,000) and page 9 cannot be requested
        #expect(page.continuation == .capped)
        #expect(page.next == nil)
        #expect(page.reportedTotal == 2063031)
        let result = try #require(page.results.first)
        #expect(result.width == 4000)
        #expect(result.height == 3000)
        #expect(result.mimeType == "image/png")
        #expect(result.license?.code == "cc0")
        #expect(providerError { try provider.request(for: .page(9), query: query) }?.kind == "configuration")
    }

    @Test func jsonpWrapperAndEmptyResultsAreHandled() throws {
        // Given a JSONP answer (nojsoncallback lost) holding the empty result
        let body = #"jsonFlickrApi({"photos":{"page":1,"pages":0,"perpage":100,"total":"0","photo":[]},"stat":"ok"})"#

        // When it is parsed
        let page = try provider.parse(response(200, body), cursor: .page(1))

        // Then it is an empty, exhausted page
        #expect(page.results.isEmpty)
        #expect(page.continuation == .exhausted)
    }

    // MARK: - Requests

    @Test func buildsSearchRequest() throws {
        // Given a provider with a custom endpoint and a licence filter
        let custom = FlickrProvider(endpoint: URL(string: "http://127.0.0.1:8081/rest"), apiKey: "test-key")
        let filtered = SearchQuery(text: "red fox", licenses: ["cc0", "cc-by", "unsplash"])

        // When page 2 is requested
        let request = try custom.request(for: .page(2), query: filtered)

        // Then the query items are exact and the key stays out of the cache key
        #expect(queryItems(request.url) == [
            "method": "flickr.photos.search", "api_key": "test-key", "format": "json", "nojsoncallback": "1",
            "text": "red fox", "media": "photos", "safe_search": "1", "content_type": "1", "sort": "relevance",
            "extras": "url_o,url_l,url_c,url_z,url_m,o_dims,license,owner_name,description,tags,original_format",
            "per_page": "500", "page": "2", "license": "4,9",
        ])
        #expect(request.url.absoluteString.hasPrefix("http://127.0.0.1:8081/rest?"))
        #expect(!request.cacheKey.contains("api_key"))
        #expect(!request.cacheKey.contains("test-key"))
        #expect(providerError { try FlickrProvider.make(environment: [:], endpointOverride: nil) }?.kind == "authentication(FLICKR_API_KEY)")
        #expect(providerError { try FlickrProvider.make(environment: ["FLICKR_API_KEY": "  "], endpointOverride: nil) }?.kind == "authentication(FLICKR_API_KEY)")
    }
}
