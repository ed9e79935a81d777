import Foundation

/// Searches Giphy (`GET /v1/gifs/search`); needs `GIPHY_API_KEY`.
///
/// - Cursor: `.offset(n)`, 0-based, counted in items; 50 per request (the beta-key maximum).
/// - Cap: Giphy accepts offsets up to 4,999 and answers empty beyond, whatever `total_count` says, so a page whose
///   next offset would pass 4,999 ends with ``SearchPage/Continuation/capped``.
/// - Quirks: dimensions and sizes are strings; an intermittent "synthetic" HTTP 200 with `data: []` and **no
///   `pagination`** is a glitch, not the end, so it is ``ProviderError/transient(message:)``; errors may be
///   `{"meta":{"status":401,"msg":…}}` or the older gateway `{"message":…}` (both read, `message` first).
///   A `/v1/gifs/{id}` body (`data` is one object) parses as a single-result, exhausted page.
public struct GiphyProvider: ImageProvider {
    public static let descriptor = ProviderDescriptor(
        name: "giphy",
        displayName: "Giphy",
        requiredEnvironment: ["GIPHY_API_KEY"],
        defaultEndpoint: URL(string: "https://api.giphy.com/v1/gifs/search")!
    )

    /// The largest offset Giphy serves.
    public static let maximumOffset = 4_999
    /// Giphy truncates or rejects longer queries.
    static let maximumQueryLength = 50

    public let endpoint: URL
    /// The API key, sent as the `api_key` query parameter and never in ``APIRequest/cacheKey``.
    public let apiKey: String
    /// The content rating passed as `rating`; `"g"` by default.
    public let rating: String

    /// Creates the provider; `endpoint` defaults to ``ProviderDescriptor/defaultEndpoint`` and `rating` to `"g"`.
    public init(endpoint: URL? = nil, apiKey: String, rating: String = "g") {
        self.endpoint = endpoint ?? Self.descriptor.defaultEndpoint
        self.apiKey = apiKey
        self.rating = rating
    }

    /// Reads `GIPHY_API_KEY` and `MIRROR_GIPHY_ENDPOINT`.
    public static func make(environment: [String: String], endpointOverride: URL?) throws(ProviderError) -> Self {
        let key = try descriptor.requireKey("GIPHY_API_KEY", in: environment)
        return Self(endpoint: try descriptor.endpoint(environment: environment, override: endpointOverride), apiKey: key)
    }

    /// 50, the `limit` maximum for beta keys.
    public var pageSize: Int { 50 }
    /// 1 s between calls; beta keys also have an hourly budget (42 an hour) that only `429` handling can enforce.
    public var minimumRequestInterval: Duration { .seconds(1) }
    public var initialCursor: PageCursor { .offset(0) }

    private var failure: ProviderFailure {
        ProviderFailure(context: nil, authVariable: "GIPHY_API_KEY", secrets: [apiKey])
    }

    public func request(for cursor: PageCursor, query: SearchQuery) throws(ProviderError) -> APIRequest {
        guard case .offset(let offset) = cursor, offset >= 0, offset <= Self.maximumOffset else {
            throw .configuration(message: "Giphy offsets run from 0 to \(Self.maximumOffset); cannot request \(cursor)")
        }
        var builder = ProviderURLBuilder()
        builder.add("api_key", apiKey)
        builder.add("q", String(query.text.prefix(Self.maximumQueryLength)))
        builder.add("limit", pageSize)
        builder.add("offset", offset)
        builder.add("rating", rating)
        return APIRequest(
            url: try builder.url(endpoint: endpoint),
            cacheKey: try builder.cacheKey(endpoint: endpoint, secretNames: ["api_key"], secretValues: [apiKey])
        )
    }

    public func parse(_ response: APIResponse, cursor: PageCursor) throws(ProviderError) -> SearchPage {
        let failure = self.failure
        guard ProviderFailure.isSuccess(response.status) else {
            throw failure.classify(response)
        }
        let json = try failure.json(response)
        if let status = json["meta"]?["status"]?.int, !ProviderFailure.isSuccess(status) {
            // An error reported only in meta.status: classify it as if it were the HTTP status.
            throw failure.classify(APIResponse(status: status, headers: response.headers, body: response.body))
        }
        if let single = json["data"]?.object {
            let results = Self.result(.object(single)).map { [$0] } ?? []
            return SearchPage(results: results, next: nil, continuation: .exhausted)
        }
        guard let items = json["data"]?.array else {
            throw failure.malformed("no data array", body: response.body)
        }
        guard let pagination = json["pagination"] else {
            // Giphy's "synthetic" answer (GiphyAPI #195/#197): 200, data [], no pagination. Not the end; retry.
            throw .transient(message: failure.message("empty answer without pagination (a known Giphy glitch)"))
        }
        let results = items.compactMap(Self.result)
        let offset = pagination["offset"]?.int ?? { if case .offset(let offset) = cursor { return offset } else { return 0 } }()
        let count = pagination["count"]?.int ?? items.count
        let total = pagination["total_count"]?.int
        let next = offset.addingChecked(max(count, items.count)) ?? .max
        let continuation: SearchPage.Continuation
        if items.isEmpty || count == 0 || (total.map { next >= $0 } ?? false) {
            continuation = .exhausted
        } else if next > Self.maximumOffset {
            continuation = .capped
        } else {
            continuation = .more
        }
        return SearchPage(results: results, next: .offset(next), continuation: continuation, reportedTotal: total)
    }

    static func result(_ gif: ProviderJSON) -> ImageResult? {
        guard let id = gif["id"]?.nonEmptyString, let original = gif["images"]?["original"],
            let imageURL = original["url"]?.url
        else { return nil }
        let images = gif["images"]
        let thumbnail = images?["fixed_width_still"]?["url"]?.url ?? images?["preview_gif"]?["url"]?.url
        let user = gif["user"]
        let name = user?["display_name"]?.nonEmptyString ?? gif["username"]?.nonEmptyString
        let profile = user?["profile_url"]?.url
        let tags = gif["tags"]?.array?.compactMap { $0.nonEmptyString } ?? []
        return ImageResult(
            provider: descriptor.name,
            id: id,
            title: gif["title"]?.nonEmptyString,
            pageURL: gif["url"]?.url,
            imageURL: imageURL,
            thumbnailURL: thumbnail,
            width: original["width"]?.int,
            height: original["height"]?.int,
            byteSize: original["size"]?.int,
            mimeType: ProviderText.mimeType(forPathOf: imageURL) ?? "image/gif",
            creator: name == nil && profile == nil ? nil : ImageResult.Creator(name: name, url: profile),
            tags: tags
        )
    }
}
