import Foundation

/// `GET /pixabay/api/?key=&q=&page=&per_page=`.
///
/// - `{"total","totalHits" (≤ 500),"hits":[{id (int), pageURL, type, tags, previewURL, previewWidth, previewHeight,
///   webformatURL, webformatWidth, webformatHeight, largeImageURL (the image), imageWidth, imageHeight (real; under
///   1280 so `largeImageURL` is the full size), imageSize, views, downloads, collections, likes, comments, user_id,
///   user, userImageURL}]}` with `X-RateLimit-*` headers.
/// - `per_page` 3…200 (default 20), else 400 `[ERROR 400] "per_page" is out of valid range.`; a page past
///   `totalHits` 400 `[ERROR 400] "page" is out of valid range.` (plain text).
/// - Wrong or missing key: 400 plain text `[ERROR 400] Invalid or missing API key (key).`.
struct PixabayEmulation: EmulatedAPI {
    static let hitCap = 500

    func authFailure(_ request: RecordedRequest, _ context: EmulationContext) -> Response? {
        request.query["key"] == context.settings.keys.pixabay ? nil : EmulatorJSON.text("[ERROR 400] Invalid or missing API key (key).", status: 400)
    }

    func respond(_ request: RecordedRequest, _ context: EmulationContext) -> Response {
        let query = request.query["q"] ?? ""
        guard let perPage = request.intParameter("per_page", default: 20), (3...200).contains(perPage) else {
            return EmulatorJSON.text("[ERROR 400] \"per_page\" is out of valid range.", status: 400)
        }
        guard let page = request.intParameter("page", default: 1), page >= 1 else {
            return EmulatorJSON.text("[ERROR 400] \"page\" is out of valid range.", status: 400)
        }
        let (available, reported) = context.corpus(.pixabay, query: query)
        let totalHits = min(available, Self.hitCap)
        let start = (page - 1) * perPage
        if start >= totalHits, page > 1 {
            return EmulatorJSON.text("[ERROR 400] \"page\" is out of valid range.", status: 400)
        }
        let end = min(start + perPage, totalHits)
        let images = start < end ? context.images(.pixabay, query: query, range: start..<end) : []
        return EmulatorJSON.response(
            ["total": max(reported, available), "totalHits": totalHits, "hits": images.map { hit($0, query: query, context: context) }],
            headers: [("X-RateLimit-Limit", "100"), ("X-RateLimit-Remaining", "99"), ("X-RateLimit-Reset", "60")]
        )
    }

    private func hit(_ image: EmulatedImage, query: String, context: EmulationContext) -> [String: Any] {
        let thumb = context.thumbnailURL(image)
        let slug = query.lowercased().replacingOccurrences(of: " ", with: "-")
        return [
            "id": Int(image.id)!,
            "pageURL": "https://pixabay.com/photos/\(slug)-\(image.id)/",
            "type": "photo",
            "tags": "\(query.lowercased()), emulated, test",
            "previewURL": thumb,
            "previewWidth": image.width,
            "previewHeight": image.height,
            "webformatURL": thumb,
            "webformatWidth": image.width,
            "webformatHeight": image.height,
            "largeImageURL": image.url.absoluteString,
            "imageWidth": image.width,
            "imageHeight": image.height,
            "imageSize": image.byteCount,
            "views": 1_000 + image.index,
            "downloads": 500 + image.index,
            "collections": image.index % 40,
            "likes": image.index % 90,
            "comments": image.index % 9,
            "user_id": 1_000_000 + image.index % 23,
            "user": "Emulated\(image.index % 23)",
            "userImageURL": "",
        ]
    }

    func serverError(status: Int) -> Response {
        EmulatorJSON.text("[ERROR \(status)] \(status >= 500 ? "Internal server error" : "Request failed").", status: status)
    }

    func rateLimited(retryAfter: Int) -> Response {
        EmulatorJSON.text("[ERROR 429] Too many requests.", status: 429, headers: [("Retry-After", String(retryAfter)), ("X-RateLimit-Limit", "100"), ("X-RateLimit-Remaining", "0"), ("X-RateLimit-Reset", String(retryAfter))])
    }

    func errorInBody(retryAfter: Int) -> Response {
        EmulatorJSON.response(["error": "Search is temporarily unavailable"])
    }
}
