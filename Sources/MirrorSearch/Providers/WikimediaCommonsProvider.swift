import Foundation

/// Searches Wikimedia Commons through the MediaWiki Action API (`generator=search` over the File namespace); no key needed.
///
/// - Cursor: `.token(continue)`. The whole `continue` object of a response is echoed into the next request
///   (API:Continue); the first page is the empty token. No `continue` key means the end.
/// - Caps: none documented, so pages end only with ``SearchPage/Continuation/exhausted``.
/// - Quirks: errors come inside HTTP 200 bodies (`{"error":{"code","info"}}`); with `maxlag=5` a lagged replica
///   answers `code: "maxlag"`, which becomes ``ProviderError/rateLimited(retryAfter:message:)`` with `Retry-After`
///   or the reported lag. `pages` is keyed by page id, so results are ordered by the `index` search adds (then by
///   page id). A prop-continuation (`"||imageinfo"` without `batchcomplete`) returns the same pages again; pages
///   without `imageinfo` are skipped and duplicates are left to the paginator's de-duplication.
public struct WikimediaCommonsProvider: ImageProvider {
    public static let descriptor = ProviderDescriptor(
        name: "wikimedia",
        displayName: "Wikimedia Commons",
        requiredEnvironment: [],
        defaultEndpoint: URL(string: "https://commons.wikimedia.org/w/api.php")!
    )

    /// The `extmetadata` fields requested; trimming the rest keeps each response a fraction of its full size.
    static let metadataFields = "Artist|ImageDescription|License|LicenseShortName|LicenseUrl|ObjectName"

    public let endpoint: URL
    /// Results per request (`gsrlimit`); 50 by default (the API allows 500, but `extmetadata` makes big batches heavy).
    public let pageSize: Int

    /// Creates the provider; `endpoint` defaults to ``ProviderDescriptor/defaultEndpoint`` and `pageSize` to 50 (clamped to 1…500).
    public init(endpoint: URL? = nil, pageSize: Int = 50) {
        self.endpoint = endpoint ?? Self.descriptor.defaultEndpoint
        self.pageSize = min(max(pageSize, 1), 500)
    }

    /// Reads `MIRROR_WIKIMEDIA_ENDPOINT`; Commons needs no key.
    public static func make(environment: [String: String], endpointOverride: URL?) throws(ProviderError) -> Self {
        Self(endpoint: try descriptor.endpoint(environment: environment, override: endpointOverride))
    }

    /// 1 s: Wikimedia publishes no read limit but asks for serial, unhurried requests (API:Etiquette); `maxlag` does the rest.
    public var minimumRequestInterval: Duration { .seconds(1) }

    public var initialCursor: PageCursor { .token([:]) }

    private var failure: ProviderFailure {
        ProviderFailure(context: nil, authVariable: nil, secrets: [])
    }

    public func request(for cursor: PageCursor, query: SearchQuery) throws(ProviderError) -> APIRequest {
        guard case .token(let token) = cursor else {
            throw .configuration(message: "Wikimedia Commons continues with a token, not \(cursor)")
        }
        var search = query.text
        // Bitmaps only: "drawing" would bring SVGs, which are not the raster images mirror validates and saves.
        search += " filetype:bitmap"
        if let minWidth = query.minWidth, minWidth > 0 { search += " filew:>\(minWidth - 1)" }
        if let minHeight = query.minHeight, minHeight > 0 { search += " fileh:>\(minHeight - 1)" }
        var builder = ProviderURLBuilder()
        builder.add("action", "query")
        builder.add("format", "json")
        builder.add("generator", "search")
        builder.add("gsrsearch", search)
        builder.add("gsrnamespace", "6")
        builder.add("gsrlimit", pageSize)
        builder.add("prop", "imageinfo")
        builder.add("iiprop", "url|size|mime|sha1|extmetadata")
        builder.add("iiextmetadatafilter", Self.metadataFields)
        builder.add("maxlag", "5")
        for key in token.keys.sorted() {
            builder.set(key, token[key] ?? "")
        }
        let url = try builder.url(endpoint: endpoint)
        return APIRequest(url: url, cacheKey: url.absoluteString)
    }

