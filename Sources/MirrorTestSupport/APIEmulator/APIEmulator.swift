import Foundation
import MirrorSync

/// Emulates the eight image search APIs `mirror` speaks (Openverse, Wikimedia Commons, Flickr, Giphy, Google
/// Custom Search, Pexels, Unsplash, Pixabay) on a ``TestServer``, with an image host on the same server.
///
/// Responses have the JSON structure and types of the real samples in `Tests/MirrorKitTests/Fixtures`, the
/// real caps, the real authentication errors, and image URLs that point at generated PNGs whose dimensions are
/// the ones the API reports. Everything is deterministic: the same (provider, query, index) always gives the
/// same id and bytes.
///
/// | path | answers |
/// | --- | --- |
/// | `/openverse/v1/images/` | Openverse search (`q`, `page` ≤ 20, `page_size` ≤ 20 anonymous / 500 with the token) |
/// | `/openverse/v1/images/<id>/thumb/` | the result's PNG (thumbnail; not counted as an image request) |
/// | `/wikimedia/w/api.php` | MediaWiki `action=query&generator=search` (`gsrsearch`, `gsrlimit`, `gsroffset`, `prop=imageinfo`) |
/// | `/flickr/services/rest/` | `method=flickr.photos.search` (`api_key`, `text`/`tags`, `page`, `per_page` ≤ 500, `extras`) |
/// | `/giphy/v1/gifs/search` | Giphy search (`api_key`, `q`, `limit` ≤ 50, `offset` ≤ 4999) |
/// | `/google/customsearch/v1` | Custom Search (`key`, `cx`, `q`, `start`, `num` ≤ 10, results up to the 100th) |
/// | `/pexels/v1/search` | Pexels (`Authorization: <key>`, `query`, `page`, `per_page` ≤ 80) |
/// | `/unsplash/search/photos` | Unsplash (`Authorization: Client-ID <key>` or `client_id`, `query`, `page` ≤ 200, `per_page` ≤ 30) |
/// | `/unsplash/photos/<id>/download` | Unsplash's `download_location` (the key required; `{"url": …}`); counted per id |
/// | `/pixabay/api/` | Pixabay (`key`, `q`, `page`, `per_page` 3–200, `totalHits` ≤ 500) |
/// | `/images/<provider>/<id>.png` | the result's PNG (or its configured fault); counted per path |
/// | `/thumbs/<provider>/<id>.png` | the result's PNG, for thumbnail fields; not counted |
///
/// ```swift
/// let emulator = try APIEmulator.start()
/// defer { emulator.stop() }
/// emulator.configure { $0.corpus[.wikimedia] = .init(count: 120); $0.wikimediaOverlap = 10 }
/// emulator.failNext(2, provider: .openverse)
/// // run mirror with emulator.environment …
/// #expect(emulator.imagesRequestedMoreThanOnce.isEmpty)
/// ```
public final class APIEmulator: Sendable {
    /// The server the routes live on.
    public let server: TestServer
    let core: EmulatorCore

    /// Installs the emulator's routes on `server` (prefix routes `/<provider>/`, `/images/`, `/thumbs/`).
    /// - Parameter advertisedBaseURL: The `scheme://host:port` that endpoints and image URLs name, for a server
    ///   reached through a forwarder; defaults to the server's own `http://127.0.0.1:<port>`.
    public init(server: TestServer, settings: Settings = Settings(), advertisedBaseURL: URL? = nil) {
        self.server = server
        var base = (advertisedBaseURL ?? server.baseURL).absoluteString
        while base.hasSuffix("/") { base.removeLast() }
        let core = EmulatorCore(baseURL: base, settings: settings)
        self.core = core
        for provider in Provider.allCases {
            server.route(prefix: provider.routePrefix) { request in core.handleProviderPath(provider, request) }
        }
        server.route(prefix: "/images/") { request in core.handleImage(request, counted: true) }
        server.route(prefix: "/thumbs/") { request in core.handleImage(request, counted: false) }
    }

