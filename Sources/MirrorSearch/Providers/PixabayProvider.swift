import Foundation

/// Searches Pixabay (`GET /api/`); needs `PIXABAY_API_KEY`, sent as the `key` query parameter.
///
/// - Cursor: `.page(n)`, 1-based, 200 per page (the API maximum).
/// - Cap: only `totalHits` (at most 500) results are reachable, even when `total` is larger; the page that
///   reaches `totalHits` ends with ``SearchPage/Continuation/capped`` when `total > totalHits`, else
///   ``SearchPage/Continuation/exhausted``.
/// - Errors are plain text with the HTTP status (`[ERROR 400] …`): a message about the key → authentication
///   (`PIXABAY_API_KEY`); `"page" is out of valid range` → an empty exhausted page (the results ran out);
///   429 → rate limited, using `X-RateLimit-Reset` when `Retry-After` is absent.
/// - Quirks: `largeImageURL` is scaled to fit 1,280 px, so its dimensions are derived from `imageWidth`/`imageHeight`
///   (rounded, may be off by one); with full API access `imageURL` (the original) is used instead, with exact
///   size. `pixabay.com/get/…` links expire, so download soon after searching.
public struct PixabayProvider: ImageProvider {
    public static let descriptor = ProviderDescriptor(
        name: "pixabay",
        displayName: "Pixabay",
        requiredEnvironment: ["PIXABAY_API_KEY"],
        defaultEndpoint: URL(string: "https://pixabay.com/api/")!
    )

    /// The Pixabay Content License, which covers every image.
    package static let license = ImageResult.License(code: "pixabay", url: URL(string: "https://pixabay.com/service/license-summary/"))
    /// The longest side of `largeImageURL`.
    static let largeImageSide = 1280

    public let endpoint: URL
    /// The API key, sent as `key` and never in ``APIRequest/cacheKey``.
    public let apiKey: String

    /// Creates the provider; `endpoint` defaults to ``ProviderDescriptor/defaultEndpoint``.
    public init(endpoint: URL? = nil, apiKey: String) {
        self.endpoint = endpoint ?? Self.descriptor.defaultEndpoint
        self.apiKey = apiKey
    }

    /// Reads `PIXABAY_API_KEY` and `MIRROR_PIXABAY_ENDPOINT`.
    public static func make(environment: [String: String], endpointOverride: URL?) throws(ProviderError) -> Self {
        let key = try descriptor.requireKey("PIXABAY_API_KEY", in: environment)
        return Self(endpoint: try descriptor.endpoint(environment: environment, override: endpointOverride), apiKey: key)
    }

    /// 200, the largest `per_page` Pixabay allows (the range is 3–200).
    public var pageSize: Int { 200 }
    /// 1 s: Pixabay allows 100 requests per 60 s per key.
    public var minimumRequestInterval: Duration { .seconds(1) }
    public var initialCursor: PageCursor { .page(1) }

    private var failure: ProviderFailure {
        ProviderFailure(context: nil, authVariable: "PIXABAY_API_KEY", secrets: [apiKey])
    }

    public func request(for cursor: PageCursor, query: SearchQuery) throws(ProviderError) -> APIRequest {
        guard case .page(let page) = cursor, page >= 1 else {
            throw .configuration(message: "Pixabay pages start at 1; cannot request \(cursor)")
        }
        var builder = ProviderURLBuilder()
        builder.add("key", apiKey)
        // Pixabay rejects queries over 100 characters.
        builder.add("q", String(query.text.prefix(100)))
        builder.add("image_type", "photo")
        builder.add("safesearch", "true")
        builder.add("page", page)
        builder.add("per_page", pageSize)
        if let minWidth = query.minWidth, minWidth > 0 { builder.add("min_width", minWidth) }
        if let minHeight = query.minHeight, minHeight > 0 { builder.add("min_height", minHeight) }
        return APIRequest(
            url: try builder.url(endpoint: endpoint),
            cacheKey: try builder.cacheKey(endpoint: endpoint, secretNames: ["key"], secretValues: [apiKey])
        )
    }