    public func parse(_ response: APIResponse, cursor: PageCursor) throws(ProviderError) -> SearchPage {
        let failure = self.failure
        guard ProviderFailure.isSuccess(response.status) else {
            throw failure.classify(response)
        }
        let json = try failure.json(response)
        if let error = json["error"] {
            throw classifyAPIError(error, response: response)
        }
        guard json.object != nil, json["query"] != nil || json["batchcomplete"] != nil || json["continue"] != nil else {
            throw failure.malformed("neither query, batchcomplete nor continue", body: response.body)
        }
        // A search without hits answers {"batchcomplete": ""} with no "query" at all.
        let pages: [ProviderJSON]
        switch json["query"]?["pages"] {
        case .object(let object)?: pages = Array(object.values)
        case .array(let array)?: pages = array
        default: pages = []
        }
        let ordered = pages.sorted { lhs, rhs in
            let left = (lhs["index"]?.int ?? Int.max, lhs["pageid"]?.int ?? Int.max)
            let right = (rhs["index"]?.int ?? Int.max, rhs["pageid"]?.int ?? Int.max)
            return left < right
        }
        let results = ordered.compactMap(Self.result)
        guard let continuation = json["continue"]?.object, !continuation.isEmpty else {
            return SearchPage(results: results, next: nil, continuation: .exhausted)
        }
        var token: [String: String] = [:]
        for (key, value) in continuation {
            if let text = value.string { token[key] = text }
        }
        return SearchPage(results: results, next: .token(token), continuation: .more)
    }

    private func classifyAPIError(_ error: ProviderJSON, response: APIResponse) -> ProviderError {
        let code = error["code"]?.nonEmptyString ?? "unknown"
        let info = error["info"]?.nonEmptyString ?? ""
        let message = failure.message("API error \(code)" + (info.isEmpty ? "" : ": \(ProviderText.snippet(info, secrets: []))"))
        switch code {
        case "maxlag":
            // Manual:Maxlag: HTTP 200 with Retry-After and X-Database-Lag headers; the body carries "lag" too.
            let lag = error["lag"]?.int ?? error["lag"]?.string.flatMap(Double.init).map { Int($0.rounded(.up)) }
            let delay = response.retryAfterHint ?? lag.flatMap { $0 > 0 ? Duration.seconds($0) : nil } ?? .seconds(5)
            return .rateLimited(retryAfter: delay, message: message)
        case "ratelimited":
            return .rateLimited(retryAfter: response.retryAfterHint, message: message)
        case "readonly", "timeout", "search-backend-error", "backend-fail-internal", "internal_api_error_DBQueryError":
            return .transient(message: message)
        default:
            if code.hasPrefix("internal_api_error") { return .transient(message: message) }
            return .permanent(message: message)
        }
    }

    static func result(_ page: ProviderJSON) -> ImageResult? {
        guard let pageID = page["pageid"]?.string, let info = page["imageinfo"]?[0], let imageURL = info["url"]?.url else {
            return nil
        }
        let metadata = info["extmetadata"]
        func meta(_ key: String) -> String? { metadata?[key]?["value"]?.nonEmptyString }
        let artistHTML = meta("Artist")
        let creatorName = artistHTML.flatMap(ProviderText.plainText(fromHTML:))
        let creatorURL = artistHTML.flatMap(ProviderText.firstLink(inHTML:))
        return ImageResult(
            provider: descriptor.name,
            id: pageID,
            title: meta("ObjectName").flatMap(ProviderText.plainText(fromHTML:)) ?? displayTitle(page["title"]?.nonEmptyString),
            description: meta("ImageDescription").flatMap(ProviderText.plainText(fromHTML:)),
            pageURL: info["descriptionurl"]?.url,
            imageURL: imageURL,
            thumbnailURL: info["thumburl"]?.url,
            width: info["width"]?.int,
            height: info["height"]?.int,
            byteSize: info["size"]?.int,
            mimeType: ProviderText.normalizedMIME(info["mime"]?.string) ?? ProviderText.mimeType(forPathOf: imageURL),
            license: ImageResult.License.normalized(
                code: meta("License") ?? meta("LicenseShortName"),
                url: meta("LicenseUrl")
            ),
            creator: creatorName == nil && creatorURL == nil ? nil : ImageResult.Creator(name: creatorName, url: creatorURL)
        )
    }

    /// "File:Minchinmavida Volcano.jpg" → "Minchinmavida Volcano".
    static func displayTitle(_ title: String?) -> String? {
        guard var title else { return nil }
        if title.hasPrefix("File:") { title.removeFirst(5) }
        if let dot = title.lastIndex(of: "."), title.distance(from: dot, to: title.endIndex) <= 5 {
            title = String(title[..<dot])
        }
        return title.isEmpty ? nil : title
    }
}
