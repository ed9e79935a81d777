import Foundation

/// Searches Google's Custom Search JSON API in image mode (`searchType=image`); needs `GOOGLE_API_KEY` and `GOOGLE_CSE_ID`.
///
/// - Cursor: `.offset(n)`, 0-based; the request sends `start = n + 1` and `num` ≤ 10.
/// - Cap: 100 results per query: results 91–100 are the last page, `start=91&num=10`, so a query with enough
///   results yields 100. The docs also read as "start + num must not exceed 100": if the service answers that last
///   page with 400 `INVALID_ARGUMENT`, the provider falls back once to `start=91&num=9` (the cursor
///   `.token(["start": "91", "num": "9"])`, announced by an empty page) and that page is
///   ``SearchPage/Continuation/capped``.
/// - Quirks: `items` is absent when there are no results (→ exhausted); `mime` may be a bare `"image/"` (→ `nil`);
///   results have no id, so the id is a stable fingerprint of the image link. Errors use Google's envelope
///   `{"error":{"code","message","errors":[{"reason"}],"status"}}`: 429 and the pre-2020 403 `dailyLimitExceeded`
///   /`rateLimitExceeded` → rate limited; invalid or unauthorised keys (400/403) → authentication (`GOOGLE_API_KEY`).
public struct GoogleCustomSearchProvider: ImageProvider {
    public static let descriptor = ProviderDescriptor(
        name: "google",
        displayName: "Google Custom Search",
        requiredEnvironment: ["GOOGLE_API_KEY", "GOOGLE_CSE_ID"],
        defaultEndpoint: URL(string: "https://www.googleapis.com/customsearch/v1")!
    )

    /// The most results the API returns for one query.
    public static let resultCap = 100

    public let endpoint: URL
    /// The API key, sent as `key` and never in ``APIRequest/cacheKey``.
    public let apiKey: String
    /// The search engine id, sent as `cx`; cache keys carry only a fingerprint of it.
    public let engineID: String

    /// Creates the provider; `endpoint` defaults to ``ProviderDescriptor/defaultEndpoint``.
    public init(endpoint: URL? = nil, apiKey: String, engineID: String) {
        self.endpoint = endpoint ?? Self.descriptor.defaultEndpoint
        self.apiKey = apiKey
        self.engineID = engineID
    }

    /// Reads `GOOGLE_API_KEY`, `GOOGLE_CSE_ID` and `MIRROR_GOOGLE_ENDPOINT`.
    public static func make(environment: [String: String], endpointOverride: URL?) throws(ProviderError) -> Self {
        let key = try descriptor.requireKey("GOOGLE_API_KEY", in: environment)
        let engine = try descriptor.requireKey("GOOGLE_CSE_ID", in: environment)
        return Self(endpoint: try descriptor.endpoint(environment: environment, override: endpointOverride), apiKey: key, engineID: engine)
    }

    /// 10, the largest `num` the API accepts.
    public var pageSize: Int { 10 }
    /// 1 s: the free tier is 100 queries a day, and there is no reason to burst.
    public var minimumRequestInterval: Duration { .seconds(1) }
    public var initialCursor: PageCursor { .offset(0) }

    private var failure: ProviderFailure {
        ProviderFailure(context: nil, authVariable: "GOOGLE_API_KEY", secrets: [apiKey, engineID])
    }

    /// `start` and `num` of the request for `cursor`, or `nil` for a cursor this provider never hands out.
    private func window(of cursor: PageCursor) -> (start: Int, num: Int)? {
        switch cursor {
        case .offset(let offset) where offset >= 0 && offset < Self.resultCap:
            return (offset + 1, min(pageSize, Self.resultCap - offset))
        case .token(let fields):
            guard let start = fields["start"].flatMap({ Int($0) }), let num = fields["num"].flatMap({ Int($0) }),
                start >= 1, (1...pageSize).contains(num), start <= Self.resultCap - num + 1
            else { return nil }
            return (start, num)
        default:
            return nil
        }
    }

    /// The cursor of the fallback for a last page refused as `start + num > 100`: the same start, `num` cut to fit.
    private func narrowedLastPage(of cursor: PageCursor) -> PageCursor? {
        guard case .offset = cursor, let (start, num) = window(of: cursor), start + num > Self.resultCap else { return nil }
        let narrowed = Self.resultCap - start
        guard narrowed >= 1 else { return nil }
        return .token(["start": String(start), "num": String(narrowed)])
    }

    public func request(for cursor: PageCursor, query: SearchQuery) throws(ProviderError) -> APIRequest {
        guard let (start, num) = window(of: cursor) else {
            if case .offset(let offset) = cursor, offset >= Self.resultCap {
                throw .configuration(message: "Google Custom Search serves \(Self.resultCap) results per query; cannot start at \(offset + 1)")
            }
            throw .configuration(message: "Google Custom Search pages by offset, not \(cursor)")
        }
        guard num >= 1 else {
            throw .configuration(message: "Google Custom Search serves \(Self.resultCap) results per query; cannot start at \(start)")
        }
        var builder = ProviderURLBuilder()
        builder.add("key", apiKey)
        builder.add("cx", engineID)
        builder.add("q", query.text)
        builder.add("searchType", "image")
        builder.add("start", start)
        builder.add("num", num)
        builder.add("safe", "active")
        if query.formats.count == 1, let format = query.formats.first {
            // fileType takes one value; with several formats, filtering is left to the downloader.
            builder.add("fileType", format.lowercased() == "jpeg" ? "jpg" : format.lowercased())
        }
        var keyed = builder
        keyed.set("cx", "fp-" + StableFingerprint.hex(engineID))
        return APIRequest(
            url: try builder.url(endpoint: endpoint),
            cacheKey: try keyed.cacheKey(endpoint: endpoint, secretNames: ["key"], secretValues: [apiKey, engineID])
        )
    }