    /// Starts a ``TestServer`` (with `latency` before every response) and an emulator on it.
    public static func start(settings: Settings = Settings(), latency: Duration = .zero) throws -> APIEmulator {
        APIEmulator(server: try TestServer.start(latency: latency), settings: settings)
    }

    /// Stops the server (also one passed to ``init(server:settings:)``).
    public func stop() {
        server.stop()
    }

    // MARK: Settings

    /// The current settings.
    public var settings: Settings {
        core.state.withLock { $0.settings }
    }

    /// Changes settings; takes effect for requests that arrive afterwards.
    public func configure(_ body: (inout Settings) -> Void) {
        core.state.withLock { body(&$0.settings) }
    }

    // MARK: Endpoints

    /// `http://127.0.0.1:<port>` (or the advertised base URL).
    public var baseURL: URL { URL(string: core.baseURL)! }

    /// The search endpoint of `provider` (a ``Provider`` raw value or alias); traps on an unknown name.
    public func endpoint(for provider: String) -> URL {
        guard let known = Provider(name: provider) else { preconditionFailure("unknown provider \(provider)") }
        return endpoint(for: known)
    }

    /// The search endpoint of `provider`, e.g. `http://127.0.0.1:<port>/openverse/v1/images/`.
    public func endpoint(for provider: Provider) -> URL {
        URL(string: core.baseURL + provider.endpointPath)!
    }

    /// `MIRROR_<NAME>_ENDPOINT` for all eight providers plus `FLICKR_API_KEY`, `GIPHY_API_KEY`, `GOOGLE_API_KEY`,
    /// `GOOGLE_CSE_ID`, `PEXELS_API_KEY`, `UNSPLASH_ACCESS_KEY` and `PIXABAY_API_KEY` set to the accepted keys.
    public var environment: [String: String] {
        var environment: [String: String] = [:]
        for provider in Provider.allCases {
            environment[provider.endpointVariable] = endpoint(for: provider).absoluteString
        }
        let keys = settings.keys
        environment["FLICKR_API_KEY"] = keys.flickr
        environment["GIPHY_API_KEY"] = keys.giphy
        environment["GOOGLE_API_KEY"] = keys.google
        environment["GOOGLE_CSE_ID"] = keys.googleEngineID
        environment["PEXELS_API_KEY"] = keys.pexels
        environment["UNSPLASH_ACCESS_KEY"] = keys.unsplash
        environment["PIXABAY_API_KEY"] = keys.pixabay
        return environment
    }

    // MARK: Corpus

    /// Result `index` (0-based rank) of `query` at `provider`, whether or not the API would serve it.
    public func image(provider: Provider, query: String, index: Int) -> EmulatedImage {
        core.image(provider, key: EmulatedIDs.queryKey(query), index: index, settings: settings)
    }

    /// The result with this API id, or `nil` for an id the emulator never hands out.
    public func image(provider: Provider, id: String) -> EmulatedImage? {
        guard let (key, index) = EmulatedIDs.parse(provider, id: id) else { return nil }
        return core.image(provider, key: key, index: index, settings: settings)
    }

    /// The fault the image with this id answers with under the current ``Settings/imageFaults``, or `nil`.
    public func imageFault(provider: Provider, id: String) -> ImageFault? {
        EmulatorCore.imageFault(provider, id: id, rates: settings.imageFaults[provider] ?? .none)
    }

    /// Pairs of (Wikimedia result, Openverse result) of `query` whose images are byte-identical
    /// (``Settings/wikimediaOverlap`` of them, limited by both corpora).
    public func overlappingImages(query: String) -> [(wikimedia: EmulatedImage, openverse: EmulatedImage)] {
        let settings = self.settings
        let count = min(settings.wikimediaOverlap, settings.corpus(for: .wikimedia).results(for: query), settings.corpus(for: .openverse).results(for: query))
        return (0..<max(0, count)).map { (image(provider: .wikimedia, query: query, index: $0), image(provider: .openverse, query: query, index: $0)) }
    }

