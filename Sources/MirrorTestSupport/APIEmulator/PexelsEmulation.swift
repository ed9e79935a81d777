import Foundation

/// `GET /pexels/v1/search?query=&page=&per_page=` with `Authorization: <key>` (the raw key, no scheme).
///
/// - `{"total_results","page","per_page","photos":[{id (int), width, height, url, photographer, photographer_url,
///   photographer_id, avg_color, src:{original (the image), large2x, large, medium, small, portrait, landscape, tiny},
///   liked, alt}],"next_page"?,"prev_page"?}`; `next_page`/`prev_page` only when such a page exists.
/// - `per_page` default 15, clamped to 1…80; `page` below 1 is 1.
/// - Wrong or missing key: 401 `{"status":401,"code":"Unauthorized"}`.
struct PexelsEmulation: EmulatedAPI {
    func authFailure(_ request: RecordedRequest, _ context: EmulationContext) -> Response? {
        request.header("Authorization") == context.settings.keys.pexels ? nil : EmulatorJSON.response(["status": 401, "code": "Unauthorized"], status: 401)
    }

    func respond(_ request: RecordedRequest, _ context: EmulationContext) -> Response {
        guard let query = request.query["query"], !query.isEmpty else {
            return EmulatorJSON.response(["status": 400, "code": "Bad Request", "error": "query is required"], status: 400)
        }
        let perPage = min(max(request.intParameter("per_page", default: 15) ?? 15, 1), 80)
        let page = max(request.intParameter("page", default: 1) ?? 1, 1)
        let (available, reported) = context.corpus(.pexels, query: query)
        let start = (page - 1) * perPage
        let end = min(start + perPage, available)
        let images = start < end ? context.images(.pexels, query: query, range: start..<end) : []
        let encoded = query.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? query
        let base = context.url(APIEmulator.Provider.pexels.endpointPath)
        var body: [String: Any] = [
            "total_results": max(reported, available),
            "page": page,
            "per_page": perPage,
            "photos": images.map { photo($0, query: query, context: context) },
        ]
        if end < available { body["next_page"] = "\(base)/?page=\(page + 1)&per_page=\(perPage)&query=\(encoded)" }
        if page > 1 { body["prev_page"] = "\(base)/?page=\(page - 1)&per_page=\(perPage)&query=\(encoded)" }
        return EmulatorJSON.response(body, headers: [("X-Ratelimit-Limit", "20000"), ("X-Ratelimit-Remaining", "19999"), ("X-Ratelimit-Reset", "1700000000")])
    }

    private func photo(_ image: EmulatedImage, query: String, context: EmulationContext) -> [String: Any] {
        let original = image.url.absoluteString
        let variant = { (suffix: String) in original + "?auto=compress&cs=tinysrgb&" + suffix }
        let slug = query.lowercased().replacingOccurrences(of: " ", with: "-")
        return [
            "id": Int(image.id)!,
            "width": image.width,
            "height": image.height,
            "url": "https://www.pexels.com/photo/\(slug)-\(image.id)/",
            "photographer": "Emulated Photographer \(image.index % 13)",
            "photographer_url": "https://www.pexels.com/@emulated\(image.index % 13)",
            "photographer_id": 790_000 + image.index % 13,
            "avg_color": "#7A8B6C",
            "src": [
                "original": original,
                "large2x": variant("dpr=2&h=650&w=940"),
                "large": variant("h=650&w=940"),
                "medium": variant("h=350"),
                "small": variant("h=130"),
                "portrait": variant("fit=crop&h=1200&w=800"),
                "landscape": variant("fit=crop&h=627&w=1200"),
                "tiny": variant("dpr=1&fit=crop&h=200&w=280"),
            ],
            "liked": false,
            "alt": "\(query.capitalizedFirst) \(image.index + 1)",
        ]
    }

    func serverError(status: Int) -> Response {
        EmulatorJSON.response(["status": status, "code": status >= 500 ? "Internal Server Error" : "Error"], status: status)
    }

    func rateLimited(retryAfter: Int) -> Response {
        EmulatorJSON.response(["status": 429, "code": "Too Many Requests"], status: 429, headers: [("Retry-After", String(retryAfter)), ("X-Ratelimit-Remaining", "0")])
    }

    func errorInBody(retryAfter: Int) -> Response {
        EmulatorJSON.response(["status": 503, "code": "Service Unavailable"])
    }
}
