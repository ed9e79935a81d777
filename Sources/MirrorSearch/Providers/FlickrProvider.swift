import Foundation

/// Searches Flickr (`flickr.photos.search`, JSON with `nojsoncallback=1`); needs `FLICKR_API_KEY`.
///
/// - Cursor: `.page(n)`, 1-based, 500 per page (the API maximum).
/// - Cap: Flickr returns "at most the first 4,000 results for any given search query" and repeats results past
///   that, while `total`/`pages` keep growing; the page that reaches 4,000 ends with ``SearchPage/Continuation/capped``.
/// - Errors: HTTP 200 with `{"stat":"fail","code":N}`. Code 100 (invalid key) → authentication (`FLICKR_API_KEY`);
///   10, 105, 201 (service unavailable) → transient; 20 (excessive offset, the cap seen from the other side) →
///   an empty page ending ``SearchPage/Continuation/capped``; anything else → permanent.
/// - Quirks: `total`, `pages`, `o_width` may be strings; `url_o`/`url_l` may be missing, so the best size is
///   picked by preference (o, l, c, z, m) and, with no `url_*` at all, the 500 px URL is built from
///   `server`/`id`/`secret` (it exists for every photo). A JSONP wrapper is tolerated.
public struct FlickrProvider: ImageProvider {
    public static let descriptor = ProviderDescriptor(
        name: "flickr",
        displayName: "Flickr",
        requiredEnvironment: ["FLICKR_API_KEY"],
        defaultEndpoint: URL(string: "https://api.flickr.com/services/rest/")!
    )

    /// The deepest result Flickr serves for one query.
    public static let resultCap = 4_000
    /// The `extras` requested: sizes by preference, original dimensions and format, licence, owner, text.
    package static let extras = "url_o,url_l,url_c,url_z,url_m,o_dims,license,owner_name,description,tags,original_format"
    /// Size suffixes in order of preference.
    static let sizePreference = ["o", "l", "c", "z", "m"]

    /// Flickr licence ids (`flickr.photos.licenses.getInfo`, recorded 2024) → normalised licence.
    package static let licenses: [String: ImageResult.License] = [
        "0": .init(code: "all-rights-reserved"),
        "1": .init(code: "cc-by-nc-sa", version: "2.0", url: URL(string: "https://creativecommons.org/licenses/by-nc-sa/2.0/")),
        "2": .init(code: "cc-by-nc", version: "2.0", url: URL(string: "https://creativecommons.org/licenses/by-nc/2.0/")),
        "3": .init(code: "cc-by-nc-nd", version: "2.0", url: URL(string: "https://creativecommons.org/licenses/by-nc-nd/2.0/")),
        "4": .init(code: "cc-by", version: "2.0", url: URL(string: "https://creativecommons.org/licenses/by/2.0/")),
        "5": .init(code: "cc-by-sa", version: "2.0", url: URL(string: "https://creativecommons.org/licenses/by-sa/2.0/")),
        "6": .init(code: "cc-by-nd", version: "2.0", url: URL(string: "https://creativecommons.org/licenses/by-nd/2.0/")),
        "7": .init(code: "no-known-copyright", url: URL(string: "https://www.flickr.com/commons/usage/")),
        "8": .init(code: "us-government-work", url: URL(string: "http://www.usa.gov/copyright.shtml")),
        "9": .init(code: "cc0", version: "1.0", url: URL(string: "https://creativecommons.org/publicdomain/zero/1.0/")),
        "10": .init(code: "pdm", version: "1.0", url: URL(string: "https://creativecommons.org/publicdomain/mark/1.0/")),
    ]

    public let endpoint: URL
    /// The API key, sent as the `api_key` query parameter and never in ``APIRequest/cacheKey``.
    public let apiKey: String

    /// Creates the provider; `endpoint` defaults to ``ProviderDescriptor/defaultEndpoint``.
    public init(endpoint: URL? = nil, apiKey: String) {
        self.endpoint = endpoint ?? Self.descriptor.defaultEndpoint
        self.apiKey = apiKey
    }