    public func parse(_ response: APIResponse, cursor: PageCursor) throws(ProviderError) -> SearchPage {
        let failure = self.failure
        guard ProviderFailure.isSuccess(response.status) else {
            let text = ProviderFailure.detail(from: response.body, secrets: [apiKey])
            let message = failure.message("HTTP \(response.status): \(text)")
            if response.status == 400, text.contains("out of valid range") {
                return SearchPage(results: [], next: nil, continuation: .exhausted)
            }
            if (400...403).contains(response.status), text.localizedCaseInsensitiveContains("key") {
                throw .authentication(variable: "PIXABAY_API_KEY", message: message)
            }
            if response.status == 429 {
                let reset = response.header("x-ratelimit-reset").flatMap { Int($0.trimmingCharacters(in: .whitespaces)) }
                let delay = response.retryAfterHint ?? reset.flatMap { $0 > 0 ? Duration.seconds($0) : nil }
                throw .rateLimited(retryAfter: delay, message: message)
            }
            throw failure.classify(response)
        }
        let json = try failure.json(response)
        guard let hits = json["hits"]?.array else {
            throw failure.malformed("no hits array", body: response.body)
        }
        let results = hits.compactMap(Self.result)
        let page: Int = { if case .page(let page) = cursor { return page } else { return 1 } }()
        let totalHits = json["totalHits"]?.int ?? 0
        let total = json["total"]?.int ?? totalHits
        let continuation: SearchPage.Continuation
        if hits.isEmpty || page.multipliedSaturating(by: pageSize) >= totalHits {
            continuation = !hits.isEmpty && total > totalHits ? .capped : .exhausted
        } else {
            continuation = .more
        }
        return SearchPage(results: results, next: page.addingChecked(1).map(PageCursor.page), continuation: continuation, reportedTotal: total)
    }

    static func result(_ hit: ProviderJSON) -> ImageResult? {
        guard let id = hit["id"]?.nonEmptyString else { return nil }
        let originalWidth = hit["imageWidth"]?.int
        let originalHeight = hit["imageHeight"]?.int
        let imageURL: URL
        var width: Int?
        var height: Int?
        var byteSize: Int?
        if let original = hit["imageURL"]?.url {
            // Full API access only: the original file, so every reported size applies.
            imageURL = original
            (width, height, byteSize) = (originalWidth, originalHeight, hit["imageSize"]?.int)
        } else if let large = hit["largeImageURL"]?.url {
            imageURL = large
            (width, height) = scaled(width: originalWidth, height: originalHeight, toFit: largeImageSide)
        } else if let web = hit["webformatURL"]?.url {
            imageURL = web
            (width, height) = (hit["webformatWidth"]?.int, hit["webformatHeight"]?.int)
        } else {
            return nil
        }
        let user = hit["user"]?.nonEmptyString
        let userID = hit["user_id"]?.nonEmptyString
        let profile = user.flatMap { name in userID.flatMap { URL(string: "https://pixabay.com/users/\(ProviderURLBuilder.encode(name))-\($0)/") } }
        let tags = hit["tags"]?.string?.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty } ?? []
        return ImageResult(
            provider: descriptor.name,
            id: id,
            pageURL: hit["pageURL"]?.url,
            imageURL: imageURL,
            thumbnailURL: hit["previewURL"]?.url,
            width: width,
            height: height,
            byteSize: byteSize,
            mimeType: ProviderText.mimeType(forPathOf: imageURL),
            license: license,
            creator: user == nil ? nil : ImageResult.Creator(name: user, url: profile),
            tags: tags
        )
    }

    /// The size of a rendition scaled to fit `side` without upscaling; `nil`s when the original size is unknown.
    package static func scaled(width: Int?, height: Int?, toFit side: Int) -> (Int?, Int?) {
        guard let width, let height, width > 0, height > 0 else { return (nil, nil) }
        let longest = max(width, height)
        guard longest > side else { return (width, height) }
        let scale = Double(side) / Double(longest)
        return (Int((Double(width) * scale).rounded()), Int((Double(height) * scale).rounded()))
    }
}
