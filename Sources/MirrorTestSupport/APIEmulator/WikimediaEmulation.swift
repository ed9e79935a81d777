import Foundation

/// `GET /wikimedia/w/api.php?action=query&format=json&generator=search&gsrsearch=&gsrlimit=&gsroffset=&prop=imageinfo&iiprop=…`
/// in formatversion 1: `pages` keyed by page id (whose order is not the rank), each with `index`, `ns: 6`, `title`,
/// `imagerepository` and `imageinfo` holding the `iiprop` fields asked for (`url`, `size`, `mime`, `sha1`,
/// `extmetadata` filtered by `iiextmetadatafilter`, `timestamp`, `user`); `continue` `{"gsroffset", "continue":
/// "gsroffset||"}` while more exist, `batchcomplete: ""` always; a search without hits is `{"batchcomplete": ""}`.
/// Errors come in 200 bodies (`missingparam`, `badinteger`, `badvalue`, `maxlag`). No key.
struct WikimediaEmulation: EmulatedAPI {
    func authFailure(_ request: RecordedRequest, _ context: EmulationContext) -> Response? { nil }

    private func apiError(_ code: String, _ info: String, headers: [(String, String)] = [], extra: [String: Any] = [:]) -> Response {
        var error: [String: Any] = ["code": code, "info": info, "*": "See https://commons.wikimedia.org/w/api.php for API usage."]
        error.merge(extra) { $1 }
        return EmulatorJSON.response(["error": error, "servedby": "mw-emulator"], headers: headers + [("MediaWiki-API-Error", code)])
    }

    func respond(_ request: RecordedRequest, _ context: EmulationContext) -> Response {
        let q = request.query
        guard q["action"] == "query" else {
            return apiError("badvalue", "Unrecognized value for parameter \"action\": \(q["action"] ?? "").")
        }
        guard q["generator"] == "search" else {
            return apiError("badvalue", "The emulator supports only generator=search.")
        }
        guard let search = q["gsrsearch"], !search.isEmpty else {
            return apiError("missingparam", "The \"gsrsearch\" parameter must be set.")
        }
        var limit: Int
        if q["gsrlimit"] == "max" {
            limit = 500
        } else if let value = request.intParameter("gsrlimit", default: 10) {
            limit = min(max(value, 1), 500)
        } else {
            return apiError("badinteger", "Invalid value \"\(q["gsrlimit"] ?? "")\" for integer parameter \"gsrlimit\".")
        }
        guard let offset = request.intParameter("gsroffset", default: 0), offset >= 0 else {
            return apiError("badinteger", "Invalid value \"\(q["gsroffset"] ?? "")\" for integer parameter \"gsroffset\".")
        }
        limit = max(limit, 1)

        let (available, _) = context.corpus(.wikimedia, query: search)
        let end = min(offset + limit, available)
        guard offset < end else { return EmulatorJSON.response(["batchcomplete": ""]) }
        let images = context.images(.wikimedia, query: search, range: offset..<end)

        let props = Set((q["prop"] ?? "").split(separator: "|").map(String.init))
        let iiprop = Set((q["iiprop"] ?? "timestamp|user").split(separator: "|").map(String.init))
        let filter = q["iiextmetadatafilter"].map { Set($0.split(separator: "|").map(String.init)) }
        var pages: [String: Any] = [:]
        for image in images {
            let fileName = "\(APIEmulator.normalizedQuery(search).capitalizedFirst) emulated \(image.id).png"
            var page: [String: Any] = [
                "pageid": Int(image.id)!,
                "ns": 6,
                "title": "File:" + fileName,
                "index": image.index + 1,
                "imagerepository": "local",
            ]
            if props.contains("imageinfo") {
                page["imageinfo"] = [info(image, fileName: fileName, iiprop: iiprop, filter: filter, context: context)]
            }
            pages[image.id] = page
        }
        var body: [String: Any] = ["batchcomplete": "", "query": ["pages": pages]]
        if end < available {
            body["continue"] = ["gsroffset": end, "continue": "gsroffset||"]
        }
        return EmulatorJSON.response(body)
    }

    private func info(_ image: EmulatedImage, fileName: String, iiprop: Set<String>, filter: Set<String>?, context: EmulationContext) -> [String: Any] {
        let underscored = fileName.replacingOccurrences(of: " ", with: "_")
        var info: [String: Any] = [:]
        if iiprop.contains("timestamp") { info["timestamp"] = "2021-03-04T05:06:07Z" }
        if iiprop.contains("user") { info["user"] = "Emulated uploader \(image.index % 5)" }
        if iiprop.contains("size") {
            info["size"] = image.byteCount
            info["width"] = image.width
            info["height"] = image.height
        }
        if iiprop.contains("url") {
            info["url"] = image.url.absoluteString
            info["descriptionurl"] = "https://commons.wikimedia.org/wiki/File:" + (underscored.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed) ?? underscored)
            info["descriptionshorturl"] = "https://commons.wikimedia.org/w/index.php?curid=\(image.id)"
        }
        if iiprop.contains("mime") { info["mime"] = "image/png" }
        if iiprop.contains("mediatype") { info["mediatype"] = "BITMAP" }
        if iiprop.contains("sha1") { info["sha1"] = context.sha1(image) }
        if iiprop.contains("extmetadata") {
            let all: [String: String] = [
                "ObjectName": fileName.replacingOccurrences(of: ".png", with: ""),
                "ImageDescription": "An emulated image, number \(image.index + 1).",
                "Artist": "<a href=\"https://commons.wikimedia.org/wiki/User:Emulated\" title=\"User:Emulated\">Emulated \(image.index % 5)</a>",
                "License": "cc-by-sa-4.0",
                "LicenseShortName": "CC BY-SA 4.0",
                "LicenseUrl": "https://creativecommons.org/licenses/by-sa/4.0",
                "AttributionRequired": "true",
            ]
            var metadata: [String: Any] = [:]
            for (key, value) in all where filter?.contains(key) ?? true {
                metadata[key] = ["value": value, "source": key == "ObjectName" || key == "ImageDescription" ? "commons-desc-page" : "commons-templates"]
            }
            info["extmetadata"] = metadata
        }
        return info
    }

    func serverError(status: Int) -> Response {
        EmulatorJSON.text("<!DOCTYPE html><html><body><h1>Wikimedia Error</h1><p>Our servers are currently under maintenance or experiencing a technical problem.</p></body></html>\n", status: status, contentType: "text/html; charset=utf-8")
    }

    func rateLimited(retryAfter: Int) -> Response {
        EmulatorJSON.text("Too many requests\n", status: 429, headers: [("Retry-After", String(retryAfter))])
    }

    func errorInBody(retryAfter: Int) -> Response {
        apiError(
            "maxlag", "Waiting for 10.64.16.8: \(retryAfter) seconds lagged.",
            headers: [("Retry-After", String(retryAfter)), ("X-Database-Lag", String(retryAfter))],
            extra: ["host": "10.64.16.8", "lag": retryAfter, "type": "db"]
        )
    }
}