    /// Reads `FLICKR_API_KEY` and `MIRROR_FLICKR_ENDPOINT`.
    public static func make(environment: [String: String], endpointOverride: URL?) throws(ProviderError) -> Self {
        let key = try descriptor.requireKey("FLICKR_API_KEY", in: environment)
        return Self(endpoint: try descriptor.endpoint(environment: environment, override: endpointOverride), apiKey: key)
    }

    /// 500, the largest `per_page` Flickr allows for a non-geo search.
    public var pageSize: Int { 500 }
    /// 1 s: Flickr asks keys to stay under 3,600 queries an hour.
    public var minimumRequestInterval: Duration { .seconds(1) }
    public var initialCursor: PageCursor { .page(1) }

    private var failure: ProviderFailure {
        ProviderFailure(context: nil, authVariable: "FLICKR_API_KEY", secrets: [apiKey])
    }

    public func request(for cursor: PageCursor, query: SearchQuery) throws(ProviderError) -> APIRequest {
        guard case .page(let page) = cursor, page >= 1, (page - 1) * pageSize < Self.resultCap else {
            throw .configuration(message: "Flickr serves the first \(Self.resultCap) results only; cannot request \(cursor)")
        }
        var builder = ProviderURLBuilder()
        builder.add("method", "flickr.photos.search")
        builder.add("api_key", apiKey)
        builder.add("format", "json")
        builder.add("nojsoncallback", "1")
        builder.add("text", query.text)
        builder.add("media", "photos")
        builder.add("safe_search", "1")
        builder.add("content_type", "1")
        builder.add("sort", "relevance")
        builder.add("extras", Self.extras)
        builder.add("per_page", pageSize)
        builder.add("page", page)
        let ids = query.licenses.compactMap(Self.licenseID).sorted { Int($0)! < Int($1)! }
        if !ids.isEmpty { builder.add("license", ids.joined(separator: ",")) }
        return APIRequest(
            url: try builder.url(endpoint: endpoint),
            cacheKey: try builder.cacheKey(endpoint: endpoint, secretNames: ["api_key"], secretValues: [apiKey])
        )
    }

    /// The Flickr licence id for a normalised code, or `nil` when Flickr has none.
    static func licenseID(_ code: String) -> String? {
        licenses.first { $0.value.code == code.lowercased() }?.key
    }

    public func parse(_ response: APIResponse, cursor: PageCursor) throws(ProviderError) -> SearchPage {
        let failure = self.failure
        guard ProviderFailure.isSuccess(response.status) else {
            throw failure.classify(response)
        }
        let json = try Self.unwrapJSONP(response, failure: failure)
        if json["stat"]?.string == "fail" {
            let code = json["code"]?.int ?? -1
            let message = failure.message("error \(code): " + ProviderText.snippet(json["message"]?.string ?? "", secrets: [apiKey]))
            switch code {
            case 100:
                throw .authentication(variable: "FLICKR_API_KEY", message: message)
            case 10, 105, 201:
                throw .transient(message: message)
            case 20:
                return SearchPage(results: [], next: nil, continuation: .capped)
            default:
                throw .permanent(message: message)
            }
        }
        guard json["stat"]?.string == "ok", let photos = json["photos"], let items = photos["photo"]?.array else {
            throw failure.malformed("no photos.photo array", body: response.body)
        }
        let results = items.compactMap(Self.result)
        let page = photos["page"]?.int ?? { if case .page(let page) = cursor { return page } else { return 1 } }()
        let pages = photos["pages"]?.int ?? 0
        let perPage = photos["perpage"]?.int ?? pageSize
        let continuation: SearchPage.Continuation
        if items.isEmpty || page >= pages {
            continuation = .exhausted
        } else if page.multipliedSaturating(by: perPage) >= Self.resultCap {
            continuation = .capped
        } else {
            continuation = .more
        }
        return SearchPage(
            results: results, next: page.addingChecked(1).map(PageCursor.page), continuation: continuation,
            reportedTotal: photos["total"]?.int
        )
    }