    // MARK: Faults

    /// Queues `fault` for the next `count` API requests of `provider` that pass the key check.
    public func inject(_ fault: APIFault, count: Int = 1, provider: Provider) {
        guard count > 0 else { return }
        core.state.withLock { $0.faults[provider, default: []].append(contentsOf: Array(repeating: fault, count: count)) }
    }

    /// The next `count` API requests of `provider` fail with `status` (default 500) and the API's error body.
    public func failNext(_ count: Int, provider: Provider, status: Int = 500) {
        inject(.status(status), count: count, provider: provider)
    }

    /// The next `count` API requests of `provider` get `429` with `Retry-After: retryAfter`.
    public func rateLimitNext(_ count: Int = 1, provider: Provider, retryAfter: Int) {
        inject(.rateLimited(retryAfter: retryAfter), count: count, provider: provider)
    }

    /// The next `count` API requests of `provider` get an error inside a `200` body; see ``APIFault/errorInBody(retryAfter:)``.
    public func errorInBodyNext(_ count: Int = 1, provider: Provider, retryAfter: Int = 1) {
        inject(.errorInBody(retryAfter: retryAfter), count: count, provider: provider)
    }

    /// The next `count` API requests of `provider` get a `200` with half a JSON body.
    public func malformedJSONNext(_ count: Int = 1, provider: Provider) {
        inject(.malformedJSON, count: count, provider: provider)
    }

    /// Faults still queued for `provider`.
    public func pendingFaults(provider: Provider) -> Int {
        core.state.withLock { $0.faults[provider]?.count ?? 0 }
    }

    /// Drops every queued API fault.
    public func clearFaults() {
        core.state.withLock { $0.faults = [:] }
    }

    // MARK: Counters

    /// Requests that reached `provider`'s search endpoint (faulted and rejected ones included).
    public func apiRequestCount(provider: Provider) -> Int {
        core.state.withLock { $0.apiRequests[provider]?.count ?? 0 }
    }

    /// ``apiRequestCount(provider:)`` by name; 0 for an unknown name.
    public func apiRequestCount(provider: String) -> Int {
        Provider(name: provider).map { apiRequestCount(provider: $0) } ?? 0
    }

    /// The requests that reached `provider`'s search endpoint, in arrival order.
    public func apiRequests(provider: Provider) -> [RecordedRequest] {
        core.state.withLock { $0.apiRequests[provider] ?? [] }
    }

    /// API requests to all providers.
    public var totalAPIRequests: Int {
        core.state.withLock { $0.apiRequests.values.reduce(0) { $0 + $1.count } }
    }

    /// Requests for the image at `path` (`/images/<provider>/<id>.png`, query ignored).
    public func imageRequestCount(path: String) -> Int {
        core.state.withLock { $0.imageRequests[path] ?? 0 }
    }

    /// Requests for the image of the result `id` of `provider`.
    public func imageRequestCount(provider: Provider, id: String) -> Int {
        imageRequestCount(path: EmulatorCore.imagePath(provider, id: id))
    }

    /// Draws the first `count` results' pictures of a query now (with ``Settings/pictureVariants``), so that serving
    /// them later is quick: under a sanitizer, drawing dozens of pictures while a client waits can outlast its stall
    /// window.
    public func drawPictures(provider: Provider, query: String, count: Int) {
        for index in 0..<count { _ = core.body(image(provider: provider, query: query, index: index)) }
    }

    /// Requests for each image path requested so far.
    public var imageRequests: [String: Int] {
        core.state.withLock { $0.imageRequests }
    }

    /// Requests under `/images/`, all paths together.
    public var totalImageRequests: Int {
        core.state.withLock { $0.imageRequests.values.reduce(0, +) }
    }

