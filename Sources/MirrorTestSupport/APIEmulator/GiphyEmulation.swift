import Foundation

/// `GET /giphy/v1/gifs/search?api_key=&q=&limit=&offset=&rating=`.
///
/// - `{"data":[GIF…],"pagination":{"total_count","count","offset"},"meta":{"status":200,"msg":"OK","response_id"}}`;
///   `images.original` has `url` (the image), `width`, `height`, `size`, `frames` — **all strings** — plus
///   `fixed_width_still` and `preview_gif` renditions pointing at `/thumbs/…`.
/// - `limit` default 25, clamped to 1…50; `offset` above 4999 answers `data: []` with pagination `{0, 0, 0}`.
/// - Wrong or missing key: 401 `{"data":[],"meta":{"status":401,"msg":"Unauthorized","response_id":""}}`.
struct GiphyEmulation: EmulatedAPI {
    static let maximumOffset = 4_999

    func authFailure(_ request: RecordedRequest, _ context: EmulationContext) -> Response? {
        request.query["api_key"] == context.settings.keys.giphy ? nil : meta(401, "Unauthorized")
    }

    private func meta(_ status: Int, _ message: String, headers: [(String, String)] = []) -> Response {
        EmulatorJSON.response(["data": [Any](), "meta": ["status": status, "msg": message, "response_id": ""]], status: status, headers: headers)
    }

    func respond(_ request: RecordedRequest, _ context: EmulationContext) -> Response {
        let query = request.query["q"] ?? ""
        let limit = min(max(request.intParameter("limit", default: 25) ?? 25, 1), 50)
        let offset = max(request.intParameter("offset", default: 0) ?? 0, 0)
        let responseID = EmulatedIDs.hex(EmulatedIDs.mix(UInt64(EmulatedIDs.queryKey(query)), UInt64(offset)), width: 16)
        let metaOK: [String: Any] = ["status": 200, "msg": "OK", "response_id": responseID]
        if offset > Self.maximumOffset {
            return EmulatorJSON.response(["data": [Any](), "pagination": ["total_count": 0, "count": 0, "offset": 0], "meta": metaOK])
        }
        let (available, reported) = context.corpus(.giphy, query: query)
        let end = min(offset + limit, available)
        let images = offset < end ? context.images(.giphy, query: query, range: offset..<end) : []
        let data = images.map { gif($0, query: query, context: context) }
        return EmulatorJSON.response([
            "data": data,
            "pagination": ["total_count": max(reported, available), "count": data.count, "offset": offset],
            "meta": metaOK,
        ], headers: [("Retry-After", "0")])
    }

    private func gif(_ image: EmulatedImage, query: String, context: EmulationContext) -> [String: Any] {
        let slug = "\(query.lowercased().replacingOccurrences(of: " ", with: "-"))-\(image.id)"
        let thumb = context.thumbnailURL(image)
        var gif: [String: Any] = [
            "type": "gif",
            "id": image.id,
            "url": "https://giphy.com/gifs/\(slug)",
            "slug": slug,
            "bitly_gif_url": "https://gph.is/g/\(image.id)",
            "bitly_url": "https://gph.is/g/\(image.id)",
            "embed_url": "https://giphy.com/embed/\(image.id)",
            "username": image.index % 2 == 0 ? "emulated\(image.index % 11)" : "",
            "source": "",
            "title": "\(query.capitalizedFirst) GIF \(image.index + 1)",
            "rating": "g",
            "content_url": "",
            "source_tld": "",
            "source_post_url": "",
            "is_sticker": 0,
            "import_datetime": "2020-01-02 03:04:05",
            "trending_datetime": "0000-00-00 00:00:00",
            "images": [
                "original": [
                    "url": image.url.absoluteString,
                    "width": String(image.width),
                    "height": String(image.height),
                    "size": String(image.byteCount),
                    "frames": "1",
                    "hash": EmulatedIDs.hex(image.contentSeed, width: 16),
                ],
                "fixed_width_still": ["url": thumb, "width": String(image.width), "height": String(image.height)],
                "preview_gif": ["url": thumb, "width": String(image.width), "height": String(image.height), "size": String(image.byteCount)],
            ],
        ]
        if image.index % 2 == 0 {
            gif["user"] = [
                "display_name": "Emulated \(image.index % 11)",
                "username": "emulated\(image.index % 11)",
                "profile_url": "https://giphy.com/emulated\(image.index % 11)/",
            ]
        }
        return gif
    }

    func serverError(status: Int) -> Response {
        meta(status, status >= 500 ? "Internal Server Error" : "Error")
    }

    func rateLimited(retryAfter: Int) -> Response {
        meta(429, "API rate limit exceeded", headers: [("Retry-After", String(retryAfter))])
    }

    func errorInBody(retryAfter: Int) -> Response {
        // The "synthetic" answer (GiphyAPI #195/#197): 200, data [], no pagination, empty response_id.
        EmulatorJSON.response(["data": [Any](), "meta": ["msg": "OK", "response_id": "", "status": 200]])
    }
}