    public func parse(_ response: APIResponse, cursor: PageCursor) throws(ProviderError) -> SearchPage {
        let failure = self.failure
        guard ProviderFailure.isSuccess(response.status) else {
            if response.status == 400, ProviderJSON.parse(response.body)?["error"]?["status"]?.string == "INVALID_ARGUMENT",
                let narrowed = narrowedLastPage(of: cursor)
            {
                // The service read "start + num ≤ 100" strictly: ask once more for what fits, and stop there.
                return SearchPage(results: [], next: narrowed, continuation: .more)
            }
            throw classifyError(response)
        }
        let json = try failure.json(response)
        if json["error"] != nil {
            throw classifyError(APIResponse(status: json["error"]?["code"]?.int ?? 500, headers: response.headers, body: response.body))
        }
        guard json["kind"] != nil || json["queries"] != nil || json["items"] != nil else {
            throw failure.malformed("not a customsearch#search object", body: response.body)
        }
        let request = json["queries"]?["request"]?[0]
        let start = request?["startIndex"]?.int ?? window(of: cursor)?.start ?? 1
        let total = json["searchInformation"]?["totalResults"]?.int ?? request?["totalResults"]?.int
        guard let items = json["items"]?.array, !items.isEmpty else {
            return SearchPage(results: [], next: nil, continuation: .exhausted, reportedTotal: total)
        }
        let results = items.compactMap(Self.result)
        if case .token = cursor {
            // The narrowed last page: nothing lies beyond it.
            return SearchPage(results: results, next: nil, continuation: .capped, reportedTotal: total)
        }
        guard let nextStart = json["queries"]?["nextPage"]?[0]?["startIndex"]?.int else {
            // No next page: the end of the results, or of the 100 the API will ever return.
            let reachedCap = (start.addingChecked(items.count) ?? .max) >= Self.resultCap
            return SearchPage(results: results, next: nil, continuation: reachedCap ? .capped : .exhausted, reportedTotal: total)
        }
        // Compared, not subtracted: nextStart comes from the body and may be Int.min (found by scripts/fuzz/fuzz).
        let continuation: SearchPage.Continuation = nextStart < Self.resultCap && nextStart > start ? .more : .capped
        let next = nextStart > start ? PageCursor.offset(nextStart - 1) : nil
        return SearchPage(results: results, next: next, continuation: continuation, reportedTotal: total)
    }

    private func classifyError(_ response: APIResponse) -> ProviderError {
        let failure = self.failure
        let error = ProviderJSON.parse(response.body)?["error"]
        let message = failure.message(
            "HTTP \(response.status): " + ProviderText.snippet(error?["message"]?.string ?? ProviderFailure.detail(from: response.body, secrets: [apiKey, engineID]), secrets: [apiKey, engineID])
        )
        var reasons = Set((error?["errors"]?.array ?? []).compactMap { $0["reason"]?.string })
        for detail in error?["details"]?.array ?? [] {
            if let reason = detail["reason"]?.string { reasons.insert(reason) }
        }
        let text = (error?["message"]?.string ?? "").lowercased()
        let quotaReasons: Set<String> = ["dailyLimitExceeded", "rateLimitExceeded", "userRateLimitExceeded", "quotaExceeded", "RATE_LIMIT_EXCEEDED"]
        let keyReasons: Set<String> = ["keyInvalid", "keyExpired", "API_KEY_INVALID", "API_KEY_SERVICE_BLOCKED", "accessNotConfigured", "SERVICE_DISABLED"]
        if response.status == 429 || !reasons.isDisjoint(with: quotaReasons) || error?["status"]?.string == "RESOURCE_EXHAUSTED" {
            return .rateLimited(retryAfter: response.retryAfterHint, message: message)
        }
        if (response.status == 400 || response.status == 401 || response.status == 403),
            !reasons.isDisjoint(with: keyReasons) || text.contains("api key") || response.status != 400
        {
            return .authentication(variable: "GOOGLE_API_KEY", message: message)
        }
        return failure.classify(response)
    }

    static func result(_ item: ProviderJSON) -> ImageResult? {
        guard let link = item["link"]?.nonEmptyString, let imageURL = ProviderJSON.webURL(link) else { return nil }
        let image = item["image"]
        let title = item["title"]?.nonEmptyString
        let snippet = item["snippet"]?.nonEmptyString
        return ImageResult(
            provider: descriptor.name,
            id: StableFingerprint.hex(link),
            title: title,
            description: snippet == title ? nil : snippet,
            pageURL: image?["contextLink"]?.url,
            imageURL: imageURL,
            thumbnailURL: image?["thumbnailLink"]?.url,
            width: image?["width"]?.int,
            height: image?["height"]?.int,
            byteSize: image?["byteSize"]?.int,
            mimeType: ProviderText.normalizedMIME(item["mime"]?.string)
                ?? ProviderText.normalizedMIME(item["fileFormat"]?.string)
                ?? ProviderText.mimeType(forPathOf: imageURL)
        )
    }
}
