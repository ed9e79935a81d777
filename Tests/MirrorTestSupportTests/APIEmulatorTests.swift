import Foundation
import MirrorTestSupport
import Testing

/// One GET on a fresh connection (some fault bodies close it), `target` relative or an absolute URL on the server.
private func get(_ emulator: APIEmulator, _ target: String, headers: [(String, String)] = []) throws -> RawResponse {
    var target = target
    if let components = URLComponents(string: target), components.scheme != nil {
        // percentEncodedPath keeps a trailing slash, which URL.path drops.
        target = components.percentEncodedPath + (components.percentEncodedQuery.map { "?" + $0 } ?? "")
    }
    let connection = try RawHTTPConnection(port: emulator.server.port)
    defer { connection.close() }
    return connection.request(target, headers: headers + [("Connection", "close")])
}

private func object(_ response: RawResponse, sourceLocation: SourceLocation = #_sourceLocation) throws -> [String: Any] {
    let value = try JSONSerialization.jsonObject(with: Data(response.body))
    return try #require(value as? [String: Any], sourceLocation: sourceLocation)
}

private func text(_ response: RawResponse) -> String {
    String(decoding: response.body, as: UTF8.self)
}

/// Width and height from a PNG's IHDR, or nil when the bytes are not a PNG.
private func pngDimensions(_ bytes: [UInt8]) -> (Int, Int)? {
    guard bytes.count >= 24, bytes.prefix(8) == [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A], Array(bytes[12..<16]) == Array("IHDR".utf8) else {
        return nil
    }
    let be = { (offset: Int) in bytes[offset..<offset + 4].reduce(0) { $0 << 8 | Int($1) } }
    return (be(16), be(20))
}

private func int(_ value: Any?) -> Int? { (value as? NSNumber)?.intValue }

/// `<endpoint path>?<query>` for `provider`, values percent-encoded.
private func target(_ provider: APIEmulator.Provider, _ items: [(String, String)]) -> String {
    var allowed = CharacterSet.urlQueryAllowed
    allowed.remove(charactersIn: "&=+?#")
    let query = items.map { "\($0.0)=\($0.1.addingPercentEncoding(withAllowedCharacters: allowed)!)" }.joined(separator: "&")
    return provider.endpointPath + (query.isEmpty ? "" : "?" + query)
}

/// How mirror's WikimediaCommonsProvider asks for a batch.
private func wikimediaTarget(_ query: String, limit: Int, offset: Int? = nil) -> String {
    var items = [
        ("action", "query"), ("format", "json"), ("generator", "search"), ("gsrsearch", query + " filetype:bitmap"),
        ("gsrnamespace", "6"), ("gsrlimit", String(limit)), ("prop", "imageinfo"), ("iiprop", "url|size|mime|sha1|extmetadata"),
        ("iiextmetadatafilter", "Artist|ImageDescription|License|LicenseShortName|LicenseUrl|ObjectName"), ("maxlag", "5"),
    ]
    if let offset { items += [("continue", "gsroffset||"), ("gsroffset", String(offset))] }
    return target(.wikimedia, items)
}

private func flickrTarget(_ keys: APIEmulator.Keys, text: String, page: Int, perPage: Int = 500, key: String? = nil, jsonCallback: Bool = false) -> String {
    var items = [
        ("method", "flickr.photos.search"), ("api_key", key ?? keys.flickr), ("format", "json"), ("text", text), ("media", "photos"),
        ("safe_search", "1"), ("content_type", "1"), ("sort", "relevance"),
        ("extras", "url_o,url_l,url_c,url_z,url_m,o_dims,license,owner_name,description,tags,original_format"),
        ("per_page", String(perPage)), ("page", String(page)),
    ]
    if !jsonCallback { items.insert(("nojsoncallback", "1"), at: 3) }
    return target(.flickr, items)
}

@Suite("APIEmulator", .timeLimit(.minutes(2)))
struct APIEmulatorTests {
    // MARK: Environment

    @Test func environmentNamesEveryEndpointAndKey() throws {
        let emulator = try APIEmulator.start()
        defer { emulator.stop() }
        let environment = emulator.environment

        #expect(environment.count == 15)
        for provider in APIEmulator.Provider.allCases {
            #expect(environment[provider.endpointVariable] == emulator.endpoint(for: provider).absoluteString)
            #expect(emulator.endpoint(for: provider.rawValue) == emulator.endpoint(for: provider))
        }
        #expect(environment["MIRROR_OPENVERSE_ENDPOINT"] == "http://127.0.0.1:\(emulator.server.port)/openverse/v1/images/")
        #expect(environment["MIRROR_WIKIMEDIA_ENDPOINT"] == "http://127.0.0.1:\(emulator.server.port)/wikimedia/w/api.php")
        let keys = emulator.settings.keys
        #expect(environment["FLICKR_API_KEY"] == keys.flickr && environment["GIPHY_API_KEY"] == keys.giphy)
        #expect(environment["GOOGLE_API_KEY"] == keys.google && environment["GOOGLE_CSE_ID"] == keys.googleEngineID)
        #expect(environment["PEXELS_API_KEY"] == keys.pexels && environment["UNSPLASH_ACCESS_KEY"] == keys.unsplash)
        #expect(environment["PIXABAY_API_KEY"] == keys.pixabay)
    }