    /// Image paths requested more than once, sorted: empty when nothing was downloaded twice.
    public var imagesRequestedMoreThanOnce: [String] {
        core.state.withLock { $0.imageRequests.filter { $0.value > 1 }.map(\.key).sorted() }
    }

    /// The photo ids whose Unsplash `download_location` was requested with the right key, in arrival order.
    public var unsplashDownloadNotifications: [String] {
        core.state.withLock { $0.downloadNotifications }
    }

    /// Zeroes the API and image counters. Which images already used up their `serverErrorOnce` is kept.
    public func resetCounters() {
        core.state.withLock {
            $0.apiRequests = [:]
            $0.imageRequests = [:]
            $0.downloadNotifications = []
        }
    }
}

/// What the route handlers share with ``APIEmulator``; handlers hold this, not the server, so no cycle forms.
final class EmulatorCore: Sendable {
    struct State: Sendable {
        var settings: APIEmulator.Settings
        var faults: [APIEmulator.Provider: [APIEmulator.APIFault]] = [:]
        var apiRequests: [APIEmulator.Provider: [RecordedRequest]] = [:]
        var imageRequests: [String: Int] = [:]
        var downloadNotifications: [String] = []
        var failedOnce: Set<String> = []
        var sha1: [UInt64: String] = [:]
        /// Picture variants drawn already, by content seed (drawing one is far slower than a noise PNG).
        var pictures: [UInt64: Data] = [:]
    }

    let baseURL: String
    let state: Locked<State>

    init(baseURL: String, settings: APIEmulator.Settings) {
        self.baseURL = baseURL
        state = Locked(State(settings: settings))
    }

    static func imagePath(_ provider: APIEmulator.Provider, id: String) -> String {
        "/images/\(provider.rawValue)/\(id).png"
    }

    func image(_ provider: APIEmulator.Provider, key: Int, index: Int, settings: APIEmulator.Settings) -> EmulatedImage {
        let id = EmulatedIDs.id(provider, key: key, index: index)
        let seedProvider = provider == .wikimedia && index < settings.wikimediaOverlap ? APIEmulator.Provider.openverse : provider
        let seed = EmulatedIDs.mix(EmulatedIDs.tag(seedProvider), UInt64(key), UInt64(index))
        let path = Self.imagePath(provider, id: id)
        if settings.pictureVariants > 1 {
            let group = index / settings.pictureVariants, variant = index % settings.pictureVariants
            let pictureSeed = EmulatedIDs.mix(0x5EED, UInt64(key), UInt64(group))
            // 256-384 px across, 0.75-1.25 as tall: the smallest variant (half size) keeps 96 px or more on its shorter
            // side, over the 64 below which `--dedup near` never merges; small enough to draw quickly under sanitizers.
            let baseWidth = 256 + Int(EmulatedIDs.splitmix(pictureSeed) % 128)
            let aspect = 0.75 + Double(EmulatedIDs.splitmix(pictureSeed ^ 0xA5A5) % 500) / 1_000.0
            let scale = [1.0, 0.7, 0.5, 0.85, 0.6][variant % 5]
            let width = max(64, Int(Double(baseWidth) * scale)), height = max(64, Int(Double(baseWidth) * aspect * scale))
            let format: TestImages.PictureFormat = variant % 2 == 0 ? .png : .bmp
            var image = EmulatedImage(
                provider: provider, index: index, id: id, path: path, url: URL(string: baseURL + path)!, width: width, height: height,
                byteCount: TestImages.pictureSize(width: width, height: height, format: format), contentSeed: EmulatedIDs.mix(pictureSeed, UInt64(variant))
            )
            image.picture = EmulatedImage.Picture(seed: pictureSeed, group: group, format: format)
            return image
        }
        let (width, height) = EmulatedIDs.geometry(seed: seed, bytes: settings.imageBytes)
        return EmulatedImage(
            provider: provider, index: index, id: id, path: path, url: URL(string: baseURL + path)!,
            width: width, height: height, byteCount: EmulatedIDs.pngSize(width: width, height: height), contentSeed: seed
        )
    }

