import Foundation

extension APIEmulator {
    /// One of the eight emulated search APIs. Raw values are the provider names `mirror` uses.
    public enum Provider: String, CaseIterable, Sendable, Hashable {
        case openverse, wikimedia, flickr, giphy, google, pexels, unsplash, pixabay

        /// Accepts the raw value and the aliases `wikimedia_commons`, `commons` and `google_cse`, case-insensitively.
        public init?(name: String) {
            switch name.lowercased() {
            case "wikimedia_commons", "commons": self = .wikimedia
            case "google_cse", "googlecse", "cse": self = .google
            default: self.init(rawValue: name.lowercased())
            }
        }

        /// The search endpoint's path on the emulator's server, e.g. `/openverse/v1/images/`.
        public var endpointPath: String {
            switch self {
            case .openverse: "/openverse/v1/images/"
            case .wikimedia: "/wikimedia/w/api.php"
            case .flickr: "/flickr/services/rest/"
            case .giphy: "/giphy/v1/gifs/search"
            case .google: "/google/customsearch/v1"
            case .pexels: "/pexels/v1/search"
            case .unsplash: "/unsplash/search/photos"
            case .pixabay: "/pixabay/api/"
            }
        }

        /// `MIRROR_<NAME>_ENDPOINT`, the variable `mirror` reads to override this provider's endpoint.
        public var endpointVariable: String { "MIRROR_\(rawValue.uppercased())_ENDPOINT" }

        /// Every path of this provider starts with this (`/openverse/`).
        var routePrefix: String { "/\(rawValue)/" }
    }

    /// The keys the emulated APIs accept. A request whose key differs gets that API's real authentication error.
    public struct Keys: Sendable, Hashable {
        /// `api_key` query parameter (`FLICKR_API_KEY`).
        public var flickr = "emulator-flickr-key"
        /// `api_key` query parameter (`GIPHY_API_KEY`).
        public var giphy = "emulator-giphy-key"
        /// `key` query parameter (`GOOGLE_API_KEY`).
        public var google = "emulator-google-key"
        /// `cx` query parameter (`GOOGLE_CSE_ID`).
        public var googleEngineID = "emulator-cse-id"
        /// Raw `Authorization` header (`PEXELS_API_KEY`).
        public var pexels = "emulator-pexels-key"
        /// `Authorization: Client-ID …` or `client_id` query parameter (`UNSPLASH_ACCESS_KEY`).
        public var unsplash = "emulator-unsplash-key"
        /// `key` query parameter (`PIXABAY_API_KEY`).
        public var pixabay = "emulator-pixabay-key"
        /// Openverse bearer token that lifts the anonymous `page_size` cap of 20 (to 500); `nil` accepts none.
        /// A request with any other `Authorization: Bearer` gets 401. Not part of ``APIEmulator/environment``.
        public var openverseToken: String? = nil

        public init() {}
    }

    /// How many results a provider has for a query.
    public struct Corpus: Sendable, Hashable {
        /// Results that exist for any query not in ``perQuery``. The API's own caps still apply on top
        /// (Openverse serves 20 pages, Flickr 4,000 results, Pixabay 500, Google 100, Giphy offsets ≤ 4999).
        public var count: Int
        /// The total the API reports for queries not in ``perQuery`` (Openverse `result_count` still saturates
        /// at 10,000); `nil` reports ``count``.
        public var reportedTotal: Int?
        /// Result counts for particular queries (compared lowercased and trimmed; the Wikimedia `filetype:`,
        /// `filew:`/`fileh:` terms are ignored). Their reported total equals the count.
        public var perQuery: [String: Int]

        public init(count: Int, reportedTotal: Int? = nil, perQuery: [String: Int] = [:]) {
            self.count = count
            self.reportedTotal = reportedTotal
            self.perQuery = perQuery
        }

        /// The number of results that exist for `query`.
        public func results(for query: String) -> Int {
            max(0, perQuery[APIEmulator.normalizedQuery(query)] ?? count)
        }