    @Test func idsRoundTripForEveryProvider() throws {
        let emulator = try APIEmulator.start()
        defer { emulator.stop() }
        for provider in APIEmulator.Provider.allCases {
            for index in [0, 1, 7, 399, 9_999] {
                let image = emulator.image(provider: provider, query: "Kittens", index: index)
                #expect(emulator.image(provider: provider, id: image.id) == image, "\(provider) \(index)")
                #expect(image.path == "/images/\(provider.rawValue)/\(image.id).png")
            }
            #expect(emulator.image(provider: provider, id: "nonsense") == nil)
        }
        // Different queries give different ids; the same query in another case gives the same ones.
        #expect(emulator.image(provider: .openverse, query: "cats", index: 0).id != emulator.image(provider: .openverse, query: "dogs", index: 0).id)
        #expect(emulator.image(provider: .openverse, query: " Cats ", index: 0).id == emulator.image(provider: .openverse, query: "cats", index: 0).id)
    }

    // MARK: Openverse

    @Test func openversePagesAndCaps() throws {
        let emulator = try APIEmulator.start()
        defer { emulator.stop() }

        let first = try get(emulator, target(.openverse, [("q", "kittens"), ("page", "1"), ("page_size", "20")]))
        #expect(first.status == 200 && first.header("Content-Type") == "application/json")
        let page = try object(first)
        #expect(int(page["result_count"]) == 10_000 && int(page["page_count"]) == 500)
        #expect(int(page["page_size"]) == 20 && int(page["page"]) == 1)
        let results = try #require(page["results"] as? [[String: Any]])
        #expect(results.count == 20)
        let item = results[0]
        #expect(item["id"] is String && int(item["width"]) != nil && int(item["height"]) != nil && int(item["filesize"]) != nil)
        #expect((item["url"] as? String)?.hasPrefix("http://127.0.0.1:\(emulator.server.port)/images/openverse/") == true)
        #expect(item["filetype"] as? String == "png" && item["license"] as? String == "by")

        // Page 20 is the last one served; 21 is a validation error; page_size above 20 is 401 anonymously.
        let last = try object(try get(emulator, target(.openverse, [("q", "kittens"), ("page", "20")])))
        #expect((last["results"] as? [Any])?.count == 20)
        let tooDeep = try get(emulator, target(.openverse, [("q", "kittens"), ("page", "21")]))
        #expect(tooDeep.status == 400)
        #expect(((try object(tooDeep)["detail"] as? [String: Any])?["page"] as? [String])?.first == "Ensure this value is less than or equal to 20.")
        let tooBig = try get(emulator, target(.openverse, [("q", "kittens"), ("page_size", "21")]))
        #expect(tooBig.status == 401)
        #expect(try object(tooBig)["detail"] as? String == "Ensure this value is less than or equal to 20.")

        // All 400 reachable results are distinct.
        var ids = Set<String>()
        for number in 1...20 {
            let body = try object(try get(emulator, target(.openverse, [("q", "kittens"), ("page", String(number)), ("page_size", "20")])))
            for result in body["results"] as? [[String: Any]] ?? [] { ids.insert(result["id"] as? String ?? "") }
        }
        #expect(ids.count == 400)
        #expect(emulator.apiRequestCount(provider: .openverse) == 24)
        #expect(emulator.apiRequestCount(provider: "openverse") == 24)
    }

    @Test func openverseShortCorpusLowersPageCountAndEmptySearchIsZero() throws {
        let emulator = try APIEmulator.start()
        defer { emulator.stop() }
        emulator.configure { $0.corpus[.openverse] = .init(count: 30, perQuery: ["nothing": 0]) }

        let second = try object(try get(emulator, target(.openverse, [("q", "kittens"), ("page", "2")])))
        #expect(int(second["result_count"]) == 30 && int(second["page_count"]) == 2)
        #expect((second["results"] as? [Any])?.count == 10)
        let empty = try object(try get(emulator, target(.openverse, [("q", "nothing")])))
        #expect(int(empty["result_count"]) == 0 && int(empty["page_count"]) == 0 && (empty["results"] as? [Any])?.isEmpty == true)
    }

    @Test func openverseBearerTokenLiftsThePageSizeCap() throws {
        var settings = APIEmulator.Settings()
        settings.keys.openverseToken = "secret-token"
        let emulator = try APIEmulator.start(settings: settings)
        defer { emulator.stop() }

        let authed = try get(emulator, target(.openverse, [("q", "cats"), ("page_size", "500")]), headers: [("Authorization", "Bearer secret-token")])
        #expect(authed.status == 200)
        #expect((try object(authed)["results"] as? [Any])?.count == 500)
        let wrong = try get(emulator, target(.openverse, [("q", "cats")]), headers: [("Authorization", "Bearer nope")])
        #expect(wrong.status == 401)
    }

