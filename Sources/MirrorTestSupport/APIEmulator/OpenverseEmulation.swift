import Foundation

/// `GET /openverse/v1/images/?q=&page=&page_size=`, shaped like the 2022–2024 API (`result_count`, `page_count`,
/// `page_size`, `page`, `results`).
///
/// - `page` 1…20, else 400 `{"detail":{"page":["Ensure this value is less than or equal to 20."]}}`.
/// - `page_size` default 20; above 20 without the configured bearer token 401 `{"detail":"Ensure this value is less
///   than or equal to 20."}`; with it up to 500.
/// - `result_count` saturates at 10,000; `page_count = ceil(result_count / page_size)`, lowered to the current page
///   when the page comes back short; an empty search is `0, 0`.
/// - No key; a wrong `Authorization: Bearer` gets 401 `{"detail":"Invalid token."}`.
struct OpenverseEmulation: EmulatedAPI {
    static let maximumPage = 20
    static let anonymousPageSize = 20
    static let authenticatedPageSize = 500
    static let saturation = 10_000

    func authFailure(_ request: RecordedRequest, _ context: EmulationContext) -> Response? {
        guard let token = bearer(request) else { return nil }
        return token == context.settings.keys.openverseToken ? nil : EmulatorJSON.response(["detail": "Invalid token."], status: 401)
    }

    private func bearer(_ request: RecordedRequest) -> String? {
        guard let value = request.header("Authorization"), value.lowercased().hasPrefix("bearer ") else { return nil }
        return String(value.dropFirst(7)).trimmingCharacters(in: .whitespaces)
    }

    func respond(_ request: RecordedRequest, _ context: EmulationContext) -> Response {
        let query = request.query["q"] ?? ""
        guard let page = request.intParameter("page", default: 1) else {
            return EmulatorJSON.response(["detail": ["page": ["A valid integer is required."]]], status: 400)
        }
        if page < 1 {
            return EmulatorJSON.response(["detail": ["page": ["Ensure this value is greater than or equal to 1."]]], status: 400)
        }
        if page > Self.maximumPage {
            return EmulatorJSON.response(["detail": ["page": ["Ensure this value is less than or equal to \(Self.maximumPage)."]]], status: 400)
        }
        let sizeName = request.query["page_size"] != nil ? "page_size" : "pagesize"
        guard let pageSize = request.intParameter(sizeName, default: Self.anonymousPageSize) else {
            return EmulatorJSON.response(["detail": ["page_size": ["A valid integer is required."]]], status: 400)
        }
        if pageSize < 1 {
            return EmulatorJSON.response(["detail": ["page_size": ["Ensure this value is greater than or equal to 1."]]], status: 400)
        }
        let authenticated = bearer(request) != nil
        if !authenticated, pageSize > Self.anonymousPageSize {
            return EmulatorJSON.response(["detail": "Ensure this value is less than or equal to \(Self.anonymousPageSize)."], status: 401)
        }
        if pageSize > Self.authenticatedPageSize {
            return EmulatorJSON.response(["detail": ["page_size": ["Ensure this value is less than or equal to \(Self.authenticatedPageSize)."]]], status: 400)
        }

        let (available, reported) = context.corpus(.openverse, query: query)
        let start = (page - 1) * pageSize
        let end = min(start + pageSize, available)
        let images = start < end ? context.images(.openverse, query: query, range: start..<end) : []
        let resultCount = available == 0 ? 0 : min(max(reported, available), Self.saturation)
        var pageCount = resultCount == 0 ? 0 : (resultCount + pageSize - 1) / pageSize
        if resultCount > 0, images.count < pageSize { pageCount = page }
        let body: [String: Any] = [
            "result_count": resultCount,
            "page_count": pageCount,
            "page_size": pageSize,
            "page": page,
            "results": images.map { item($0, query: query, context: context) },
        ]
        return EmulatorJSON.response(body, headers: [
            ("Cache-Control", "max-age=14400"),
            ("X-RateLimit-Limit-anon_burst", "20/min"),
            ("X-RateLimit-Available-anon_burst", "19"),
        ])
    }

    private func item(_ image: EmulatedImage, query: String, context: EmulationContext) -> [String: Any] {
        let title = "\(query.capitalizedFirst) \(image.index + 1)"
        let creator = "Emulated Creator \(image.index % 7)"
        let detail = context.url(OpenverseEmulation.detailPath(image.id))
        let override = context.settings.openverseOverrides[image.index]
        return [
            "id": override?.id ?? image.id,
            "title": override?.title ?? title,
            "indexed_on": "2023-05-01T12:00:00Z",
            "foreign_landing_url": "https://example.org/openverse/\(image.id)",
            "url": image.url.absoluteString,
            "creator": creator,
            "creator_url": "https://example.org/creators/\(image.index % 7)",
            "license": "by",
            "license_version": "4.0",
            "license_url": "https://creativecommons.org/licenses/by/4.0/",
            "provider": "emulator",
            "source": "emulator",
            "category": "photograph",
            "filesize": image.byteCount,
            "filetype": "png",
            "tags": [["accuracy": NSNull(), "name": query.isEmpty ? "image" : query]],
            "attribution": "\"\(title)\" by \(creator) is licensed under CC BY 4.0. To view a copy of this license, visit https://creativecommons.org/licenses/by/4.0/.",
            "fields_matched": ["title"],
            "mature": false,
            "height": image.height,
            "width": image.width,
            "thumbnail": detail + "thumb/",
            "detail_url": detail,
            "related_url": detail + "related/",
            "unstable__sensitivity": [String](),
        ]
    }

    static func detailPath(_ id: String) -> String {
        APIEmulator.Provider.openverse.endpointPath + id + "/"
    }

    func serverError(status: Int) -> Response {
        EmulatorJSON.response(["detail": status >= 500 ? "An internal server error occurred." : "Error \(status)."], status: status)
    }

    func rateLimited(retryAfter: Int) -> Response {
        EmulatorJSON.response(["detail": "Request was throttled. Expected available in \(retryAfter) seconds."], status: 429, headers: [("Retry-After", String(retryAfter))])
    }

    func errorInBody(retryAfter: Int) -> Response {
        // Openverse has no in-body error; a 200 without `results` is the nearest glitch.
        EmulatorJSON.response(["detail": "Search backend is unavailable."])
    }
}
