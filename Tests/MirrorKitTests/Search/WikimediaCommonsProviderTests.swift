import Foundation
@testable import MirrorCore
@testable import MirrorFetch
@testable import MirrorKit
@testable import MirrorSearch
@testable import MirrorStorage
import Testing

@Suite("Wikimedia Commons provider")
struct WikimediaCommonsProviderTests {
    let provider = WikimediaCommonsProvider()

    // MARK: - Recorded samples (an allimages continuation sequence; the parser is the same for generator=search)

    @Test func parsesPropContinuationPage() throws {
        // Given page 1 of a continuation: 9 pages with imageinfo, continue "||imageinfo" + gucontinue, no batchcomplete
        let response = try Fixture.response("wikimedia_commons/allimages_imageinfo_globalusage_page1_continue_prop_openverse.json")

        // When it is parsed from the first cursor
        let page = try provider.parse(response, cursor: provider.initialCursor)

        // Then all 9 files are results, ordered by page id (no "index"), and the whole continue object is echoed
        #expect(page.results.count == 9)
        #expect(page.results.map(\.id) == ["18263872", "44672185", "44672190", "44672194", "44672195", "44672196", "44672207", "44672210", "44672212"])
        #expect(page.continuation == .more)
        #expect(page.next == .token(["continue": "||imageinfo", "gucontinue": "Edvard_Munch_-_Night_in_Nice_(1891).jpg|nowiki|1281339"]))
        let first = try #require(page.results.first)
        #expect(first.provider == "wikimedia")
        #expect(first.title == "Minchinmavida Volcano")
        #expect(first.description == "Vulcano Minchinmavida Cile")
        #expect(first.imageURL.absoluteString == "https://upload.wikimedia.org/wikipedia/commons/f/fb/Minchinmavida_Volcano.jpg")
        #expect(first.pageURL?.absoluteString == "https://commons.wikimedia.org/wiki/File:Minchinmavida_Volcano.jpg")
        #expect(first.width == 1440)
        #expect(first.height == 1440)
        #expect(first.byteSize == 1117410)
        #expect(first.mimeType == "image/jpeg")
        #expect(first.license == ImageResult.License(code: "pdm"))
        // and the HTML Artist is reduced to text plus its first link
        #expect(first.creator == ImageResult.Creator(name: "The original uploader was Elvezio at Italian Wikipedia.", url: URL(string: "https://en.wikipedia.org/wiki/it:User:Elvezio")))
    }

    @Test func parsesPagesWithoutImageinfoAndGeneratorContinue() throws {
        // Given page 2 (same pages, only globalusage) and page 3 (batchcomplete, generator continues with gaicontinue)
        let second = try Fixture.response("wikimedia_commons/allimages_imageinfo_globalusage_page2_continue_prop_openverse.json")
        let third = try Fixture.response("wikimedia_commons/allimages_imageinfo_globalusage_page3_batchcomplete_openverse.json")

        // When they are parsed
        let secondPage = try provider.parse(second, cursor: .token(["continue": "||imageinfo"]))
        let thirdPage = try provider.parse(third, cursor: .token(["continue": "||imageinfo"]))

        // Then pages without imageinfo give no results, and both continue with their whole token
        #expect(secondPage.results.isEmpty)
        #expect(secondPage.next == .token(["continue": "||imageinfo", "gucontinue": "Niedercunnersdorf_Gartenweg_12.JPG|dewiki|9849507"]))
        #expect(thirdPage.results.isEmpty)
        #expect(thirdPage.continuation == .more)
        #expect(thirdPage.next == .token(["continue": "gaicontinue||", "gaicontinue": "20151031230201|Lancelot_'Capability'_BROWN_-_Wilderness_House_Moat_Lane_Hampton_Court_Palace_Hampton_Court_London_KT8_9AR.jpg"]))
    }

