import Foundation

/// Searches Pexels (`GET /v1/search`); needs `PEXELS_API_KEY`, sent as the raw `Authorization` header.
///
/// - Cursor: `.page(n)`, 1-based, 80 per page (the API maximum).
/// - Cap: none documented (`total_results` of 10,000 may be one); the page without `next_page` is the last
///   (``SearchPage/Continuation/exhausted``).
/// - Errors: 401/403 → authentication (`PEXELS_API_KEY`), 429 → rate limited, the rest by the shared rules.
public struct PexelsProvider: ImageProvider {
    public static let descriptor = ProviderDescriptor(
        name: "pexels",
        displayName: "Pexels",
        requiredEnvironment: ["PEXELS_API_KEY"],
        defaultEndpoint: URL(string: "https://api.pexels.com/v1/search")!
    )

    /// The Pexels licence, which covers every photo.
    package static let license = ImageResult.License(code: "pexels", url: URL(string: "https://www.pexels.com/license/"))

    public let endpoint: URL
    /// The API key, sent as `Authorization: <key>` and never in a URL.
    public let apiKey: String

    /// Creates the provider; `endpoint` defaults to ``ProviderDescriptor/defaultEndpoint``.
    public init(endpoint: URL? = nil, apiKey: String) {
        self.endpoint = endpoint ?? Self.descriptor.defaultEndpoint
        self.apiKey = apiKey
    }

    /// Reads `PEXELS_API_KEY` and `MIRROR_PEXELS_ENDPOINT`.
    public static func make(environment: [String: String], endpointOverride: URL?) throws(ProviderError) -> Self {
        let key = try descriptor.requireKey("PEXELS_API_KEY", in: environment)
        return Self(endpoint: try descriptor.endpoint(environment: environment, override: endpointOverride), apiKey: key)
    }

    /// 80, the largest `per_page` Pexels allows.
    public var pageSize: Int { 80 }
    /// 1 s between calls; the key's 200-an-hour budget is enforced by `429` handling, not by pacing.
    public var minimumRequestInterval: Duration { .seconds(1) }
    public var initialCursor: PageCursor { .page(1) }

    private var failure: ProviderFailure {
        ProviderFailure(context: nil, authVariable: "PEXELS_API_KEY", secrets: [apiKey])
    }

    public func request(for cursor: PageCursor, query: SearchQuery) throws(ProviderError) -> APIRequest {
        guard case .page(let page) = cursor, page >= 1 else {
            throw .configuration(message: "Pexels pages start at 1; cannot request \(cursor)")
        }
        var builder = ProviderURLBuilder()
        builder.add("query", query.text)
        builder.add("page", page)
        builder.add("per_page", pageSize)
        return APIRequest(
            url: try builder.url(endpoint: endpoint),
            headers: ["Authorization": apiKey],
            cacheKey: try builder.cacheKey(endpoint: endpoint, secretNames: [], secretValues: [apiKey])
        )
    }

    public func parse(_ response: APIResponse, cursor: PageCursor) throws(ProviderError) -> SearchPage {
        let failure = self.failure
        guard ProviderFailure.isSuccess(response.status) else {
            throw failure.classify(response)
        }
        let json = try failure.json(response)
        guard let photos = json["photos"]?.array else {
            throw failure.malformed("no photos array", body: response.body)
        }
        let results = photos.compactMap(Self.result)
        let page = json["page"]?.int ?? { if case .page(let page) = cursor { return page } else { return 1 } }()
        // "The next_page/prev_page attributes are only present if it's not the last/first page."
        let hasNext = json["next_page"]?.nonEmptyString != nil && !photos.isEmpty
        return SearchPage(
            results: results,
            next: page.addingChecked(1).map(PageCursor.page),
            continuation: hasNext ? .more : .exhausted,
            reportedTotal: json["total_results"]?.int
        )
    }

    static func result(_ photo: ProviderJSON) -> ImageResult? {
        guard let id = photo["id"]?.nonEmptyString, let imageURL = photo["src"]?["original"]?.url else { return nil }
        let name = photo["photographer"]?.nonEmptyString
        let profile = photo["photographer_url"]?.url
        return ImageResult(
            provider: descriptor.name,
            id: id,
            title: photo["alt"]?.nonEmptyString,
            pageURL: photo["url"]?.url,
            imageURL: imageURL,
            thumbnailURL: photo["src"]?["small"]?.url ?? photo["src"]?["tiny"]?.url,
            width: photo["width"]?.int,
            height: photo["height"]?.int,
            mimeType: ProviderText.mimeType(forPathOf: imageURL),
            license: license,
            creator: name == nil && profile == nil ? nil : ImageResult.Creator(name: name, url: profile)
        )
    }
}
