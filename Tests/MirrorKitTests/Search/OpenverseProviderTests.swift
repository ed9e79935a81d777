import Foundation
@testable import MirrorCore
@testable import MirrorFetch
@testable import MirrorKit
@testable import MirrorSearch
@testable import MirrorStorage
import Testing

@Suite("Openverse provider")
struct OpenverseProviderTests {
    let provider = OpenverseProvider()
    let query = SearchQuery(text: "cats & c++")

    // MARK: - Recorded samples

    @Test func parsesCurrentShapeDocumentedExample() throws {
        // Given the API's documented search example (current shape, with width/height/filesize)
        let response = try Fixture.response("openverse/doc_example_image_search_200.json")

        // When it is parsed as page 1
        let page = try provider.parse(response, cursor: .page(1))

        // Then the one result is mapped field by field and the search is exhausted (page_count 1)
        #expect(page.results.count == 1)
        #expect(page.continuation == .exhausted)
        #expect(page.next == nil)
        #expect(page.reportedTotal == 1)
        let result = try #require(page.results.first)
        #expect(result.provider == "openverse")
        #expect(result.id == "4bc43a04-ef46-4544-a0c1-63c63f56e276")
        #expect(result.title == "Tree Bark Photo")
        #expect(result.imageURL.absoluteString == "https://cdn.stocksnap.io/img-thumbs/960w/XNVBVXO3B7.jpg")
        #expect(result.pageURL?.absoluteString == "https://stocksnap.io/photo/XNVBVXO3B7")
        #expect(result.thumbnailURL?.absoluteString == "https://api.openverse.engineering/v1/images/4bc43a04-ef46-4544-a0c1-63c63f56e276/thumb/")
        #expect(result.width == 6016)
        #expect(result.height == 4016)
        #expect(result.byteSize == 896128)
        #expect(result.mimeType == "image/jpeg")
        #expect(result.license == ImageResult.License(code: "cc0", version: "1.0", url: URL(string: "https://creativecommons.org/publicdomain/zero/1.0/")))
        #expect(result.creator == ImageResult.Creator(name: "Tim Sullivan", url: URL(string: "https://www.secretagencygroup.com")))
        #expect(result.tags.count == 21)
        #expect(result.tags.first == "tree")
    }

    @Test func parses2021FirstPageWithoutDimensions() throws {
        // Given the 2021 "cat" page 1: 20 results, page_count 250, no width/height/filesize, no "page" key
        let response = try Fixture.response("openverse/search_images_q=cat_page1_2021_e2e.json")
        let independent = try Fixture.object("openverse/search_images_q=cat_page1_2021_e2e.json")

        // When it is parsed as page 1
        let page = try provider.parse(response, cursor: .page(1))

        // Then every result is kept, the next page is 2, and null/absent fields stay nil
        #expect(page.results.count == 20)
        #expect(page.results.count == (independent["results"] as? [Any])?.count)
        #expect(page.continuation == .more)
        #expect(page.next == .page(2))
        #expect(page.reportedTotal == 10000)
        let first = try #require(page.results.first)
        #expect(first.id == "20708f1c-0978-47ab-8855-e01f3a392ab3")
        #expect(first.imageURL.absoluteString == "https://live.staticflickr.com/3094/3089483288_a1825f858e_b.jpg")
        #expect(first.width == nil)
        #expect(first.height == nil)
        #expect(first.byteSize == nil)
        #expect(first.mimeType == "image/jpeg")
        #expect(first.license?.code == "cc-by-nc-nd")
        #expect(first.license?.version == "2.0")
        #expect(first.creator == ImageResult.Creator(name: "pricklysarah", url: URL(string: "https://www.flickr.com/photos/11911997@N04")))
        #expect(first.tags == ["cat", "cats"])
        // and the licence codes of the page are all normalised
        #expect(Set(page.results.compactMap { $0.license?.code }) == ["cc-by-nc-nd", "cc-by-nc-sa", "cc-by-nc", "cc-by", "pdm"])
    }

