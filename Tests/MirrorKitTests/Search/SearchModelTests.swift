import Foundation
@testable import MirrorCore
@testable import MirrorFetch
@testable import MirrorKit
@testable import MirrorSearch
@testable import MirrorStorage
import MirrorTransport
import Testing

@Suite("Search models, registry and secrets")
struct SearchModelTests {
    static let secret = "SECRET-KEY-123"

    /// Every provider built with the same key in every variable it reads.
    static func providersWithSecret() throws -> [any ImageProvider] {
        try ProviderRegistry.all.map { type in
            var environment: [String: String] = [:]
            for name in type.descriptor.requiredEnvironment + type.descriptor.optionalEnvironment { environment[name] = secret }
            let provider = try type.make(environment: environment, endpointOverride: nil)
            if let openverse = provider as? OpenverseProvider {
                return openverse.authenticated(with: .init(value: secret))
            }
            return provider
        }
    }

    @Test func keysNeverAppearInCacheKeysOrErrors() throws {
        // Given every provider holding "SECRET-KEY-123", and error bodies that echo the key back
        let providers = try Self.providersWithSecret()
        #expect(providers.count == 8)
        #expect(providers.filter { !($0 is WikimediaCommonsProvider) }.count == 7)
        let bodies = [
            "Invalid API key \(Self.secret)",
            #"{"message":"key \#(Self.secret) is not valid"}"#,
            #"{"error":{"code":"badvalue","info":"bad key \#(Self.secret)"}}"#,
            #"{"stat":"fail","code":100,"message":"Invalid API Key (\#(Self.secret))"}"#,
            #"{"errors":["token \#(Self.secret) expired"]}"#,
            String(repeating: "x", count: 190) + Self.secret,  // a key cut in half by truncation must not leak
        ]
        // (Wikimedia Commons holds no key, so a body that echoes some string is not a secret to it.)
        for provider in providers where !(provider is WikimediaCommonsProvider) {
            // When requests are built and errors produced for every status class
            let request = try provider.request(for: provider.initialCursor, query: SearchQuery(text: "cats"))
            #expect(!request.cacheKey.contains(Self.secret), "\(provider.name) cacheKey")
            #expect(!request.cacheKey.contains("SECRET"), "\(provider.name) cacheKey")
            var descriptions: [String] = []
            for status in [200, 400, 401, 403, 404, 429, 500, 503] {
                for body in bodies {
                    do {
                        _ = try provider.parse(response(status, body, headers: ["Retry-After": "1"]), cursor: provider.initialCursor)
                    } catch {
                        descriptions.append(error.description)
                        descriptions.append(error.message)
                    }
                }
            }
            descriptions.append(String(describing: providerError { try provider.request(for: .page(100_000), query: SearchQuery(text: "x")) }))
            if let openverse = provider as? OpenverseProvider {
                descriptions.append(String(describing: providerError { try openverse.parseToken(response(400, #"{"error":"invalid_client \#(Self.secret)"}"#)) }))
            }

            // Then the key appears nowhere, not even in part
            #expect(descriptions.count > 40)
            for description in descriptions {
                #expect(!description.contains(Self.secret), "\(provider.name): \(description)")
                #expect(!description.contains("SECRET-KEY"), "\(provider.name): \(description)")
            }
        }
    }

    @Test func missingKeysNameTheVariable() {
        // Given an empty environment
        for type in ProviderRegistry.all where !type.descriptor.requiredEnvironment.isEmpty {
            // When the provider is made
            let error = providerError { try type.make(environment: [:], endpointOverride: nil) }

            // Then the error names the first key variable
            #expect(error?.kind == "authentication(\(type.descriptor.requiredEnvironment[0]))")
            #expect(error?.description.contains(type.descriptor.requiredEnvironment[0]) == true)
        }
    }

    @Test func registryListsEveryProviderByName() throws {
        // Then the names are the documented ones, in order, with their key variables and endpoint variables
        #expect(ProviderRegistry.names == ["openverse", "wikimedia", "flickr", "giphy", "google", "pexels", "unsplash", "pixabay"])
        #expect(ProviderRegistry.defaultNames.allSatisfy { ProviderRegistry.type(named: $0)?.descriptor.requiredEnvironment.isEmpty == true })
        #expect(ProviderRegistry.type(named: "google")?.descriptor.requiredEnvironment == ["GOOGLE_API_KEY", "GOOGLE_CSE_ID"])
        #expect(ProviderRegistry.type(named: "unsplash")?.descriptor.requiredEnvironment == ["UNSPLASH_ACCESS_KEY"])
        #expect(ProviderRegistry.type(named: "OpenVerse")?.descriptor.endpointVariable == "MIRROR_OPENVERSE_ENDPOINT")
        #expect(providerError { try ProviderRegistry.make(named: "bing", environment: [:]) }?.kind == "configuration")

        // When a provider is made by name with its endpoint variable
        let provider = try ProviderRegistry.make(named: "pexels", environment: ["PEXELS_API_KEY": "k", "MIRROR_PEXELS_ENDPOINT": "http://127.0.0.1:1/v1/search"])

        // Then the instance reports the descriptor and the endpoint override
        #expect(provider.name == "pexels")
        #expect(provider.displayName == "Pexels")
        #expect(provider.requiredEnvironment == ["PEXELS_API_KEY"])
        #expect(provider.endpoint.absoluteString == "http://127.0.0.1:1/v1/search")
        #expect(provider.defaultEndpoint.absoluteString == "https://api.pexels.com/v1/search")
        #expect(try provider.request(for: provider.initialCursor, query: SearchQuery(text: "a")).url.host == "127.0.0.1")
        for type in ProviderRegistry.all {
            let instance = try type.make(environment: Dictionary(uniqueKeysWithValues: type.descriptor.requiredEnvironment.map { ($0, "k") }), endpointOverride: nil)
            #expect(instance.minimumRequestInterval >= .milliseconds(500), "\(instance.name)")
            #expect(instance.pageSize > 0)
        }
    }

    @Test(arguments: [
        ("by-nc-sa", nil, nil, "cc-by-nc-sa", nil),
        ("cc0", "1.0", nil, "cc0", "1.0"),
        ("pdm", nil, nil, "pdm", "1.0"),
        ("cc-by-sa-3.0-de", nil, nil, "cc-by-sa", "3.0"),
        ("CC BY-SA 4.0", nil, nil, "cc-by-sa", "4.0"),
        ("pd", nil, nil, "pdm", nil),
        ("Public domain", nil, nil, "pdm", nil),
        ("No restrictions", nil, nil, "no-known-copyright", nil),
        ("Attribution-NonCommercial-NoDerivs License", nil, nil, "cc-by-nc-nd", nil),
        ("Public Domain Dedication (CC0)", nil, nil, "cc0", "1.0"),
        ("GFDL", nil, nil, "gfdl", nil),
        ("Attribution", nil, nil, "attribution", nil),
        (nil, nil, "https://creativecommons.org/licenses/by-nd/2.5/", "cc-by-nd", "2.5"),
        ("by", "4.0", "https://creativecommons.org/licenses/by/4.0/", "cc-by", "4.0"),
    ] as [(String?, String?, String?, String, String?)])
    func licenceNormalisation(code: String?, version: String?, url: String?, expectedCode: String, expectedVersion: String?) throws {
        // When a licence is normalised
        let license = try #require(ImageResult.License.normalized(code: code, version: version, url: url))

        // Then code and version are in the common vocabulary
        #expect(license.code == expectedCode)
        #expect(license.version == expectedVersion)
        #expect(ImageResult.License.normalized(code: nil, version: nil, url: nil) == nil)
    }

    @Test func retryAfterAcceptsSecondsAndHTTPDates() throws {
        // Given a server clock and the three date forms
        let now = try #require(RetryAfter.httpDate("Sun, 06 Nov 1994 08:49:37 GMT"))

        // Then seconds, IMF-fixdate, RFC 850 and asctime all give the delay; junk and zero give none
        #expect(retryAfterHint("120", serverTime: now) == .seconds(120))
        #expect(retryAfterHint("Sun, 06 Nov 1994 08:50:07 GMT", serverTime: now) == .seconds(30))
        #expect(retryAfterHint("Sunday, 06-Nov-94 08:50:37 GMT", serverTime: now) == .seconds(60))
        #expect(retryAfterHint("Sun Nov  6 08:49:47 1994", serverTime: now) == .seconds(10))
        #expect(retryAfterHint("0", serverTime: now) == nil)
        #expect(retryAfterHint("soon", serverTime: now) == nil)
        #expect(retryAfterHint("Sun, 06 Nov 1994 08:40:00 GMT", serverTime: now) == nil)
        // and a response's own Date header is the reference
        let throttled = response(429, "{}", headers: ["Date": "Sun, 06 Nov 1994 08:49:37 GMT", "Retry-After": "Sun, 06 Nov 1994 08:49:42 GMT"])
        #expect(throttled.retryAfterHint == .seconds(5))
        #expect(ProviderError.rateLimited(retryAfter: .seconds(5), message: "m").description == "rate limited (retry after 5s): m")
    }

    /// What a provider makes of `value` in a 429 sent at `serverTime` (its `Date` header).
    private func retryAfterHint(_ value: String, serverTime: Date) -> Duration? {
        APIResponse(status: 429, headers: ["Retry-After": value, "Date": RetryAfter.format(serverTime)], body: Data()).retryAfterHint
    }

    @Test func resultsRoundTripThroughJSON() throws {
        // Given a result with every field
        let result = ImageResult(
            provider: "openverse", id: "1", title: "T", description: "D",
            pageURL: URL(string: "https://p.test/1"), imageURL: URL(string: "https://i.test/1.jpg")!,
            thumbnailURL: URL(string: "https://i.test/t.jpg"), width: 3, height: 4, byteSize: 5, mimeType: "image/jpeg",
            license: .init(code: "cc-by", version: "4.0", url: URL(string: "https://creativecommons.org/licenses/by/4.0/")),
            creator: .init(name: "C", url: URL(string: "https://c.test")), tags: ["a"]
        )

        // When it is encoded for the manifest and decoded again
        let data = try JSONEncoder().encode(result)
        let decoded = try JSONDecoder().decode(ImageResult.self, from: data)

        // Then nothing is lost, and URLs are plain strings in the JSON
        #expect(decoded == result)
        #expect(String(decoding: data, as: UTF8.self).contains(#""imageURL":"https:\/\/i.test\/1.jpg""#))
    }

    @Test func responsesLowercaseHeaderNamesAndPagesKeepTheirInvariant() {
        // Given mixed-case headers
        let response = APIResponse(status: 200, headers: ["Retry-After": "1", "X-Total": "2"], body: Data())

        // Then lookups are case-insensitive
        #expect(response.headers == ["retry-after": "1", "x-total": "2"])
        #expect(response.header("X-TOTAL") == "2")
        // and a page without a next cursor cannot claim more
        #expect(SearchPage(results: [], next: nil, continuation: .more).continuation == .exhausted)
        #expect(SearchPage(results: [], next: .page(2), continuation: .capped).next == nil)
    }

    @Test func everyFixtureIsCoveredByATest() throws {
        // Given the samples each provider suite reads (the Flickr XML cassette is deliberately out of scope)
        let covered: [String: [String]] = [
            "openverse": ["doc_example_image_detail_404.json", "doc_example_image_search_200.json", "doc_example_image_search_400.json", "search_images_last_page_2021_e2e.json", "search_images_q=cat_page1_2021_e2e.json"],
            "wikimedia_commons": ["allimages_imageinfo_globalusage_final_no_continue_openverse.json", "allimages_imageinfo_globalusage_page1_continue_prop_openverse.json", "allimages_imageinfo_globalusage_page2_continue_prop_openverse.json", "allimages_imageinfo_globalusage_page3_batchcomplete_openverse.json"],
            "flickr": ["cassette_photos_search_tags_sunset_xml.yml", "error_method_not_found_112.json", "photos_getSizes_flickrex.json", "photos_list_perpage2_flickrex.json", "photos_search_openverse_pretty.json", "reflection_getMethodInfo_photos_search.json"],
            "giphy": ["gif_by_id_giphy-js_mock.json", "gifs_search_giphy-js_mock.json", "gifs_search_limit1_giphy_get.json"],
            "google_cse": ["cse_image_search_q=google_num10_2023.json", "cse_image_search_q=red_num5_2017.json"],
            "pexels": ["search_q=nature_per_page1_2021_images-map.json"],
            "unsplash": ["cassette_unsplash_rb_photos.yml", "error_401_oauth_invalid_token.json", "error_404_couldnt_find_photo.json", "search_photos_q=dog_per_page3_2019_body.json"],
            "pixabay": ["search_q=nature_london_total3_2021_images-map.json", "search_total8737_totalHits500_per_page20_2022_flutter_image_gridview.json"],
        ]

        // Then the Fixtures folder holds exactly those, so a new sample cannot go untested (beside conformance/, the
        // standards' cases, whose every file ConformanceTests runs, and parquet/, every file of which
        // MirrorParquetTests reads)
        let folders = try FileManager.default.contentsOfDirectory(atPath: Fixture.root.path).filter { $0 != "conformance" && $0 != "parquet" }
        #expect(folders.sorted() == covered.keys.sorted())
        for (folder, files) in covered {
            #expect(try Fixture.files(in: folder) == files.sorted(), "\(folder)")
        }
    }
}
