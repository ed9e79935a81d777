import Foundation

/// `GET /flickr/services/rest/?method=flickr.photos.search&api_key=&format=json&nojsoncallback=1&text=&page=&per_page=&extras=`.
///
/// - `{"photos":{"page","pages","perpage","total":"<string>","photo":[…]},"stat":"ok"}`; `id`, `owner`, `secret`,
///   `server`, `license` strings, `farm` and `is*` ints. The largest `url_X` among the requested `extras` (o, l, c,
///   z, m, n, w, s, q, sq, t) points at the image with its real `width_X`/`height_X` (ints); `o_dims` adds
///   `o_width`/`o_height` as strings. Without any `url_X` extra the client must build URLs itself.
/// - `per_page` default 100, clamped to 1…500. Only the first 4,000 results are reachable: a deeper page repeats
///   the last reachable page (its `page` field echoes the request); beyond a smaller corpus the list is empty.
/// - Errors in 200 bodies: wrong key → code 100 "Invalid API Key (Key has invalid format)", unknown method → 112,
///   no `text`/`tags` → 3. Without `nojsoncallback=1` the body is JSONP `jsonFlickrApi({…})`.
struct FlickrEmulation: EmulatedAPI {
    static let resultCap = 4_000
    static let sizes = ["o", "l", "c", "z", "m", "n", "w", "s", "q", "sq", "t"]

    private func body(_ object: [String: Any], _ request: RecordedRequest) -> Response {
        let json = EmulatorJSON.data(object)
        if request.query["format"] == "json", request.query["nojsoncallback"] != "1" {
            let name = request.query["jsoncallback"] ?? "jsonFlickrApi"
            return .status(200, headers: [("Content-Type", "text/javascript; charset=utf-8")], body: Data("\(name)(".utf8) + json + Data(")".utf8))
        }
        return .status(200, headers: [("Content-Type", "application/json; charset=utf-8")], body: json)
    }

    private func fail(_ code: Int, _ message: String, _ request: RecordedRequest) -> Response {
        body(["stat": "fail", "code": code, "message": message], request)
    }

    func authFailure(_ request: RecordedRequest, _ context: EmulationContext) -> Response? {
        guard let key = request.query["api_key"], !key.isEmpty else {
            return fail(100, "Invalid API Key (Key not found)", request)
        }
        return key == context.settings.keys.flickr ? nil : fail(100, "Invalid API Key (Key has invalid format)", request)
    }

    func respond(_ request: RecordedRequest, _ context: EmulationContext) -> Response {
        let q = request.query
        let method = q["method"] ?? ""
        guard method == "flickr.photos.search" else {
            return fail(112, "Method \"\(method)\" not found", request)
        }
        let text = (q["text"]?.isEmpty == false ? q["text"] : nil) ?? q["tags"]
        guard let text, !text.isEmpty else {
            return fail(3, "Parameterless searches have been disabled. Please use flickr.photos.getRecent instead.", request)
        }
        let perPage = min(max(request.intParameter("per_page", default: 100) ?? 100, 1), 500)
        let page = max(request.intParameter("page", default: 1) ?? 1, 1)
        let (available, reported) = context.corpus(.flickr, query: text)
        let total = max(reported, available)
        let pages = (total + perPage - 1) / perPage
        let reachable = min(available, Self.resultCap)
        var start = (page - 1) * perPage
        if start >= Self.resultCap, reachable > 0 {
            // Past the 4,000th result Flickr repeats itself: serve the last reachable page again.
            start = ((reachable - 1) / perPage) * perPage
        }
        let end = min(start + perPage, reachable)
        let images = start < end ? context.images(.flickr, query: text, range: start..<end) : []
        let extras = Set((q["extras"] ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) })
        let photos = images.map { photo($0, text: text, extras: extras) }
        return body([
            "photos": ["page": page, "pages": pages, "perpage": perPage, "total": String(total), "photo": photos],
            "stat": "ok",
        ], request)
    }

    private func photo(_ image: EmulatedImage, text: String, extras: Set<String>) -> [String: Any] {
        var photo: [String: Any] = [
            "id": image.id,
            "owner": "\(10_000_000 + image.index % 97)@N0\(image.index % 8)",
            "secret": EmulatedIDs.hex(EmulatedIDs.splitmix(image.contentSeed) & 0xFF_FFFF_FFFF, width: 10),
            "server": "65535",
            "farm": 66,
            "title": "\(text.capitalizedFirst) \(image.index + 1)",
            "ispublic": 1,
            "isfriend": 0,
            "isfamily": 0,
        ]
        if extras.contains("license") { photo["license"] = String([4, 5, 9, 10, 1, 2][image.index % 6]) }
        if extras.contains("owner_name") { photo["ownername"] = "emulated\(image.index % 97)" }
        if extras.contains("description") { photo["description"] = ["_content": "An emulated photo of \(text)."] }
        if extras.contains("tags") { photo["tags"] = text.lowercased() + " emulated" }
        if extras.contains("original_format") {
            photo["originalsecret"] = EmulatedIDs.hex(EmulatedIDs.splitmix(image.contentSeed ^ 1) & 0xFF_FFFF_FFFF, width: 10)
            photo["originalformat"] = "png"
        }
        if extras.contains("o_dims") {
            photo["o_width"] = String(image.width)
            photo["o_height"] = String(image.height)
        }
        if let size = Self.sizes.first(where: { extras.contains("url_\($0)") }) {
            photo["url_\(size)"] = image.url.absoluteString
            photo["width_\(size)"] = image.width
            photo["height_\(size)"] = image.height
        }
        return photo
    }

    func serverError(status: Int) -> Response {
        EmulatorJSON.text("<html><body><h1>\(status) Server Error</h1></body></html>\n", status: status, contentType: "text/html")
    }

    func rateLimited(retryAfter: Int) -> Response {
        EmulatorJSON.text("Too Many Requests\n", status: 429, headers: [("Retry-After", String(retryAfter))])
    }

    func errorInBody(retryAfter: Int) -> Response {
        EmulatorJSON.response(["stat": "fail", "code": 105, "message": "Service currently unavailable"])
    }
}
