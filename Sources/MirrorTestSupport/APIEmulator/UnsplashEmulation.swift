import Foundation

/// `GET /unsplash/search/photos?query=&page=&per_page=` with `Authorization: Client-ID <key>` (or `client_id=`).
///
/// - `{"total","total_pages","results":[{id, created_at, updated_at, width, height, color, blur_hash, description,
///   alt_description, urls:{raw, full (the image, `?fm=png&q=85`), regular, small, thumb}, links, user, tags, likes}]}`
///   with `Link`, `X-Total`, `X-Per-Page` and `X-Ratelimit-*` headers.
/// - `per_page` default 10, clamped to 1…30; pages above 200 answer `{"total":0,"total_pages":0,"results":[]}`.
/// - Wrong or missing key: 401 `{"errors":["OAuth error: The access token is invalid"]}`. Throttling (fault) is
///   429 with the plain-text body `Rate Limit Exceeded`.
struct UnsplashEmulation: EmulatedAPI {
    static let maximumPage = 200

    func authFailure(_ request: RecordedRequest, _ context: EmulationContext) -> Response? {
        let expected = context.settings.keys.unsplash
        if let header = request.header("Authorization") {
            let accepted = header.hasPrefix("Client-ID ") && header.dropFirst("Client-ID ".count) == expected
            return accepted ? nil : invalid
        }
        return request.query["client_id"] == expected ? nil : invalid
    }

    private var invalid: Response {
        EmulatorJSON.response(["errors": ["OAuth error: The access token is invalid"]], status: 401)
    }

    func respond(_ request: RecordedRequest, _ context: EmulationContext) -> Response {
        guard let query = request.query["query"], !query.isEmpty else {
            return EmulatorJSON.response(["errors": ["query is missing"]], status: 400)
        }
        let perPage = min(max(request.intParameter("per_page", default: 10) ?? 10, 1), 30)
        let page = max(request.intParameter("page", default: 1) ?? 1, 1)
        let (available, reported) = context.corpus(.unsplash, query: query)
        let rateHeaders = [("X-Ratelimit-Limit", "5000"), ("X-Ratelimit-Remaining", "4999"), ("X-Per-Page", String(perPage))]
        if page > Self.maximumPage {
            return EmulatorJSON.response(["total": 0, "total_pages": 0, "results": [Any]()], headers: rateHeaders + [("X-Total", "0")])
        }
        let total = max(reported, available)
        let totalPages = (total + perPage - 1) / perPage
        let start = (page - 1) * perPage
        let end = min(start + perPage, available)
        let images = start < end ? context.images(.unsplash, query: query, range: start..<end) : []
        let base = context.url(APIEmulator.Provider.unsplash.endpointPath)
        let encoded = query.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? query
        var links: [String] = []
        if page > 1 {
            links.append("<\(base)?page=1&per_page=\(perPage)&query=\(encoded)>; rel=\"first\"")
            links.append("<\(base)?page=\(page - 1)&per_page=\(perPage)&query=\(encoded)>; rel=\"prev\"")
        }
        if page < totalPages {
            links.append("<\(base)?page=\(totalPages)&per_page=\(perPage)&query=\(encoded)>; rel=\"last\"")
            links.append("<\(base)?page=\(page + 1)&per_page=\(perPage)&query=\(encoded)>; rel=\"next\"")
        }
        var headers = rateHeaders + [("X-Total", String(total))]
        if !links.isEmpty { headers.append(("Link", links.joined(separator: ", "))) }
        return EmulatorJSON.response(
            ["total": total, "total_pages": totalPages, "results": images.map { photo($0, query: query, context: context) }],
            headers: headers
        )
    }

    private func photo(_ image: EmulatedImage, query: String, context: EmulationContext) -> [String: Any] {
        let raw = image.url.absoluteString + "?ixid=emulated&ixlib=rb-4.0.3"
        let user = "emulated\(image.index % 17)"
        return [
            "id": image.id,
            "slug": "\(query.lowercased().replacingOccurrences(of: " ", with: "-"))-\(image.id)",
            "created_at": "2019-05-06T07:08:09Z",
            "updated_at": "2024-01-02T03:04:05Z",
            "width": image.width,
            "height": image.height,
            "color": "#8c7359",
            "blur_hash": "LFC$yHwc8^$yIAS$%M%00KxukYIp",
            "description": image.index % 3 == 0 ? NSNull() as Any : "An emulated photo of \(query)",
            "alt_description": "\(query) \(image.index + 1)",
            "urls": [
                "raw": raw,
                "full": raw + "&fm=png&q=85",
                "regular": raw + "&fm=png&q=80&w=1080",
                "small": raw + "&fm=png&q=80&w=400",
                "thumb": context.thumbnailURL(image),
            ],
            "links": [
                "self": "https://api.unsplash.com/photos/\(image.id)",
                "html": "https://unsplash.com/photos/\(image.id)",
                "download": "https://unsplash.com/photos/\(image.id)/download",
                "download_location": context.url("/unsplash/photos/\(image.id)/download"),
            ],
            "user": ["id": "user\(image.index % 17)", "username": user, "name": "Emulated \(image.index % 17)", "links": ["html": "https://unsplash.com/@\(user)"]],
            "tags": [["type": "search", "title": query.lowercased()]],
            "likes": image.index % 50,
        ]
    }

    func serverError(status: Int) -> Response {
        EmulatorJSON.response(["errors": [status >= 500 ? "Internal server error" : "Request failed"]], status: status)
    }

    func rateLimited(retryAfter: Int) -> Response {
        EmulatorJSON.text("Rate Limit Exceeded", status: 429, headers: [("Retry-After", String(retryAfter)), ("X-Ratelimit-Limit", "50"), ("X-Ratelimit-Remaining", "0")])
    }

    func errorInBody(retryAfter: Int) -> Response {
        EmulatorJSON.response(["errors": ["Search is temporarily unavailable"]])
    }
}