    @Test func parsesFinalPageWithoutContinue() throws {
        // Given the final page: batchcomplete and no continue, 28 files
        let response = try Fixture.response("wikimedia_commons/allimages_imageinfo_globalusage_final_no_continue_openverse.json")
        let independent = try Fixture.object("wikimedia_commons/allimages_imageinfo_globalusage_final_no_continue_openverse.json")

        // When it is parsed
        let page = try provider.parse(response, cursor: .token(["gaicontinue": "x"]))

        // Then all 28 are results and the search is exhausted
        #expect(page.results.count == 28)
        #expect(page.results.count == ((independent["query"] as? [String: Any])?["pages"] as? [String: Any])?.count)
        #expect(page.continuation == .exhausted)
        #expect(page.next == nil)
        // and licences and creators come from extmetadata
        let heidelberg = try #require(page.results.first { $0.id == "44672185" })
        #expect(heidelberg.license == ImageResult.License(code: "cc-by-sa", version: "3.0", url: URL(string: "https://creativecommons.org/licenses/by-sa/3.0/de/deed.en")))
        #expect(heidelberg.creator == ImageResult.Creator(name: "Eckhard Henkel", url: URL(string: "https://commons.wikimedia.org/wiki/User:Hasenl%C3%A4ufer")))
        let flickrCommons = try #require(page.results.first { $0.id == "42098895" })
        #expect(flickrCommons.license?.code == "no-known-copyright")
        let munch = try #require(page.results.first { $0.id == "44672212" })
        #expect(munch.width == 803)
        #expect(munch.height == 714)
        let codes = Set(page.results.compactMap { $0.license?.code })
        #expect(codes == ["pdm", "cc-by-sa", "no-known-copyright"])
    }

    // MARK: - Emulated edge cases