    /// An NSID such as `7478087@N06` kept literal (`@` is legal in a path), anything odder percent-encoded.
    static func pathSegment(_ text: String) -> String {
        text.allSatisfy({ ($0.isASCII && ($0.isLetter || $0.isNumber)) || "@_-.".contains($0) }) ? text : ProviderURLBuilder.encode(text)
    }

    /// Parses the body, stripping a `jsonFlickrApi(...)` wrapper if `nojsoncallback` was lost on the way.
    static func unwrapJSONP(_ response: APIResponse, failure: ProviderFailure) throws(ProviderError) -> ProviderJSON {
        if let json = ProviderJSON.parse(response.body) { return json }
        let text = String(decoding: response.body, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        if let open = text.firstIndex(of: "("), text.hasSuffix(")"), text[..<open].allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" }),
            let json = ProviderJSON.parse(Data(text[text.index(after: open)..<text.index(before: text.endIndex)].utf8))
        {
            return json
        }
        throw failure.malformed("not JSON", body: response.body)
    }

    static func result(_ photo: ProviderJSON) -> ImageResult? {
        guard let id = photo["id"]?.nonEmptyString else { return nil }
        let server = photo["server"]?.nonEmptyString
        let secret = photo["secret"]?.nonEmptyString
        let owner = photo["owner"]?.nonEmptyString

        var imageURL: URL?
        var width: Int?
        var height: Int?
        for suffix in sizePreference {
            if let url = photo["url_\(suffix)"]?.url {
                imageURL = url
                width = photo["width_\(suffix)"]?.int
                height = photo["height_\(suffix)"]?.int
                if suffix == "o" {
                    width = width ?? photo["o_width"]?.int
                    height = height ?? photo["o_height"]?.int
                }
                break
            }
        }
        if imageURL == nil, let server, let secret {
            // The no-suffix 500 px size exists for every photo; larger ones depend on upload date and original size.
            imageURL = URL(string: "https://live.staticflickr.com/\(server)/\(id)_\(secret).jpg")
        }
        guard let imageURL else { return nil }

        let thumbnail = (server != nil && secret != nil)
            ? URL(string: "https://live.staticflickr.com/\(server!)/\(id)_\(secret!)_t.jpg") : nil
        let originalFormat = photo["originalformat"]?.nonEmptyString
        let isOriginal = imageURL.lastPathComponent.contains("_o.")
        let mimeType = (isOriginal ? originalFormat.flatMap(ProviderText.mimeType(forExtension:)) : nil)
            ?? ProviderText.mimeType(forPathOf: imageURL)
        let ownerName = photo["ownername"]?.nonEmptyString
        let ownerPath = owner.map(Self.pathSegment)
        let ownerURL = ownerPath.flatMap { URL(string: "https://www.flickr.com/photos/\($0)/") }
        let tags = photo["tags"]?.string?.split(separator: " ").map(String.init) ?? []
        return ImageResult(
            provider: descriptor.name,
            id: id,
            title: photo["title"]?.nonEmptyString,
            description: (photo["description"]?["_content"]?.string ?? photo["description"]?.string).flatMap(ProviderText.plainText(fromHTML:)),
            pageURL: ownerPath.flatMap { URL(string: "https://www.flickr.com/photos/\($0)/\(ProviderURLBuilder.encode(id))") },
            imageURL: imageURL,
            thumbnailURL: thumbnail,
            width: width,
            height: height,
            mimeType: mimeType,
            license: photo["license"]?.string.flatMap { licenses[$0] },
            creator: ownerName == nil && ownerURL == nil ? nil : ImageResult.Creator(name: ownerName, url: ownerURL),
            tags: tags
        )
    }
}
