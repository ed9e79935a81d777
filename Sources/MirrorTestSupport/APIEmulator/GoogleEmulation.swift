import Foundation

/// `GET /google/customsearch/v1?key=&cx=&q=&searchType=image&start=&num=`.
///
/// - `{"kind":"customsearch#search","url","queries":{"request":[…],"nextPage":[…],"previousPage":[…]},"context",
///   "searchInformation":{…,"totalResults":"<string>"},"items":[…]}`; `items` is **absent** when the page is empty.
///   Each item's `link` is the image, `image.width`/`height`/`byteSize` are real; every fourth item has the bare
///   `mime` `"image/"` (a real quirk) with `fileFormat` `"image/png"`.
/// - `num` 1…10 and `start` ≥ 1, and results no further than the 100th (`start + num - 1` ≤ 100: the last page is
///   `start=91&num=10`), else 400 `INVALID_ARGUMENT`; with ``APIEmulator/Settings/googleStrictLastPage`` the
///   stricter reading `start + num` ≤ 100 (so `start=91&num=10` is refused). `nextPage` is present while a next
///   page can be requested (`nextStart` ≤ 91 and results remain).
/// - Missing key 403 `PERMISSION_DENIED`; wrong key 400 `API_KEY_INVALID` (`keyInvalid`); wrong `cx` 400
///   `INVALID_ARGUMENT`.
struct GoogleEmulation: EmulatedAPI {
    static let resultCap = 100

    static func envelope(_ code: Int, _ message: String, reason: String, status: String, domain: String = "global", details: [[String: Any]]? = nil, headers: [(String, String)] = []) -> Response {
        var error: [String: Any] = [
            "code": code,
            "message": message,
            "errors": [["message": message, "domain": domain, "reason": reason]],
            "status": status,
        ]
        if let details { error["details"] = details }
        return EmulatorJSON.response(["error": error], status: code, headers: headers)
    }

    static func invalidArgument() -> Response {
        envelope(400, "Request contains an invalid argument.", reason: "badRequest", status: "INVALID_ARGUMENT")
    }

    func authFailure(_ request: RecordedRequest, _ context: EmulationContext) -> Response? {
        let keys = context.settings.keys
        guard let key = request.query["key"], !key.isEmpty else {
            return Self.envelope(
                403, "Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API.",
                reason: "forbidden", status: "PERMISSION_DENIED"
            )
        }
        guard key == keys.google else {
            return Self.envelope(
                400, "API key not valid. Please pass a valid API key.", reason: "keyInvalid", status: "INVALID_ARGUMENT", domain: "global",
                details: [["@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID", "domain": "googleapis.com", "metadata": ["service": "customsearch.googleapis.com"]]]
            )
        }
        guard request.query["cx"] == keys.googleEngineID else { return Self.invalidArgument() }
        return nil
    }

    func respond(_ request: RecordedRequest, _ context: EmulationContext) -> Response {
        let query = request.query["q"] ?? ""
        guard let start = request.intParameter("start", default: 1), let num = request.intParameter("num", default: 10),
            start >= 1, (1...10).contains(num),
            start + num <= Self.resultCap + (context.settings.googleStrictLastPage ? 0 : 1)
        else { return Self.invalidArgument() }
        let (available, reported) = context.corpus(.google, query: query)
        let end = min(start - 1 + num, available, Self.resultCap)
        let images = start - 1 < end ? context.images(.google, query: query, range: (start - 1)..<end) : []
        let total = String(max(reported, available))
        let cx = request.query["cx"] ?? ""
        func page(count: Int, startIndex: Int) -> [String: Any] {
            [
                "title": "Google Custom Search - \(query)", "totalResults": total, "searchTerms": query, "count": count,
                "startIndex": startIndex, "inputEncoding": "utf8", "outputEncoding": "utf8", "safe": request.query["safe"] ?? "off",
                "cx": cx, "searchType": "image",
            ]
        }
        var queries: [String: Any] = ["request": [page(count: num, startIndex: start)]]
        let nextStart = start + num
        if !images.isEmpty, nextStart <= Self.resultCap - 9, nextStart <= available {
            queries["nextPage"] = [page(count: num, startIndex: nextStart)]
        }
        if start > 1 { queries["previousPage"] = [page(count: num, startIndex: max(1, start - num))] }
        var body: [String: Any] = [
            "kind": "customsearch#search",
            "url": ["type": "application/json", "template": "https://www.googleapis.com/customsearch/v1?q={searchTerms}&num={count?}&start={startIndex?}&cx={cx?}&searchType={searchType?}&alt=json"],
            "queries": queries,
            "context": ["title": "Emulated engine"],
            "searchInformation": ["searchTime": 0.321, "formattedSearchTime": "0.32", "totalResults": total, "formattedTotalResults": total],
        ]
        if !images.isEmpty {
            let host = URL(string: context.baseURL)?.host.map { "\($0):\(URL(string: context.baseURL)?.port ?? 80)" } ?? "127.0.0.1"
            body["items"] = images.map { image -> [String: Any] in
                [
                    "kind": "customsearch#result",
                    "title": "\(query.capitalizedFirst) \(image.index + 1)",
                    "htmlTitle": "<b>\(query.capitalizedFirst)</b> \(image.index + 1)",
                    "link": image.url.absoluteString,
                    "displayLink": host,
                    "snippet": "\(query.capitalizedFirst) \(image.index + 1)",
                    "htmlSnippet": "<b>\(query.capitalizedFirst)</b> \(image.index + 1)",
                    "mime": image.index % 4 == 3 ? "image/" : "image/png",
                    "fileFormat": "image/png",
                    "image": [
                        "contextLink": "https://example.org/pages/\(image.id)",
                        "height": image.height,
                        "width": image.width,
                        "byteSize": image.byteCount,
                        "thumbnailLink": context.thumbnailURL(image),
                        "thumbnailHeight": image.height,
                        "thumbnailWidth": image.width,
                    ],
                ]
            }
        }
        return EmulatorJSON.response(body)
    }

    func serverError(status: Int) -> Response {
        Self.envelope(status, status >= 500 ? "Backend Error" : "Request failed.", reason: status >= 500 ? "backendError" : "badRequest", status: status >= 500 ? "UNAVAILABLE" : "FAILED_PRECONDITION")
    }

    func rateLimited(retryAfter: Int) -> Response {
        Self.envelope(
            429, "Quota exceeded for quota metric 'Queries' and limit 'Queries per day' of service 'customsearch.googleapis.com' for consumer 'project_number:000000000000'.",
            reason: "rateLimitExceeded", status: "RESOURCE_EXHAUSTED",
            details: [["@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "RATE_LIMIT_EXCEEDED", "domain": "googleapis.com",
                       "metadata": ["quota_limit": "DefaultPerDayPerProject", "quota_limit_value": "100", "service": "customsearch.googleapis.com"]]],
            headers: [("Retry-After", String(retryAfter))]
        )
    }

    func errorInBody(retryAfter: Int) -> Response {
        var response = serverError(status: 503)
        response.status = 200
        return response
    }
}