    @Test func searchResultsAreOrderedByIndex() throws {
        // Given a generator=search answer whose pages object order differs from the rank
        let body = #"""
        {"batchcomplete":"","continue":{"gsroffset":2,"continue":"gsroffset||"},"query":{"pages":{
          "5":{"pageid":5,"ns":6,"title":"File:B.png","index":2,"imageinfo":[{"url":"https://upload.wikimedia.org/b.png","descriptionurl":"https://commons.wikimedia.org/wiki/File:B.png","size":10,"width":2,"height":3,"mime":"image/png","extmetadata":{"LicenseShortName":{"value":"CC BY 4.0"},"LicenseUrl":{"value":"https://creativecommons.org/licenses/by/4.0"}}}]},
          "9":{"pageid":9,"ns":6,"title":"File:A.jpg","index":1,"imageinfo":[{"url":"https://upload.wikimedia.org/a.jpg","size":20,"width":4,"height":5,"mime":"image/jpeg"}]}}}}
        """#

        // When it is parsed
        let page = try provider.parse(response(200, body), cursor: .token([:]))

        // Then results follow "index", and the numeric gsroffset is echoed as text
        #expect(page.results.map(\.id) == ["9", "5"])
        #expect(page.results.last?.license == ImageResult.License(code: "cc-by", version: "4.0", url: URL(string: "https://creativecommons.org/licenses/by/4.0")))
        #expect(page.results.last?.mimeType == "image/png")
        #expect(page.next == .token(["gsroffset": "2", "continue": "gsroffset||"]))
    }

    @Test func maxlagInsideHTTP200IsRateLimited() {
        // Given a maxlag error in a 200 body, with and without Retry-After
        let body = #"{"error":{"code":"maxlag","info":"Waiting for 10.64.16.7: 7 seconds lagged","host":"10.64.16.7","lag":7,"type":"db"},"servedby":"mw1362"}"#
        let withHeader = response(200, body, headers: ["Retry-After": "5", "X-Database-Lag": "7"])
        let withoutHeader = response(200, body)

        // When they are parsed
        let first = providerError { try provider.parse(withHeader, cursor: .token([:])) }
        let second = providerError { try provider.parse(withoutHeader, cursor: .token([:])) }

        // Then both are rate limited: Retry-After first, else the reported lag
        #expect(first?.kind == "rateLimited")
        #expect(first?.retryAfter == .seconds(5))
        #expect(second?.retryAfter == .seconds(7))
    }

    @Test func otherErrorsInsideHTTP200AreClassified() {
        // Given a parameter error, an internal error and a search without hits
        let missing = response(200, #"{"error":{"code":"missingparam","info":"The \"gsrsearch\" parameter must be set.","*":"See https://commons.wikimedia.org/w/api.php"}}"#)
        let internalError = response(200, #"{"error":{"code":"internal_api_error_DBConnectionError","info":"[abc] Database error"}}"#)
        let noHits = response(200, #"{"batchcomplete":""}"#)

        // When / Then
        #expect(providerError { try provider.parse(missing, cursor: .token([:])) }?.kind == "permanent")
        #expect(providerError { try provider.parse(internalError, cursor: .token([:])) }?.kind == "transient")
        let empty = try? provider.parse(noHits, cursor: .token([:]))
        #expect(empty?.results.isEmpty == true)
        #expect(empty?.continuation == .exhausted)
        #expect(providerError { try provider.parse(response(200, #"{"foo":1}"#), cursor: .token([:])) }?.kind == "transient")
        #expect(providerError { try provider.parse(response(403, "Please set a user-agent"), cursor: .token([:])) }?.kind == "permanent")
    }

    // MARK: - Requests

    @Test func buildsSearchRequestAndEchoesContinue() throws {
        // Given a continue token from a previous page and a query with size filters
        let query = SearchQuery(text: "red fox", minWidth: 1000, minHeight: 800)

        // When the first and the next pages are requested
        let first = try provider.request(for: provider.initialCursor, query: query)
        let next = try provider.request(for: .token(["gsroffset": "50", "continue": "gsroffset||"]), query: query)

        // Then the parameters are exactly the documented ones, plus the whole token
        let expected = [
            "action": "query", "format": "json", "generator": "search",
            "gsrsearch": "red fox filetype:bitmap filew:>999 fileh:>799", "gsrnamespace": "6", "gsrlimit": "50",
            "prop": "imageinfo", "iiprop": "url|size|mime|sha1|extmetadata",
            "iiextmetadatafilter": "Artist|ImageDescription|License|LicenseShortName|LicenseUrl|ObjectName", "maxlag": "5",
        ]
        #expect(queryItems(first.url) == expected)
        #expect(queryItems(next.url) == expected.merging(["gsroffset": "50", "continue": "gsroffset||"]) { $1 })
        #expect(first.url.absoluteString.hasPrefix("https://commons.wikimedia.org/w/api.php?action=query&format=json"))
        #expect(first.cacheKey == first.url.absoluteString)
        #expect(providerError { try provider.request(for: .page(2), query: query) }?.kind == "configuration")
    }

    @Test func endpointComesFromTheEnvironment() throws {
        // Given MIRROR_WIKIMEDIA_ENDPOINT, and an explicit override
        let environment = ["MIRROR_WIKIMEDIA_ENDPOINT": "http://localhost:9000/w/api.php"]

        // When the provider is made
        let fromEnvironment = try WikimediaCommonsProvider.make(environment: environment, endpointOverride: nil)
        let overridden = try WikimediaCommonsProvider.make(environment: environment, endpointOverride: URL(string: "https://wiki.test/api.php"))

        // Then the override wins over the variable, and a bad value is a configuration error
        #expect(fromEnvironment.endpoint.absoluteString == "http://localhost:9000/w/api.php")
        #expect(overridden.endpoint.absoluteString == "https://wiki.test/api.php")
        #expect(providerError { try WikimediaCommonsProvider.make(environment: ["MIRROR_WIKIMEDIA_ENDPOINT": "ftp://x"], endpointOverride: nil) }?.kind == "configuration")
    }
}