        /// The total the API reports for `query` (before API-specific saturation).
        public func reportedTotal(for query: String) -> Int {
            if let count = perQuery[APIEmulator.normalizedQuery(query)] { return max(0, count) }
            return max(0, reportedTotal ?? count)
        }
    }

    /// Fractions (0…1, summing to at most 1) of one provider's images that misbehave. Which images is
    /// decided by a hash of provider and id, so it never changes; ask ``APIEmulator/imageFault(provider:id:)``.
    public struct ImageFaultRates: Sendable, Hashable {
        /// `404 Not Found` (HTML body), every time.
        public var notFound: Double
        /// `200` with `Content-Type: image/png` and an HTML error page as the body, every time.
        public var htmlAsImage: Double
        /// `Content-Length` of the whole PNG, then only its first half and a close, every time.
        public var truncated: Double
        /// `500` on the first request for the image, the PNG afterwards.
        public var serverErrorOnce: Double

        public init(notFound: Double = 0, htmlAsImage: Double = 0, truncated: Double = 0, serverErrorOnce: Double = 0) {
            self.notFound = notFound
            self.htmlAsImage = htmlAsImage
            self.truncated = truncated
            self.serverErrorOnce = serverErrorOnce
        }

        /// No faults.
        public static let none = ImageFaultRates()
    }

    /// How an emulated image's owner reserves it against AI training: in its response's headers, or in the image.
    public enum Reservation: String, Sendable, Hashable, CaseIterable {
        /// `X-Robots-Tag: noai`.
        case robotsTag
        /// `Content-Usage: train-ai=n` (IETF aipref).
        case contentUsage
        /// `tdm-reservation: 1` with a `tdm-policy` (TDMRep).
        case tdmHeader
        /// An XMP packet in the PNG (an `iTXt` chunk) whose `plus:DataMining` is `DMI-PROHIBITED-AIMLTRAINING`.
        case xmp
    }

    /// Which of a provider's images are reserved: every `every`-th result (index 0, `every`, `2 × every`, …), by `kind`.
    public struct ReservedImages: Sendable, Hashable {
        public var kind: Reservation
        public var every: Int

        public init(_ kind: Reservation, every: Int) {
            self.kind = kind
            self.every = max(1, every)
        }

        /// Whether result `index` is reserved.
        public func reserves(index: Int) -> Bool { index % every == 0 }
    }

    /// How an image misbehaves; see ``ImageFaultRates``.
    public enum ImageFault: String, Sendable, Hashable, CaseIterable {
        case notFound, htmlAsImage, truncated, serverErrorOnce
    }

    /// A one-shot fault for the next API request of a provider (queued; each request that passes the key
    /// check takes one).
    public enum APIFault: Sendable, Hashable {
        /// That status with the provider's error body (default 500).
        case status(Int)
        /// `429` with `Retry-After: <seconds>` and the provider's throttling body.
        case rateLimited(retryAfter: Int)
        /// An error inside a `200` body: Wikimedia `maxlag` (with `Retry-After` and `X-Database-Lag`), Flickr
        /// `stat: fail` code 105, Giphy's synthetic empty answer without `pagination`, Google an `error`
        /// envelope (code 503); Openverse, Pexels, Unsplash and Pixabay a `200` JSON object without results.
        case errorInBody(retryAfter: Int = 1)
        /// `200` with `Content-Type: application/json` and the first half of the real body.
        case malformedJSON
    }