    // MARK: Images

    @Test func imagesAreValidPNGsWithTheAdvertisedDimensionsAndSize() throws {
        let emulator = try APIEmulator.start()
        defer { emulator.stop() }
        let results = try object(try get(emulator, target(.openverse, [("q", "kittens")])))["results"] as? [[String: Any]] ?? []
        #expect(results.count == 20)

        for result in results {
            let image = try get(emulator, try #require(result["url"] as? String))
            #expect(image.status == 200 && image.header("Content-Type") == "image/png")
            let (width, height) = try #require(pngDimensions(image.body))
            #expect(width == int(result["width"]) && height == int(result["height"]))
            #expect(image.body.count == int(result["filesize"]))
            #expect((2_000...20_000).contains(image.body.count))
        }
        // Deterministic bytes: the same URL twice, and the model's own data().
        let url = try #require(results[3]["url"] as? String)
        let id = try #require(results[3]["id"] as? String)
        let model = try #require(emulator.image(provider: .openverse, id: id))
        let once = try get(emulator, url).body
        let twice = try get(emulator, url).body
        #expect(once == twice)
        #expect(try get(emulator, url).body == Array(model.data()))
        #expect(emulator.imageRequestCount(path: model.path) == 4)
        #expect(emulator.imageRequestCount(provider: .openverse, id: model.id) == 4)
        #expect(emulator.imagesRequestedMoreThanOnce == [model.path])
        #expect(emulator.totalImageRequests == 23)

        // Thumbnails are served but not counted as image requests.
        let thumbnail = try get(emulator, try #require(results[0]["thumbnail"] as? String))
        #expect(thumbnail.status == 200 && pngDimensions(thumbnail.body) != nil)
        #expect(emulator.totalImageRequests == 23)

        emulator.resetCounters()
        #expect(emulator.totalImageRequests == 0 && emulator.imagesRequestedMoreThanOnce.isEmpty && emulator.totalAPIRequests == 0)
        #expect(try get(emulator, "/images/openverse/not-an-id.png").status == 404)
    }

    @Test func imageSizeRangeIsConfigurable() throws {
        var settings = APIEmulator.Settings()
        settings.imageBytes = 50_000...60_000
        let emulator = try APIEmulator.start(settings: settings)
        defer { emulator.stop() }
        for index in 0..<10 {
            let image = emulator.image(provider: .pexels, query: "big", index: index)
            let body = try get(emulator, image.url.absoluteString).body
            #expect(body.count == image.byteCount && (50_000...60_000).contains(body.count))
            #expect(pngDimensions(body).map { $0 == (image.width, image.height) } == true)
        }
    }

    // MARK: Wikimedia

    @Test func wikimediaContinuesUntilTheCorpusEndsWithPagesKeyedByID() throws {
        let emulator = try APIEmulator.start()
        defer { emulator.stop() }
        emulator.configure { $0.corpus[.wikimedia] = .init(count: 25) }

        var offset: Int?
        var indexes: [Int] = []
        var batches = 0
        repeat {
            let response = try get(emulator, wikimediaTarget("kittens", limit: 10, offset: offset))
            #expect(response.status == 200)
            let body = try object(response)
            #expect(body["batchcomplete"] as? String == "")
            let pages = try #require((body["query"] as? [String: Any])?["pages"] as? [String: [String: Any]])
            for (key, page) in pages {
                #expect(int(page["pageid"]).map(String.init) == key)
                #expect(int(page["ns"]) == 6 && (page["title"] as? String)?.hasPrefix("File:") == true)
                let info = try #require((page["imageinfo"] as? [[String: Any]])?.first)
                let bytes = try get(emulator, try #require(info["url"] as? String)).body
                #expect(pngDimensions(bytes).map { $0 == (int(info["width"]) ?? -1, int(info["height"]) ?? -1) } == true)
                #expect(int(info["size"]) == bytes.count && info["mime"] as? String == "image/png")
                #expect(info["sha1"] as? String == Insecure.sha1(bytes))
                let metadata = try #require(info["extmetadata"] as? [String: [String: Any]])
                #expect(Set(metadata.keys) == ["Artist", "ImageDescription", "License", "LicenseShortName", "LicenseUrl", "ObjectName"])
                indexes.append(try #require(int(page["index"])))
            }
            // The page-id order of a batch is not its rank.
            let byKey = pages.keys.sorted().map { int(pages[$0]?["index"]) ?? 0 }
            #expect(byKey != byKey.sorted())
            if let next = body["continue"] as? [String: Any] {
                #expect(next["continue"] as? String == "gsroffset||")
                offset = int(next["gsroffset"])
                #expect(offset != nil)
            } else {
                offset = nil
            }
            batches += 1
        } while offset != nil && batches < 10
        #expect(batches == 3)
        #expect(indexes.sorted() == Array(1...25))
        #expect(emulator.apiRequestCount(provider: .wikimedia) == 3)

        // Past the end: no query at all. Without gsrsearch: an error in a 200 body.
        let past = try object(try get(emulator, wikimediaTarget("kittens", limit: 10, offset: 30)))
        #expect(past["query"] == nil && past["continue"] == nil && past["batchcomplete"] as? String == "")
        let missing = try get(emulator, target(.wikimedia, [("action", "query"), ("format", "json"), ("generator", "search")]))
        #expect(missing.status == 200)
        #expect((try object(missing)["error"] as? [String: Any])?["code"] as? String == "missingparam")
    }

    @Test func wikimediaOverlapSharesBytesWithOpenverse() throws {
        let emulator = try APIEmulator.start()
        defer { emulator.stop() }
        emulator.configure {
            $0.corpus[.wikimedia] = .init(count: 10)
            $0.wikimediaOverlap = 3
        }
        let openverse = try object(try get(emulator, target(.openverse, [("q", "kittens")])))["results"] as? [[String: Any]] ?? []
        let pages = (try object(try get(emulator, wikimediaTarget("kittens", limit: 10)))["query"] as? [String: Any])?["pages"] as? [String: [String: Any]] ?? [:]
        let wikimedia = pages.values.sorted { int($0["index"]) ?? 0 < int($1["index"]) ?? 0 }
        #expect(wikimedia.count == 10)

        func wikimediaURL(_ index: Int) -> String { ((wikimedia[index]["imageinfo"] as? [[String: Any]])?.first?["url"] as? String) ?? "" }
        for index in 0..<4 {
            let a = try get(emulator, openverse[index]["url"] as? String ?? "").body
            let b = try get(emulator, wikimediaURL(index)).body
            #expect(openverse[index]["url"] as? String != wikimediaURL(index))
            #expect((a == b) == (index < 3), "result \(index)")
        }
        let pairs = emulator.overlappingImages(query: "kittens")
        #expect(pairs.count == 3 && pairs.allSatisfy { $0.wikimedia.data() == $0.openverse.data() && $0.wikimedia.url != $0.openverse.url })
    }

    // MARK: Flickr

    @Test func flickrShapeStringTotalAndRepeatingPagesPastTheCap() throws {
        let emulator = try APIEmulator.start()
        defer { emulator.stop() }
        let keys = emulator.settings.keys

        let response = try get(emulator, flickrTarget(keys, text: "sunset", page: 1))
        #expect(response.status == 200)
        let body = try object(response)
        #expect(body["stat"] as? String == "ok")
        let photos = try #require(body["photos"] as? [String: Any])
        #expect(photos["total"] as? String == "10000")
        #expect(int(photos["pages"]) == 20 && int(photos["perpage"]) == 500 && int(photos["page"]) == 1)
        let list = try #require(photos["photo"] as? [[String: Any]])
        #expect(list.count == 500)
        let photo = list[0]
        #expect(photo["id"] is String && photo["secret"] is String && photo["server"] is String && photo["license"] is String)
        #expect(photo["o_width"] is String && int(photo["width_o"]) != nil)
        let bytes = try get(emulator, try #require(photo["url_o"] as? String)).body
        #expect(pngDimensions(bytes).map { $0 == (int(photo["width_o"]) ?? 0, int(photo["height_o"]) ?? 0) } == true)
        #expect(String(int(photo["width_o"]) ?? 0) == photo["o_width"] as? String)

        // 4,000 results are reachable: page 8 of 500 is the last one; pages 9 and 30 repeat it.
        let ids = { (page: Int) throws -> [String] in
            let body = try object(try get(emulator, flickrTarget(keys, text: "sunset", page: page)))
            return ((body["photos"] as? [String: Any])?["photo"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? String }
        }
        let eighth = try ids(8)
        #expect(eighth.count == 500)
        let ninth = try ids(9)
        let thirtieth = try ids(30)
        #expect(ninth == eighth && thirtieth == eighth)
        #expect(Set(try ids(7)).isDisjoint(with: eighth))
    }

    @Test func flickrRejectsAWrongKeyInsideA200AndWrapsJSONP() throws {
        let emulator = try APIEmulator.start()
        defer { emulator.stop() }
        let keys = emulator.settings.keys

        let wrong = try get(emulator, flickrTarget(keys, text: "sunset", page: 1, key: "bogus"))
        #expect(wrong.status == 200)
        let body = try object(wrong)
        #expect(body["stat"] as? String == "fail" && int(body["code"]) == 100)
        #expect((body["message"] as? String)?.hasPrefix("Invalid API Key") == true)

        let jsonp = text(try get(emulator, flickrTarget(keys, text: "sunset", page: 1, jsonCallback: true)))
        #expect(jsonp.hasPrefix("jsonFlickrApi({") && jsonp.hasSuffix("})"))
        let unknown = try object(try get(emulator, target(.flickr, [("method", "flickr.nope"), ("api_key", keys.flickr), ("format", "json"), ("nojsoncallback", "1")])))
        #expect(int(unknown["code"]) == 112)
    }

    // MARK: Giphy

    @Test func giphyStringDimensionsOffsetCapAndAuth() throws {
        let emulator = try APIEmulator.start()
        defer { emulator.stop() }
        let key = emulator.settings.keys.giphy

        let body = try object(try get(emulator, target(.giphy, [("api_key", key), ("q", "cat"), ("limit", "50"), ("offset", "100"), ("rating", "g")])))
        let data = try #require(body["data"] as? [[String: Any]])
        #expect(data.count == 50)
        let pagination = try #require(body["pagination"] as? [String: Any])
        #expect(int(pagination["total_count"]) == 10_000 && int(pagination["count"]) == 50 && int(pagination["offset"]) == 100)
        #expect(int((body["meta"] as? [String: Any])?["status"]) == 200)
        let original = try #require((data[0]["images"] as? [String: Any])?["original"] as? [String: Any])
        let width = try #require(original["width"] as? String)
        let height = try #require(original["height"] as? String)
        let bytes = try get(emulator, try #require(original["url"] as? String)).body
        #expect(pngDimensions(bytes).map { "\($0.0)" == width && "\($0.1)" == height } == true)
        #expect(original["size"] as? String == String(bytes.count))

        let last = try object(try get(emulator, target(.giphy, [("api_key", key), ("q", "cat"), ("limit", "50"), ("offset", "4999")])))
        #expect((last["data"] as? [Any])?.count == 50)
        let beyond = try object(try get(emulator, target(.giphy, [("api_key", key), ("q", "cat"), ("offset", "5000")])))
        #expect((beyond["data"] as? [Any])?.isEmpty == true)
        let zero = beyond["pagination"] as? [String: Any]
        #expect(int(zero?["total_count"]) == 0 && int(zero?["count"]) == 0 && int(zero?["offset"]) == 0)

        let wrong = try get(emulator, target(.giphy, [("api_key", "bogus"), ("q", "cat")]))
        #expect(wrong.status == 401)
        let meta = try object(wrong)["meta"] as? [String: Any]
        #expect(int(meta?["status"]) == 401 && meta?["msg"] as? String == "Unauthorized")
    }

    // MARK: Google

    @Test func googleItemsCapsAndErrorEnvelopes() throws {
        let emulator = try APIEmulator.start()
        defer { emulator.stop() }
        emulator.configure { $0.corpus[.google] = .init(count: 100, reportedTotal: 1_230_000_000, perQuery: ["rare": 3, "none": 0]) }
        let keys = emulator.settings.keys
        func search(_ q: String, start: Int, num: Int, key: String? = nil, cx: String? = nil) throws -> RawResponse {
            var items = [("cx", cx ?? keys.googleEngineID), ("q", q), ("searchType", "image"), ("start", String(start)), ("num", String(num)), ("safe", "active")]
            if let key = key ?? Optional(keys.google), !key.isEmpty { items.insert(("key", key), at: 0) }
            return try get(emulator, target(.google, items))
        }

        let first = try object(try search("red", start: 1, num: 10))
        #expect(first["kind"] as? String == "customsearch#search")
        #expect((first["searchInformation"] as? [String: Any])?["totalResults"] as? String == "1230000000")
        let items = try #require(first["items"] as? [[String: Any]])
        #expect(items.count == 10)
        let image = try #require(items[0]["image"] as? [String: Any])
        let bytes = try get(emulator, try #require(items[0]["link"] as? String)).body
        #expect(pngDimensions(bytes).map { $0 == (int(image["width"]) ?? 0, int(image["height"]) ?? 0) } == true)
        #expect(int(image["byteSize"]) == bytes.count)
        #expect(items[3]["mime"] as? String == "image/")
        let next = ((first["queries"] as? [String: Any])?["nextPage"] as? [[String: Any]])?.first
        #expect(int(next?["startIndex"]) == 11)

        // Results up to the 100th: start=91&num=10 is the last page; beyond it, 400.
        let lastPage = try object(try search("red", start: 91, num: 10))
        #expect((lastPage["items"] as? [Any])?.count == 10)
        #expect((lastPage["queries"] as? [String: Any])?["nextPage"] == nil)
        #expect(int(((try object(try search("red", start: 81, num: 10))["queries"] as? [String: Any])?["nextPage"] as? [[String: Any]])?.first?["startIndex"]) == 91)
        let over = try search("red", start: 92, num: 10)
        #expect(over.status == 400)
        #expect((try object(over)["error"] as? [String: Any])?["status"] as? String == "INVALID_ARGUMENT")
        // The strict reading, start + num ≤ 100, for the fallback tests.
        emulator.configure { $0.googleStrictLastPage = true }
        #expect(try search("red", start: 91, num: 10).status == 400)
        #expect(try search("red", start: 91, num: 9).status == 200)
        emulator.configure { $0.googleStrictLastPage = false }
        #expect(try search("red", start: 1, num: 11).status == 400)

        // items is absent when empty; the last page of a short corpus has no nextPage.
        let none = try object(try search("none", start: 1, num: 10))
        #expect(none["items"] == nil && none["kind"] as? String == "customsearch#search")
        let rare = try object(try search("rare", start: 1, num: 10))
        #expect((rare["items"] as? [Any])?.count == 3 && (rare["queries"] as? [String: Any])?["nextPage"] == nil)

        // Auth: missing key 403, wrong key 400 API_KEY_INVALID, wrong cx 400.
        #expect(try search("red", start: 1, num: 10, key: "").status == 403)
        let wrongKey = try search("red", start: 1, num: 10, key: "bogus")
        #expect(wrongKey.status == 400)
        let error = try object(wrongKey)["error"] as? [String: Any]
        #expect(((error?["errors"] as? [[String: Any]])?.first?["reason"] as? String) == "keyInvalid")
        #expect(((error?["details"] as? [[String: Any]])?.first?["reason"] as? String) == "API_KEY_INVALID")
        #expect(try search("red", start: 1, num: 10, cx: "other").status == 400)
    }

    // MARK: Pexels

    @Test func pexelsRawAuthorizationHeaderAndNextPage() throws {
        let emulator = try APIEmulator.start()
        defer { emulator.stop() }
        emulator.configure { $0.corpus[.pexels] = .init(count: 100) }
        let key = emulator.settings.keys.pexels

        let response = try get(emulator, target(.pexels, [("query", "nature"), ("page", "1"), ("per_page", "80")]), headers: [("Authorization", key)])
        #expect(response.status == 200)
        let body = try object(response)
        #expect(int(body["total_results"]) == 100 && int(body["per_page"]) == 80 && body["next_page"] is String && body["prev_page"] == nil)
        let photo = try #require((body["photos"] as? [[String: Any]])?.first)
        #expect(int(photo["id"]) != nil && !(photo["id"] is String))
        let bytes = try get(emulator, try #require((photo["src"] as? [String: Any])?["original"] as? String)).body
        #expect(pngDimensions(bytes).map { $0 == (int(photo["width"]) ?? 0, int(photo["height"]) ?? 0) } == true)

        let last = try object(try get(emulator, target(.pexels, [("query", "nature"), ("page", "2"), ("per_page", "80")]), headers: [("Authorization", key)]))
        #expect((last["photos"] as? [Any])?.count == 20 && last["next_page"] == nil && last["prev_page"] is String)

        #expect(try get(emulator, target(.pexels, [("query", "nature")]), headers: [("Authorization", "Bearer " + key)]).status == 401)
        #expect(try get(emulator, target(.pexels, [("query", "nature"), ("api_key", key)])).status == 401)
    }

    // MARK: Unsplash

    @Test func unsplashClientIDTotalPagesAndPageCap() throws {
        let emulator = try APIEmulator.start()
        defer { emulator.stop() }
        let key = emulator.settings.keys.unsplash
        let query = [("query", "dog"), ("page", "1"), ("per_page", "30"), ("content_filter", "high")]

        let response = try get(emulator, target(.unsplash, query), headers: [("Authorization", "Client-ID \(key)"), ("Accept-Version", "v1")])
        #expect(response.status == 200 && response.header("X-Total") == "10000" && response.header("Link")?.contains("rel=\"next\"") == true)
        let body = try object(response)
        #expect(int(body["total"]) == 10_000 && int(body["total_pages"]) == 334)
        let photo = try #require((body["results"] as? [[String: Any]])?.first)
        let full = try #require((photo["urls"] as? [String: Any])?["full"] as? String)
        #expect(full.contains("fm=png"))
        let bytes = try get(emulator, full).body
        #expect(pngDimensions(bytes).map { $0 == (int(photo["width"]) ?? 0, int(photo["height"]) ?? 0) } == true)

        #expect(try get(emulator, target(.unsplash, query + [("client_id", key)])).status == 200)
        let raw = try get(emulator, target(.unsplash, query), headers: [("Authorization", key)])
        #expect(raw.status == 401)
        #expect(try object(raw)["errors"] as? [String] == ["OAuth error: The access token is invalid"])

        let deep = try object(try get(emulator, target(.unsplash, [("query", "dog"), ("page", "201"), ("per_page", "30")]), headers: [("Authorization", "Client-ID \(key)")]))
        #expect(int(deep["total"]) == 0 && int(deep["total_pages"]) == 0 && (deep["results"] as? [Any])?.isEmpty == true)
    }

    // MARK: Pixabay

    @Test func pixabayTotalHitsCapAndPlainTextErrors() throws {
        let emulator = try APIEmulator.start()
        defer { emulator.stop() }
        let key = emulator.settings.keys.pixabay
        func search(page: Int, perPage: Int = 200, key: String? = nil) throws -> RawResponse {
            try get(emulator, target(.pixabay, [("key", key ?? emulator.settings.keys.pixabay), ("q", "flowers"), ("image_type", "photo"), ("safesearch", "true"), ("page", String(page)), ("per_page", String(perPage))]))
        }

        let body = try object(try search(page: 1))
        #expect(int(body["total"]) == 8_737 && int(body["totalHits"]) == 500)
        let hit = try #require((body["hits"] as? [[String: Any]])?.first)
        #expect(int(hit["id"]) != nil && !(hit["id"] is String))
        let bytes = try get(emulator, try #require(hit["largeImageURL"] as? String)).body
        #expect(pngDimensions(bytes).map { $0 == (int(hit["imageWidth"]) ?? 0, int(hit["imageHeight"]) ?? 0) } == true)
        #expect(int(hit["imageSize"]) == bytes.count)

        #expect(((try object(try search(page: 3)))["hits"] as? [Any])?.count == 100)
        let beyond = try search(page: 4)
        #expect(beyond.status == 400 && text(beyond) == "[ERROR 400] \"page\" is out of valid range.")
        #expect(try search(page: 1, perPage: 2).status == 400)
        let wrong = try search(page: 1, key: "bogus")
        #expect(wrong.status == 400 && text(wrong).contains("key") && wrong.header("Content-Type")?.hasPrefix("text/plain") == true)
        _ = key
    }

    // MARK: API faults

    @Test func failNextRateLimitAndMalformedJSONAreOneShot() throws {
        let emulator = try APIEmulator.start()
        defer { emulator.stop() }
        let page = target(.openverse, [("q", "kittens")])

        emulator.failNext(2, provider: .openverse)
        #expect(emulator.pendingFaults(provider: .openverse) == 2)
        #expect(try get(emulator, page).status == 500)
        let second = try get(emulator, page)
        let detail = try object(second)["detail"] as? String
        #expect(second.status == 500 && detail == "An internal server error occurred.")
        #expect(try get(emulator, page).status == 200)

        emulator.rateLimitNext(provider: .openverse, retryAfter: 7)
        let limited = try get(emulator, page)
        #expect(limited.status == 429 && limited.header("Retry-After") == "7")
        #expect(try get(emulator, page).status == 200)

        emulator.malformedJSONNext(provider: .openverse)
        let broken = try get(emulator, page)
        #expect(broken.status == 200 && broken.header("Content-Type") == "application/json")
        #expect((try? JSONSerialization.jsonObject(with: Data(broken.body))) == nil)
        #expect(try get(emulator, page).status == 200)
        #expect(emulator.apiRequestCount(provider: .openverse) == 7)
        #expect(emulator.pendingFaults(provider: .openverse) == 0)

        // Faults are per provider and queued in order.
        emulator.inject(.status(503), provider: .pixabay)
        emulator.rateLimitNext(provider: .pixabay, retryAfter: 2)
        #expect(try get(emulator, page).status == 200)
        let pixabay = target(.pixabay, [("key", emulator.settings.keys.pixabay), ("q", "x")])
        #expect(try get(emulator, pixabay).status == 503)
        let pixabayLimited = try get(emulator, pixabay)
        #expect(pixabayLimited.status == 429 && pixabayLimited.header("Retry-After") == "2" && text(pixabayLimited).hasPrefix("[ERROR 429]"))
        emulator.failNext(3, provider: .giphy)
        emulator.clearFaults()
        #expect(emulator.pendingFaults(provider: .giphy) == 0)
    }

    @Test func errorsInsideA200Body() throws {
        let emulator = try APIEmulator.start()
        defer { emulator.stop() }
        let keys = emulator.settings.keys

        emulator.errorInBodyNext(provider: .wikimedia, retryAfter: 2)
        let lagged = try get(emulator, wikimediaTarget("kittens", limit: 10))
        #expect(lagged.status == 200 && lagged.header("Retry-After") == "2" && lagged.header("X-Database-Lag") == "2")
        let error = try object(lagged)["error"] as? [String: Any]
        #expect(error?["code"] as? String == "maxlag" && int(error?["lag"]) == 2)
        #expect(try object(try get(emulator, wikimediaTarget("kittens", limit: 10)))["query"] != nil)

        emulator.errorInBodyNext(provider: .flickr)
        let failed = try get(emulator, flickrTarget(keys, text: "x", page: 1))
        #expect(failed.status == 200)
        let flickr = try object(failed)
        #expect(flickr["stat"] as? String == "fail" && int(flickr["code"]) == 105)

        emulator.errorInBodyNext(provider: .giphy)
        let synthetic = try object(try get(emulator, target(.giphy, [("api_key", keys.giphy), ("q", "cat")])))
        #expect(synthetic["pagination"] == nil && (synthetic["data"] as? [Any])?.isEmpty == true)
        #expect((synthetic["meta"] as? [String: Any])?["response_id"] as? String == "")
    }

    @Test func aRejectedKeyDoesNotConsumeAFault() throws {
        let emulator = try APIEmulator.start()
        defer { emulator.stop() }
        emulator.failNext(1, provider: .giphy)
        #expect(try get(emulator, target(.giphy, [("api_key", "bogus"), ("q", "cat")])).status == 401)
        #expect(emulator.pendingFaults(provider: .giphy) == 1)
        #expect(try get(emulator, target(.giphy, [("api_key", emulator.settings.keys.giphy), ("q", "cat")])).status == 500)
        #expect(emulator.apiRequestCount(provider: .giphy) == 2)
        #expect(emulator.apiRequests(provider: .giphy).map { $0.query["api_key"] } == ["bogus", emulator.settings.keys.giphy])
    }

    // MARK: Image faults

    @Test func imageFaultsAreDeterministicByID() throws {
        let emulator = try APIEmulator.start()
        defer { emulator.stop() }
        emulator.configure { $0.imageFaults[.openverse] = .init(notFound: 0.1, htmlAsImage: 0.1, truncated: 0.1, serverErrorOnce: 0.1) }

        let images = (0..<60).map { emulator.image(provider: .openverse, query: "kittens", index: $0) }
        var seen: [APIEmulator.ImageFault: Int] = [:]
        for image in images {
            let fault = emulator.imageFault(provider: .openverse, id: image.id)
            let response = try get(emulator, image.url.absoluteString)
            switch fault {
            case .notFound?:
                #expect(response.status == 404)
            case .htmlAsImage?:
                #expect(response.status == 200 && response.header("Content-Type") == "image/png")
                #expect(response.body == Array(TestImages.htmlErrorPage))
            case .truncated?:
                #expect(response.status == 200 && response.end == .closed)
                #expect(response.body.count < image.byteCount && response.header("Content-Length") == String(image.byteCount))
            case .serverErrorOnce?:
                #expect(response.status == 500)
                let again = try get(emulator, image.url.absoluteString)
                #expect(again.status == 200 && again.body == Array(image.data()))
                #expect(emulator.imageRequestCount(path: image.path) == 2)
            case nil:
                #expect(response.status == 200 && response.body == Array(image.data()))
            }
            if let fault { seen[fault, default: 0] += 1 }
        }
        // About 10% each over 60 images: every kind shows up, and the clean majority stays clean.
        #expect(Set(seen.keys) == Set(APIEmulator.ImageFault.allCases))
        #expect(seen.values.reduce(0, +) < 45)
        // Other providers are unaffected.
        let pexels = emulator.image(provider: .pexels, query: "kittens", index: 0)
        #expect(emulator.imageFault(provider: .pexels, id: pexels.id) == nil)
    }

    // MARK: Latency

    @Test func apiLatencyIsSeparateFromImageLatency() throws {
        let emulator = try APIEmulator.start()
        defer { emulator.stop() }
        emulator.configure { $0.apiLatency = .milliseconds(300) }
        let image = emulator.image(provider: .openverse, query: "kittens", index: 0)

        let (_, apiTime) = try measure { try get(emulator, target(.openverse, [("q", "kittens")])) }
        let (_, imageTime) = try measure { try get(emulator, image.url.absoluteString) }
        #expect(apiTime >= .milliseconds(300))
        #expect(imageTime < .milliseconds(250))

        emulator.configure {
            $0.apiLatency = .zero
            $0.imageLatency = .milliseconds(300)
        }
        let (_, apiTime2) = try measure { try get(emulator, target(.openverse, [("q", "kittens")])) }
        let (_, imageTime2) = try measure { try get(emulator, image.url.absoluteString) }
        #expect(apiTime2 < .milliseconds(250))
        #expect(imageTime2 >= .milliseconds(300))
    }
}

/// SHA-1 in the test, independent of the emulator's own implementation.
private enum Insecure {
    static func sha1(_ bytes: [UInt8]) -> String {
        var h0: UInt32 = 0x6745_2301, h1: UInt32 = 0xEFCD_AB89, h2: UInt32 = 0x98BA_DCFE, h3: UInt32 = 0x1032_5476, h4: UInt32 = 0xC3D2_E1F0
        var message = bytes + [0x80]
        while message.count % 64 != 56 { message.append(0) }
        let bits = UInt64(bytes.count) * 8
        message += (0..<8).reversed().map { UInt8(truncatingIfNeeded: bits >> (UInt64($0) * 8)) }
        for chunk in stride(from: 0, to: message.count, by: 64) {
            var w = (0..<16).map { i in (0..<4).reduce(UInt32(0)) { $0 << 8 | UInt32(message[chunk + i * 4 + $1]) } }
            for i in 16..<80 { let x = w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16]; w.append(x << 1 | x >> 31) }
            var a = h0, b = h1, c = h2, d = h3, e = h4
            for i in 0..<80 {
                let (f, k): (UInt32, UInt32) = i < 20 ? ((b & c) | (~b & d), 0x5A82_7999) : i < 40 ? (b ^ c ^ d, 0x6ED9_EBA1) : i < 60 ? ((b & c) | (b & d) | (c & d), 0x8F1B_BCDC) : (b ^ c ^ d, 0xCA62_C1D6)
                let t = (a << 5 | a >> 27) &+ f &+ e &+ k &+ w[i]
                (e, d, c, b, a) = (d, c, b << 30 | b >> 2, a, t)
            }
            (h0, h1, h2, h3, h4) = (h0 &+ a, h1 &+ b, h2 &+ c, h3 &+ d, h4 &+ e)
        }
        return [h0, h1, h2, h3, h4].map { String(format: "%08x", $0) }.joined()
    }
}
