import Foundation

/// Searches Unsplash (`GET /search/photos`); needs `UNSPLASH_ACCESS_KEY`, sent as `Authorization: Client-ID <key>`.
///
/// - Cursor: `.page(n)`, 1-based, 30 per page (the API maximum).
/// - Cap: pages above 200 come back empty with `total_pages: 0` (reported 2024), so page 200 ends with
///   ``SearchPage/Continuation/capped``; `page ≥ total_pages` ends with ``SearchPage/Continuation/exhausted``.
/// - Errors: `{"errors":[…]}` with 401 → authentication (`UNSPLASH_ACCESS_KEY`); over the limit Unsplash answers
///   **403 with the plain-text body `Rate Limit Exceeded`** (or 429), both rate limited; any other 403 is an
///   authentication problem (key without access).
/// - Obligation: Unsplash's API guidelines require a request to each photo's `links.download_location` (with the
///   key) when the photo is downloaded: ``downloadNotification(for:)`` builds it; the job sends it once per saved
///   photo.
public struct UnsplashProvider: ImageProvider {
    public static let descriptor = ProviderDescriptor(
        name: "unsplash",
        displayName: "Unsplash",
        requiredEnvironment: ["UNSPLASH_ACCESS_KEY"],
        defaultEndpoint: URL(string: "https://api.unsplash.com/search/photos")!
    )

    /// The deepest page Unsplash serves results for.
    public static let maximumPage = 200
    /// The Unsplash licence, which covers every photo.
    package static let license = ImageResult.License(code: "unsplash", url: URL(string: "https://unsplash.com/license"))

    public let endpoint: URL
    /// The access key, sent in the `Authorization` header and never in a URL.
    public let accessKey: String

    /// Creates the provider; `endpoint` defaults to ``ProviderDescriptor/defaultEndpoint``.
    public init(endpoint: URL? = nil, accessKey: String) {
        self.endpoint = endpoint ?? Self.descriptor.defaultEndpoint
        self.accessKey = accessKey
    }

    /// Reads `UNSPLASH_ACCESS_KEY` and `MIRROR_UNSPLASH_ENDPOINT`.
    public static func make(environment: [String: String], endpointOverride: URL?) throws(ProviderError) -> Self {
        let key = try descriptor.requireKey("UNSPLASH_ACCESS_KEY", in: environment)
        return Self(endpoint: try descriptor.endpoint(environment: environment, override: endpointOverride), accessKey: key)
    }

    /// 30, the largest `per_page` Unsplash allows.
    public var pageSize: Int { 30 }
    /// 1 s between calls; demo keys get 50 requests an hour, which only `403`/`429` handling can enforce.
    public var minimumRequestInterval: Duration { .seconds(1) }
    public var initialCursor: PageCursor { .page(1) }

    private var failure: ProviderFailure {
        ProviderFailure(context: nil, authVariable: "UNSPLASH_ACCESS_KEY", secrets: [accessKey])
    }

    public func request(for cursor: PageCursor, query: SearchQuery) throws(ProviderError) -> APIRequest {
        guard case .page(let page) = cursor, page >= 1, page <= Self.maximumPage else {
            throw .configuration(message: "Unsplash pages run from 1 to \(Self.maximumPage); cannot request \(cursor)")
        }
        var builder = ProviderURLBuilder()
        builder.add("query", query.text)
        builder.add("page", page)
        builder.add("per_page", pageSize)
        builder.add("content_filter", "high")
        return APIRequest(
            url: try builder.url(endpoint: endpoint),
            headers: ["Authorization": "Client-ID \(accessKey)", "Accept-Version": "v1"],
            cacheKey: try builder.cacheKey(endpoint: endpoint, secretNames: ["client_id"], secretValues: [accessKey])
        )
    }

    /// `GET links.download_location` with the key, as the API guidelines require for every downloaded photo.
    /// Only a location on the API's own host (or the overridden endpoint's) is called, so a hostile body cannot
    /// send the key elsewhere.
    public func downloadNotification(for result: ImageResult) -> APIRequest? {
        guard let location = result.downloadLocation, location.host?.lowercased() == endpoint.host?.lowercased(),
            location.scheme?.lowercased() == endpoint.scheme?.lowercased(), location.port == endpoint.port
        else { return nil }
        return APIRequest(
            url: location,
            headers: ["Authorization": "Client-ID \(accessKey)", "Accept-Version": "v1"],
            cacheKey: ProviderText.redact(location.absoluteString, secrets: [accessKey])
        )
    }

    public func parse(_ response: APIResponse, cursor: PageCursor) throws(ProviderError) -> SearchPage {
        let failure = self.failure
        guard ProviderFailure.isSuccess(response.status) else {
            let body = String(decoding: response.body.prefix(2000), as: UTF8.self)
            let exhausted = response.header("x-ratelimit-remaining").flatMap { Int($0.trimmingCharacters(in: .whitespaces)) } == 0
            if response.status == 403, body.localizedCaseInsensitiveContains("rate limit") || exhausted {
                throw .rateLimited(
                    retryAfter: response.retryAfterHint,
                    message: failure.message("HTTP 403: " + ProviderText.snippet(body, secrets: [accessKey]))
                )
            }
            throw failure.classify(response)
        }
        let json = try failure.json(response)
        guard let items = json["results"]?.array else {
            throw failure.malformed("no results array", body: response.body)
        }
        let results = items.compactMap(Self.result)
        let page: Int = { if case .page(let page) = cursor { return page } else { return 1 } }()
        let totalPages = json["total_pages"]?.int ?? 0
        let continuation: SearchPage.Continuation
        if items.isEmpty || page >= totalPages {
            continuation = .exhausted
        } else if page >= Self.maximumPage {
            continuation = .capped
        } else {
            continuation = .more
        }
        return SearchPage(
            results: results, next: page.addingChecked(1).map(PageCursor.page), continuation: continuation,
            reportedTotal: json["total"]?.int
        )
    }

    static func result(_ photo: ProviderJSON) -> ImageResult? {
        guard let id = photo["id"]?.nonEmptyString, let imageURL = photo["urls"]?["full"]?.url ?? photo["urls"]?["raw"]?.url else {
            return nil
        }
        let user = photo["user"]
        let name = user?["name"]?.nonEmptyString ?? user?["username"]?.nonEmptyString
        let profile = user?["links"]?["html"]?.url
        let description = photo["description"]?.nonEmptyString
        let format = URLComponents(url: imageURL, resolvingAgainstBaseURL: false)?.queryItems?.first { $0.name == "fm" }?.value
        return ImageResult(
            provider: descriptor.name,
            id: id,
            title: photo["alt_description"]?.nonEmptyString ?? description,
            description: description,
            pageURL: photo["links"]?["html"]?.url,
            imageURL: imageURL,
            thumbnailURL: photo["urls"]?["thumb"]?.url ?? photo["urls"]?["small"]?.url,
            // "full" is the original size re-encoded, so the reported dimensions apply.
            width: photo["width"]?.int,
            height: photo["height"]?.int,
            mimeType: format.flatMap(ProviderText.mimeType(forExtension:)),
            license: license,
            creator: name == nil && profile == nil ? nil : ImageResult.Creator(name: name, url: profile),
            tags: photo["tags"]?.array?.compactMap { $0["title"]?.nonEmptyString } ?? [],
            downloadLocation: photo["links"]?["download_location"]?.url
        )
    }
}