    /// The image's bytes: a picture variant drawn once and kept, noise generated each time.
    func body(_ image: EmulatedImage) -> Data {
        guard image.picture != nil else { return image.data() }
        if let drawn = state.withLock({ $0.pictures[image.contentSeed] }) { return drawn }
        let data = image.data()
        state.withLock { $0.pictures[image.contentSeed] = data }
        return data
    }

    func sha1(_ image: EmulatedImage) -> String {
        if let known = state.withLock({ $0.sha1[image.contentSeed] }) { return known }
        let digest = SHA1.hex(body(image))
        state.withLock { $0.sha1[image.contentSeed] = digest }
        return digest
    }

    static func imageFault(_ provider: APIEmulator.Provider, id: String, rates: APIEmulator.ImageFaultRates) -> APIEmulator.ImageFault? {
        let u = EmulatedIDs.unit(provider, id)
        var edge = rates.notFound
        if u < edge { return .notFound }
        edge += rates.htmlAsImage
        if u < edge { return .htmlAsImage }
        edge += rates.truncated
        if u < edge { return .truncated }
        edge += rates.serverErrorOnce
        if u < edge { return .serverErrorOnce }
        return nil
    }

    // MARK: Handlers

    func handleProviderPath(_ provider: APIEmulator.Provider, _ request: RecordedRequest) -> Response {
        let path = request.path
        let endpoint = provider.endpointPath
        let trimmed = endpoint.hasSuffix("/") ? String(endpoint.dropLast()) : endpoint
        if path == endpoint || path == trimmed || path == trimmed + "/" {
            return handleAPI(provider, request)
        }
        if provider == .unsplash, path.hasPrefix("/unsplash/photos/"), path.hasSuffix("/download") {
            return handleUnsplashDownload(request)
        }
        if provider == .openverse, path.hasPrefix(endpoint), path.hasSuffix("/thumb/") || path.hasSuffix("/thumb") {
            let id = path.dropFirst(endpoint.count).split(separator: "/").first.map(String.init) ?? ""
            return serveImage(.openverse, id: id, path: path, counted: false)
        }
        return EmulatorJSON.text("no emulated endpoint at \(path)\n", status: 404)
    }

    func handleAPI(_ provider: APIEmulator.Provider, _ request: RecordedRequest) -> Response {
        let settings = state.withLock { state in
            state.apiRequests[provider, default: []].append(request)
            return state.settings
        }
        let api = Self.emulation(provider)
        let context = EmulationContext(settings: settings, baseURL: baseURL, core: self)
        var request = request
        if settings.repeatsFirstPage.contains(provider) {
            for name in ["page", "gsroffset", "offset", "start"] { request.query[name] = nil }
        }
        var response: Response
        if let rejection = api.authFailure(request, context) {
            response = rejection
        } else {
            let fault: APIEmulator.APIFault? = state.withLock { state in
                guard var queue = state.faults[provider], !queue.isEmpty else { return nil }
                let first = queue.removeFirst()
                state.faults[provider] = queue.isEmpty ? nil : queue
                return first
            }
            switch fault {
            case nil:
                response = api.respond(request, context)
            case .status(let status):
                response = api.serverError(status: status)
            case .rateLimited(let seconds):
                response = api.rateLimited(retryAfter: seconds)
                if !response.headers.contains(where: { $0.0.lowercased() == "retry-after" }) {
                    response.headers.append(("Retry-After", String(seconds)))
                }
            case .errorInBody(let seconds):
                response = api.errorInBody(retryAfter: seconds)
            case .malformedJSON:
                let whole = api.respond(request, context)
                let bytes: Data
                if case .bytes(let data) = whole.body, data.count > 2 { bytes = data.prefix(data.count / 2) } else { bytes = Data("{\"results\": [".utf8) }
                response = .status(200, headers: [("Content-Type", "application/json")], body: bytes)
            }
        }
        if settings.apiLatency > .zero { response.latency = (response.latency ?? .zero) + settings.apiLatency }
        return response
    }