    @Test func parses2021LastPage() throws {
        // Given the recorded last page: result_count 40, page_count 2
        let response = try Fixture.response("openverse/search_images_last_page_2021_e2e.json")

        // When it is parsed as page 2
        let page = try provider.parse(response, cursor: .page(2))

        // Then 20 results and the search is exhausted
        #expect(page.results.count == 20)
        #expect(page.continuation == .exhausted)
        #expect(page.next == nil)
        let first = try #require(page.results.first)
        #expect(first.id == "99182085-7028-4950-9fb1-2547f4e7ea23")
        #expect(first.creator == ImageResult.Creator(name: "Jacob Cats (1741-1799)", url: nil))
        #expect(first.license == ImageResult.License(code: "cc0", version: "1.0", url: URL(string: "https://creativecommons.org/publicdomain/zero/1.0/")))
        #expect(first.tags.count == 7)
    }

    @Test func documentedErrorsFailWithTheRightClassification() throws {
        // Given the documented 400 (validation) and 404 bodies
        let badRequest = try Fixture.response("openverse/doc_example_image_search_400.json", status: 400)
        let notFound = try Fixture.response("openverse/doc_example_image_detail_404.json", status: 404)

        // When they are parsed
        let badRequestError = providerError { try provider.parse(badRequest, cursor: .page(1)) }
        let notFoundError = providerError { try provider.parse(notFound, cursor: .page(1)) }

        // Then both are permanent, with the API's message
        #expect(badRequestError?.kind == "permanent")
        #expect(badRequestError?.message.contains("License 'PDMNBCG' does not exist") == true)
        #expect(notFoundError?.kind == "permanent")
        #expect(notFoundError?.message.contains("Not found.") == true)
    }

    // MARK: - Emulated edge cases

    @Test func pageTwentyIsCapped() throws {
        // Given page 20 of a big result set (page_count 500 > 20)
        let body = #"{"result_count":10000,"page_count":500,"page_size":20,"page":20,"results":[{"id":"a","url":"https://x.test/a.jpg","filetype":null,"filesize":null,"width":null,"height":null,"license":"by","license_version":"4.0"}]}"#

        // When it is parsed
        let page = try provider.parse(response(200, body), cursor: .page(20))

        // Then the page is capped and page 21 cannot even be requested
        #expect(page.continuation == .capped)
        #expect(page.next == nil)
        #expect(page.results.first?.license == ImageResult.License(code: "cc-by", version: "4.0"))
        #expect(page.results.first?.mimeType == "image/jpeg")
        #expect(providerError { try provider.request(for: .page(21), query: query) }?.kind == "configuration")
    }

    @Test func emptySearchIsExhausted() throws {
        // Given Openverse's empty answer
        let body = #"{"result_count":0,"page_count":0,"page_size":20,"page":1,"results":[]}"#

        // When it is parsed
        let page = try provider.parse(response(200, body), cursor: .page(1))

        // Then no results, exhausted
        #expect(page.results.isEmpty)
        #expect(page.continuation == .exhausted)
    }

