import Foundation
import NIOHTTP1

/// The routes every ``TestServer`` answers without configuration, so that tests of the built binary can
/// provoke any behaviour by URL alone.
///
/// Bodies are prefixes of ``DeterministicBytes`` unless stated otherwise. Numbers that fail to parse fall back
/// to the default; a negative or inconsistent number gets `400`.
///
/// | route | response |
/// | --- | --- |
/// | `/bytes/{n}` | `n` bytes with `Content-Length` |
/// | `/status/{code}` | that status, body `"<code> <reason>\n"` (`text/plain`); `?retry-after=V` adds `Retry-After: V` |
/// | `/redirect/{n}` | `302` chain of `n` hops, `/redirect/n` → `/redirect/n-1` … → `/bytes/16`, or to `?to=<path>`; `n = 0` answers as the target |
/// | `/loop` | `302` to `/loop`, forever |
/// | `/redirect-to?url=U[&status=S]` | `302` (or `S`) with `Location: U`, `U` percent-decoded (`file:///etc/passwd`, `ftp://…`) |
/// | `/drip?bytes=N&chunk=C&ms=M` | ``Response/Body/drip(_:chunkSize:interval:)``; defaults 100, 10, 100 |
/// | `/stall?prefix=N&length=L` | ``Response/Body/stall(prefix:declaredLength:)``; defaults 0, `N + 1024` |
/// | `/truncated?send=N&length=L` | ``Response/Body/truncated(_:declaredLength:)``; defaults 512, `2 N + 1` |
/// | `/truncated-chunked?send=N` | ``Response/Body/truncatedChunked(_:)``; default 512 |
/// | `/until-close?bytes=N` | ``Response/Body/untilClose(_:)``; default 512 |
/// | `/reset?send=N&length=L` | ``Response/Body/reset(prefix:declaredLength:)``; defaults 512, `2 N + 1` |
/// | `/huge?size=N&length=0\|1` | ``Response/Body/generated(size:includeContentLength:)``; defaults 1 GiB, `1` (with length) |
/// | `/headers` | the request headers as a JSON object, names lowercased, repeated headers joined with `", "` |
/// | `/slow?ms=M` | 16 bytes after an extra delay of `M` ms (default 1000) |
/// | `/echo` | `200` with the request body and its `Content-Type` |
/// | anything else | `404` |
public enum BuiltinRoutes {
    static func response(for request: RecordedRequest) -> Response {
        let path = request.path
        let query = request.query
        func number(_ name: String, default value: Int) -> Int {
            query[name].flatMap { Int($0) } ?? value
        }
        func pattern(_ count: Int) -> Data {
            DeterministicBytes.data(count: count)
        }

        if let n = suffix(of: path, after: "/bytes/") {
            guard let count = Int(n), count >= 0 else { return badRequest("bad byte count: \(n)") }
            return Response(headers: [("Content-Type", "application/octet-stream")], body: .generated(size: count, includeContentLength: true))
        }
        if let code = suffix(of: path, after: "/status/") {
            guard let status = Int(code), (100...999).contains(status) else { return badRequest("bad status: \(code)") }
            var headers = [("Content-Type", "text/plain")]
            if let retryAfter = query["retry-after"] { headers.append(("Retry-After", retryAfter)) }
            return .status(status, headers: headers, body: Data("\(status) \(reason(status))\n".utf8))
        }
        if let hops = suffix(of: path, after: "/redirect/") {
            guard let n = Int(hops), n >= 0 else { return badRequest("bad hop count: \(hops)") }
            let target = query["to"] ?? "/bytes/16"
            switch n {
            case 0:
                let (targetPath, targetQuery) = RecordedRequest.split(uri: target)
                var forwarded = request
                forwarded.path = targetPath
                forwarded.query = targetQuery
                forwarded.rawURI = target
                // Each level consumes part of `to`, so nested targets always terminate.
                return response(for: forwarded)
            case 1:
                return .redirect(to: target)
            default:
                let carried = query["to"].map { "?to=" + percentEncoded($0) } ?? ""
                return .redirect(to: "/redirect/\(n - 1)\(carried)")
            }
        }

        switch path {
        case "/loop":
            return .redirect(to: "/loop")
        case "/redirect-to":
            guard let location = query["url"] else { return badRequest("missing url") }
            return .redirect(to: location, status: number("status", default: 302))
        case "/drip":
            let count = number("bytes", default: 100)
            let chunk = number("chunk", default: 10)
            let ms = number("ms", default: 100)
            guard count >= 0, chunk > 0, ms >= 0 else { return badRequest("bad drip parameters") }
            return Response(body: .drip(pattern(count), chunkSize: chunk, interval: .milliseconds(ms)))
        case "/stall":
            let prefix = number("prefix", default: 0)
            let length = number("length", default: prefix + 1024)
            guard prefix >= 0, length >= prefix else { return badRequest("bad stall parameters") }
            return Response(body: .stall(prefix: pattern(prefix), declaredLength: length))
        case "/truncated":
            let send = number("send", default: 512)
            let length = number("length", default: 2 * send + 1)
            guard send >= 0, length >= send else { return badRequest("bad truncated parameters") }
            return Response(body: .truncated(pattern(send), declaredLength: length))
        case "/truncated-chunked":
            let send = number("send", default: 512)
            guard send >= 0 else { return badRequest("bad truncated-chunked parameters") }
            return Response(body: .truncatedChunked(pattern(send)))
        case "/until-close":
            let count = number("bytes", default: 512)
            guard count >= 0 else { return badRequest("bad until-close parameters") }
            return Response(body: .untilClose(pattern(count)))
        case "/reset":
            let send = number("send", default: 512)
            let length = number("length", default: 2 * send + 1)
            guard send >= 0, length >= send else { return badRequest("bad reset parameters") }
            return Response(body: .reset(prefix: pattern(send), declaredLength: length))
        case "/huge":
            let size = number("size", default: 1 << 30)
            guard size >= 0 else { return badRequest("bad size") }
            return Response(
                headers: [("Content-Type", "application/octet-stream")],
                body: .generated(size: size, includeContentLength: query["length"] != "0")
            )
        case "/headers":
            var object: [String: String] = [:]
            for (name, value) in request.headers {
                let key = name.lowercased()
                object[key] = object[key].map { $0 + ", " + value } ?? value
            }
            let json = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data("{}".utf8)
            return .ok(json, contentType: "application/json")
        case "/slow":
            let ms = number("ms", default: 1000)
            guard ms >= 0 else { return badRequest("bad delay") }
            var response = Response.ok(pattern(16))
            response.latency = .milliseconds(ms)
            return response
        case "/echo":
            return .ok(request.body, contentType: request.header("Content-Type") ?? "application/octet-stream")
        default:
            return .status(404, headers: [("Content-Type", "text/plain")], body: Data("no route for \(path)\n".utf8))
        }
    }

    private static func suffix(of path: String, after prefix: String) -> String? {
        guard path.hasPrefix(prefix) else { return nil }
        let rest = String(path.dropFirst(prefix.count))
        return rest.isEmpty || rest.contains("/") ? nil : rest
    }

    private static func badRequest(_ message: String) -> Response {
        .status(400, headers: [("Content-Type", "text/plain")], body: Data((message + "\n").utf8))
    }

    private static func reason(_ status: Int) -> String {
        HTTPResponseStatus(statusCode: status).reasonPhrase
    }

    private static func percentEncoded(_ value: String) -> String {
        var allowed = CharacterSet.urlQueryAllowed
        allowed.remove(charactersIn: "&=+?#")
        return value.addingPercentEncoding(withAllowedCharacters: allowed) ?? value
    }
}