    /// `GET /unsplash/photos/<id>/download`: Unsplash's download tracking, which needs the key like a search.
    private func handleUnsplashDownload(_ request: RecordedRequest) -> Response {
        let settings = state.withLock { $0.settings }
        let context = EmulationContext(settings: settings, baseURL: baseURL, core: self)
        if let rejection = UnsplashEmulation().authFailure(request, context) { return rejection }
        if let status = settings.unsplashDownloadStatus { return UnsplashEmulation().serverError(status: status) }
        let id = request.path.dropFirst("/unsplash/photos/".count).split(separator: "/").first.map(String.init) ?? ""
        guard let image = EmulatedIDs.parse(.unsplash, id: id).map({ self.image(.unsplash, key: $0.0, index: $0.1, settings: settings) }) else {
            return EmulatorJSON.response(["errors": ["Couldn't find Photo"]], status: 404)
        }
        state.withLock { $0.downloadNotifications.append(id) }
        return EmulatorJSON.response(["url": image.url.absoluteString + "?ixid=emulated"])
    }

    func handleImage(_ request: RecordedRequest, counted: Bool) -> Response {
        // /images/<provider>/<id>.png or /thumbs/<provider>/<id>.png
        let parts = request.path.split(separator: "/", omittingEmptySubsequences: true)
        guard parts.count == 3, let provider = APIEmulator.Provider(rawValue: String(parts[1])), parts[2].hasSuffix(".png") else {
            if counted { state.withLock { $0.imageRequests[request.path, default: 0] += 1 } }
            return EmulatorJSON.notFoundPage
        }
        return serveImage(provider, id: String(parts[2].dropLast(4)), path: request.path, counted: counted)
    }

    private func serveImage(_ provider: APIEmulator.Provider, id: String, path: String, counted: Bool) -> Response {
        let (settings, firstTime): (APIEmulator.Settings, Bool) = state.withLock { state in
            if counted { state.imageRequests[path, default: 0] += 1 }
            return (state.settings, counted && !state.failedOnce.contains(path))
        }
        var response: Response
        if let (key, index) = EmulatedIDs.parse(provider, id: id) {
            let image = self.image(provider, key: key, index: index, settings: settings)
            let fault = counted ? Self.imageFault(provider, id: id, rates: settings.imageFaults[provider] ?? .none) : nil
            switch fault {
            case .notFound?:
                response = EmulatorJSON.notFoundPage
            case .htmlAsImage?:
                response = .ok(TestImages.htmlErrorPage, contentType: "image/png")
            case .truncated?:
                let data = body(image)
                response = Response(headers: [("Content-Type", "image/png")], body: .truncated(data.prefix(data.count / 2), declaredLength: data.count))
            case .serverErrorOnce? where firstTime:
                state.withLock { _ = $0.failedOnce.insert(path) }
                response = .status(500, headers: [("Content-Type", "text/html")], body: Data("<html><body><h1>500 Internal Server Error</h1></body></html>\n".utf8))
            case .serverErrorOnce?, nil:
                let reservation = settings.reservations[provider].flatMap { $0.reserves(index: index) ? $0.kind : nil }
                response = .ok(reservation == .xmp ? TestImages.withXMP(body(image), TestImages.dataMiningXMP) : body(image), contentType: "image/png")
                response.headers.append(("Cache-Control", "max-age=86400"))
                switch reservation {
                case .robotsTag?: response.headers.append(("X-Robots-Tag", "noai"))
                case .contentUsage?: response.headers.append(("Content-Usage", "train-ai=n"))
                case .tdmHeader?: response.headers += [("tdm-reservation", "1"), ("tdm-policy", baseURL + "/tdm-policy.json")]
                case .xmp?, nil: break
                }
            }
        } else {
            response = EmulatorJSON.notFoundPage
        }
        if settings.imageLatency > .zero { response.latency = settings.imageLatency }
        response.gate = settings.imageGate
        return response
    }