    @Test func throttlingReadsRetryAfterOrTheMessage() throws {
        // Given a 429 with Retry-After, and the staged one without it
        let withHeader = response(429, #"{"detail":"Request was throttled. Expected available in 12 seconds."}"#, headers: ["Retry-After": "30"])
        let withoutHeader = response(429, #"{"detail":"Request was throttled. Expected available in 12 seconds."}"#)

        // When they are parsed
        let first = providerError { try provider.parse(withHeader, cursor: .page(1)) }
        let second = providerError { try provider.parse(withoutHeader, cursor: .page(1)) }

        // Then both are rate limited, the header winning over the message
        #expect(first?.kind == "rateLimited")
        #expect(first?.retryAfter == .seconds(30))
        #expect(second?.retryAfter == .seconds(12))
    }

    @Test func anonymous401IsConfigurationAndServerErrorsAreTransient() {
        // Given an anonymous 401 (page_size above 20), a 500, a 503 and a non-JSON 200
        let unauthorized = response(401, #"{"detail":"Ensure this value is less than or equal to 20."}"#)
        let serverError = response(500, #"{"detail":"An internal server error occurred."}"#)
        let unavailable = response(503, "<html>Bad gateway</html>")
        let garbage = response(200, "<html>oops</html>")

        // When / Then
        #expect(providerError { try provider.parse(unauthorized, cursor: .page(1)) }?.kind == "configuration")
        #expect(providerError { try provider.parse(serverError, cursor: .page(1)) }?.kind == "transient")
        #expect(providerError { try provider.parse(unavailable, cursor: .page(1)) }?.kind == "transient")
        #expect(providerError { try provider.parse(garbage, cursor: .page(1)) }?.kind == "transient")
    }

    // MARK: - Requests

    @Test func buildsAnonymousRequest() throws {
        // Given an anonymous provider and a query with filters
        let filtered = SearchQuery(text: "cats & c++", minWidth: 800, licenses: ["cc-by", "cc0", "pexels"], formats: ["jpeg", "png"])

        // When page 3 is requested
        let request = try provider.request(for: .page(3), query: filtered)

        // Then the query is encoded strictly and only supported filters are sent
        #expect(request.method == .get)
        #expect(request.url.absoluteString.hasPrefix("https://api.openverse.org/v1/images/?q="))
        #expect(queryItems(request.url) == ["q": "cats & c++", "page": "3", "page_size": "20", "license": "by,cc0", "extension": "jpg,png"])
        #expect(request.url.absoluteString.contains("q=cats%20%26%20c%2B%2B"))
        #expect(request.headers["Authorization"] == nil)
        #expect(request.cacheKey == request.url.absoluteString)
        #expect(provider.pageSize == 20)
        #expect(provider.minimumRequestInterval == .seconds(3))
    }

    @Test func tokenFlowAddsBearerAndRaisesPageSize() throws {
        // Given credentials from the environment and a custom endpoint
        let environment = ["OPENVERSE_CLIENT_ID": "client-1", "OPENVERSE_CLIENT_SECRET": "SECRET-KEY-123", "MIRROR_OPENVERSE_ENDPOINT": "http://127.0.0.1:8080/v1/images/"]
        let anonymous = try OpenverseProvider.make(environment: environment, endpointOverride: nil)

        // When the caller fetches a token and continues authenticated
        let tokenRequest = try anonymous.tokenRequest()
        let token = try anonymous.parseToken(response(200, #"{"access_token":"tok-abc","scope":"read write","expires_in":36000,"token_type":"Bearer"}"#))
        let authenticated = anonymous.authenticated(with: token)
        let request = try authenticated.request(for: .page(1), query: query)

        // Then the token request is a form POST next to the endpoint, and searches carry the bearer token
        #expect(tokenRequest.method == .post)
        #expect(tokenRequest.url.absoluteString == "http://127.0.0.1:8080/v1/auth_tokens/token/")
        #expect(String(decoding: tokenRequest.body ?? Data(), as: UTF8.self) == "grant_type=client_credentials&client_id=client-1&client_secret=SECRET-KEY-123")
        #expect(!tokenRequest.cacheKey.contains("SECRET-KEY-123"))
        #expect(token == OpenverseProvider.AccessToken(value: "tok-abc", expiresIn: .seconds(36000)))
        #expect(request.url.host == "127.0.0.1")
        #expect(request.headers["Authorization"] == "Bearer tok-abc")
        #expect(queryItems(request.url)["page_size"] == "500")
        #expect(!request.cacheKey.contains("tok-abc"))
        // and a rejected token names the variable
        #expect(providerError { try authenticated.parse(response(401, #"{"detail":"Invalid token."}"#), cursor: .page(1)) }?.kind == "authentication(OPENVERSE_CLIENT_ID)")
        #expect(providerError { try anonymous.parseToken(response(400, #"{"error":"invalid_client"}"#)) }?.kind == "authentication(OPENVERSE_CLIENT_ID)")
    }

    @Test func halfConfiguredCredentialsAreRejected() {
        // Given only a secret
        let environment = ["OPENVERSE_CLIENT_SECRET": "s"]

        // When / Then the factory names the missing variable
        #expect(providerError { try OpenverseProvider.make(environment: environment, endpointOverride: nil) }?.kind == "authentication(OPENVERSE_CLIENT_ID)")
        #expect(providerError { try OpenverseProvider().tokenRequest() }?.kind == "configuration")
    }
}