    /// Everything tests may change at any time through ``APIEmulator/configure(_:)``.
    public struct Settings: Sendable {
        /// Accepted keys.
        public var keys = Keys()
        /// Generated PNG sizes in bytes; each image's size is picked from this range by its id. Default 2–20 KB.
        public var imageBytes: ClosedRange<Int> = 2_000...20_000
        /// Delay before every API response head (added to the server's own latency).
        public var apiLatency: Duration = .zero
        /// Delay before every image (and thumbnail) response head.
        public var imageLatency: Duration = .zero
        /// A hold on every image (and thumbnail) response until the test opens it (``Gate``), or `nil` for none.
        public var imageGate: Gate?
        /// Results per provider; see ``Corpus``.
        public var corpus: [Provider: Corpus] = APIEmulator.defaultCorpus
        /// The first `wikimediaOverlap` Wikimedia results of every query have byte-identical images to the
        /// first `wikimediaOverlap` Openverse results of the same query (different ids and URLs).
        public var wikimediaOverlap = 0
        /// 0 (the default): every result is its own image (seeded noise). 2 or more: results come in groups of this
        /// many that show one picture (``TestImages/picture(width:height:seed:format:)``) at as many sizes, in turns
        /// as PNG and as BMP (served under the `.png` path all the same), the way image hosts and their mirrors serve
        /// one photograph at several sizes and in several formats; each group is another picture, the same for every
        /// provider (group `g` of a query is one picture wherever it is listed).
        public var pictureVariants = 0
        /// Image faults per provider; missing means none.
        public var imageFaults: [Provider: ImageFaultRates] = [:]
        /// Images their owners reserved against AI training, per provider; missing means none.
        public var reservations: [Provider: ReservedImages] = [:]
        /// Providers that ignore the page they are asked for and answer every request with the first page
        /// (a real-world glitch: a cursor the server forgets). Their paging parameters (`page`, `gsroffset`,
        /// `offset`, `start`) are dropped before the request is answered.
        public var repeatsFirstPage: Set<Provider> = []
        /// Hostile ids and titles for Openverse results, by 0-based result index: the JSON `id` and `title`
        /// fields say what is given here, while the image URL stays the real one (so the image is still served).
        public var openverseOverrides: [Int: ResultOverride] = [:]
        /// Google refuses `start + num > 100` (so the last page, `start=91&num=10`, gets 400 `INVALID_ARGUMENT`):
        /// the stricter reading of its docs, which mirror must survive by asking for `num=9`. Default false.
        public var googleStrictLastPage = false
        /// The status Unsplash's `download_location` answers with instead of `200 {"url": …}` (its error body), or
        /// `nil` (the default) for the normal answer. Failed notifications are not counted.
        public var unsplashDownloadStatus: Int?

        public init() {}

        /// The corpus of `provider` (an empty one if removed).
        public func corpus(for provider: Provider) -> Corpus {
            corpus[provider] ?? Corpus(count: 0)
        }
    }

    /// What a result claims about itself instead of its generated id and title (see ``Settings/openverseOverrides``).
    public struct ResultOverride: Sendable, Hashable {
        public var id: String?
        public var title: String?

        public init(id: String? = nil, title: String? = nil) {
            self.id = id
            self.title = title
        }
    }

    /// Openverse 10,000 (400 reachable anonymously), Wikimedia 500, Flickr 10,000 (4,000 reachable), Giphy
    /// 10,000 (5,000 reachable), Google 100 reported as 1,230,000,000, Pexels 1,000, Unsplash 10,000 (200 pages
    /// reachable), Pixabay 8,737 (`totalHits` 500).
    public static let defaultCorpus: [Provider: Corpus] = [
        .openverse: Corpus(count: 10_000),
        .wikimedia: Corpus(count: 500),
        .flickr: Corpus(count: 10_000),
        .giphy: Corpus(count: 10_000),
        .google: Corpus(count: 100, reportedTotal: 1_230_000_000),
        .pexels: Corpus(count: 1_000),
        .unsplash: Corpus(count: 10_000),
        .pixabay: Corpus(count: 8_737),
    ]

    /// The form queries are compared in: lowercased, trimmed, Wikimedia search keywords (`filetype:bitmap`,
    /// `filew:>99`) removed, inner whitespace collapsed.
    public static func normalizedQuery(_ query: String) -> String {
        query.lowercased()
            .split(whereSeparator: { $0.isWhitespace })
            .filter { !$0.contains(":") }
            .joined(separator: " ")
    }
}