    static func emulation(_ provider: APIEmulator.Provider) -> any EmulatedAPI {
        switch provider {
        case .openverse: OpenverseEmulation()
        case .wikimedia: WikimediaEmulation()
        case .flickr: FlickrEmulation()
        case .giphy: GiphyEmulation()
        case .google: GoogleEmulation()
        case .pexels: PexelsEmulation()
        case .unsplash: UnsplashEmulation()
        case .pixabay: PixabayEmulation()
        }
    }
}

/// What a provider emulation sees of the emulator while answering one request.
struct EmulationContext {
    let settings: APIEmulator.Settings
    let baseURL: String
    let core: EmulatorCore

    /// (results that exist, total to report) for `query` at `provider`.
    func corpus(_ provider: APIEmulator.Provider, query: String) -> (available: Int, reported: Int) {
        let corpus = settings.corpus(for: provider)
        return (corpus.results(for: query), corpus.reportedTotal(for: query))
    }

    func image(_ provider: APIEmulator.Provider, query: String, index: Int) -> EmulatedImage {
        core.image(provider, key: EmulatedIDs.queryKey(query), index: index, settings: settings)
    }

    func images(_ provider: APIEmulator.Provider, query: String, range: Range<Int>) -> [EmulatedImage] {
        let key = EmulatedIDs.queryKey(query)
        return range.map { core.image(provider, key: key, index: $0, settings: settings) }
    }

    func sha1(_ image: EmulatedImage) -> String { core.sha1(image) }

    /// `<base>/thumbs/<provider>/<id>.png` (same PNG, not counted).
    func thumbnailURL(_ image: EmulatedImage) -> String {
        "\(baseURL)/thumbs/\(image.provider.rawValue)/\(image.id).png"
    }

    func url(_ path: String) -> String { baseURL + path }
}

/// One API's request validation, response shape and error bodies.
protocol EmulatedAPI: Sendable {
    /// The API's authentication error when the request's key is missing or wrong, else `nil`.
    func authFailure(_ request: RecordedRequest, _ context: EmulationContext) -> Response?
    /// The normal answer (including the API's own validation errors and caps).
    func respond(_ request: RecordedRequest, _ context: EmulationContext) -> Response
    /// A 5xx/4xx answer with the API's error body.
    func serverError(status: Int) -> Response
    /// A 429 answer with the API's throttling body and `Retry-After`.
    func rateLimited(retryAfter: Int) -> Response
    /// An error reported inside a 200 body.
    func errorInBody(retryAfter: Int) -> Response
}

/// JSON and text bodies.
enum EmulatorJSON {
    static func data(_ object: Any) -> Data {
        (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data("{}".utf8)
    }

    static func response(_ object: Any, status: Int = 200, headers: [(String, String)] = []) -> Response {
        .status(status, headers: [("Content-Type", "application/json")] + headers, body: data(object))
    }

    static func text(_ text: String, status: Int, contentType: String = "text/plain; charset=utf-8", headers: [(String, String)] = []) -> Response {
        .status(status, headers: [("Content-Type", contentType)] + headers, body: Data(text.utf8))
    }

    static let notFoundPage = text("<html><head><title>404 Not Found</title></head><body><h1>Not Found</h1></body></html>\n", status: 404, contentType: "text/html")
}

extension RecordedRequest {
    /// The query parameter `name` as an integer: `default` when absent, `nil` when present but not an integer.
    func intParameter(_ name: String, default value: Int) -> Int? {
        guard let text = query[name] else { return value }
        return Int(text.trimmingCharacters(in: .whitespaces))
    }
}

extension String {
    /// "kittens" → "Kittens".
    var capitalizedFirst: String { prefix(1).uppercased() + dropFirst() }
}
