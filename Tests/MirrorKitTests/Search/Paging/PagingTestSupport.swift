import Foundation
import MirrorSync
@testable import MirrorCore
@testable import MirrorFetch
@testable import MirrorKit
@testable import MirrorSearch
@testable import MirrorStorage
import MirrorTestSupport
import MirrorTransport

/// Hand-built API pages in the shapes the real APIs send (templates: `Fixtures/<api>/`), so the real providers parse
/// them; image URLs are `https://cdn.test/<provider>/<n>.jpg`, never fetched.
enum PagingPages {
    static func json(_ object: Any) -> Data {
        // Sorted keys keep bodies byte-stable; the providers never depend on key order.
        (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
    }

    static func imageURL(_ provider: String, _ number: Int) -> String {
        "https://cdn.test/\(provider)/\(number).jpg"
    }

    /// An Openverse `/v1/images/` answer (2022–2024 shape).
    static func openverse(page: Int, pageCount: Int, resultCount: Int = 10_000, numbers: [Int], urls: [String]? = nil) -> Data {
        let results: [[String: Any]] = numbers.enumerated().map { offset, number in
            [
                "id": "ov-\(number)",
                "title": "Kitten \(number)",
                "indexed_on": "2023-01-01T00:00:00Z",
                "foreign_landing_url": "https://www.flickr.com/photos/x/\(number)",
                "url": urls?[offset] ?? imageURL("openverse", number),
                "creator": "someone",
                "license": "by",
                "license_version": "2.0",
                "license_url": "https://creativecommons.org/licenses/by/2.0/",
                "provider": "flickr",
                "source": "flickr",
                "filesize": NSNull(),
                "filetype": "jpg",
                "tags": [["name": "kitten"]],
                "mature": false,
                "width": 640,
                "height": 480,
                "thumbnail": "https://api.openverse.org/v1/images/ov-\(number)/thumb/",
            ]
        }
        return json(["result_count": resultCount, "page_count": pageCount, "page_size": 20, "page": page, "results": results])
    }

    /// A MediaWiki `generator=search` answer (formatversion 1: `pages` keyed by page id); `nextOffset` nil ends it.
    static func wikimedia(numbers: [Int], nextOffset: Int?, urls: [String]? = nil) -> Data {
        var pages: [String: Any] = [:]
        for (index, number) in numbers.enumerated() {
            pages[String(1000 + number)] = [
                "pageid": 1000 + number,
                "ns": 6,
                "title": "File:Kitten \(number).jpg",
                "index": index + 1,
                "imagerepository": "local",
                "imageinfo": [[
                    "url": urls?[index] ?? imageURL("wikimedia", number),
                    "descriptionurl": "https://commons.wikimedia.org/wiki/File:Kitten_\(number).jpg",
                    "width": 800,
                    "height": 600,
                    "size": 12_345,
                    "mime": "image/jpeg",
                    "extmetadata": ["LicenseShortName": ["value": "CC BY-SA 4.0", "source": "commons-desc-page"]],
                ]],
            ]
        }
        var body: [String: Any] = ["batchcomplete": "", "query": ["pages": pages]]
        if let nextOffset {
            body["continue"] = ["gsroffset": nextOffset, "continue": "gsroffset||"]
        }
        return json(body)
    }

    /// A Flickr `flickr.photos.search` answer with `url_l` extras; `total` is a string, as Flickr sends it.
    static func flickr(page: Int, pages: Int, numbers: [Int]) -> Data {
        let photos: [[String: Any]] = numbers.map { number in
            [
                "id": "\(5_000_000 + number)", "owner": "7478087@N06", "secret": "abc\(number)", "server": "65535",
                "farm": 66, "title": "Photo \(number)", "ispublic": 1, "isfriend": 0, "isfamily": 0, "license": "4",
                "url_l": "https://live.staticflickr.com/65535/\(5_000_000 + number)_abc\(number)_b.jpg",
                "height_l": 768, "width_l": 1024,
            ]
        }
        return json(["photos": ["page": page, "pages": pages, "perpage": 500, "total": "\(pages * 500)", "photo": photos], "stat": "ok"])
    }

    /// A Pixabay `/api/` answer.
    static func pixabay(numbers: [Int], total: Int, totalHits: Int) -> Data {
        let hits: [[String: Any]] = numbers.map { number in
            [
                "id": 900 + number, "pageURL": "https://pixabay.com/photos/kitten-\(900 + number)/", "type": "photo",
                "tags": "kitten, cat", "webformatURL": imageURL("pixabay", number) + "?w=640",
                "largeImageURL": imageURL("pixabay", number), "imageWidth": 4000, "imageHeight": 3000,
                "user_id": 42, "user": "pat",
            ]
        }
        return json(["total": total, "totalHits": totalHits, "hits": hits])
    }

    /// An Unsplash `/search/photos` answer.
    static func unsplash(numbers: [Int], totalPages: Int) -> Data {
        let results: [[String: Any]] = numbers.map { number in
            [
                "id": "us\(number)", "width": 4000, "height": 3000, "alt_description": "a kitten",
                "urls": ["full": imageURL("unsplash", number) + "?fm=jpg&q=85", "thumb": imageURL("unsplash", number) + "?w=200"],
                "links": ["html": "https://unsplash.com/photos/us\(number)"],
                "user": ["name": "Pat", "links": ["html": "https://unsplash.com/@pat"]],
            ]
        }
        return json(["total": totalPages * 30, "total_pages": totalPages, "results": results])
    }
}

/// Counts calls from the server's event loop.
final class PagingCounter: Sendable {
    private let value = Locked(0)

    /// Adds one and returns the new count.
    func increment() -> Int {
        value.withLock { value in
            value += 1
            return value
        }
    }

    var count: Int { value.withLock { $0 } }
}

/// A loopback server, a transport and optionally a page cache, torn down together.
final class PagingHarness: Sendable {
    let server: TestServer
    let driver = CurlMultiDriver()
    let cacheDirectory: URL

    init() throws {
        server = try TestServer.start()
        cacheDirectory = FileManager.default.temporaryDirectory.appendingPathComponent("mirror-paging-\(UUID().uuidString)", isDirectory: true)
    }

    deinit {
        driver.shutdown()
        server.stop()
        try? FileManager.default.removeItem(at: cacheDirectory)
    }

    /// A fresh cache over the harness's disk directory: a new memory layer, the same disk.
    func makeCache() -> ImageCache {
        ImageCache(memory: MemoryCache(), disk: DiskCache(directory: cacheDirectory, prefersHardLinks: false))
    }

    /// A client with fast retries (10 ms base, 50 ms ceiling) and, unless told otherwise, no cache.
    func makeClient(cache: ImageCache? = nil) -> APIClient {
        APIClient(loader: driver, cache: cache, retry: PagingConfig.fastRetry)
    }

    /// A feed over `providers` with no pacing and fast retries unless `configure` says otherwise.
    func makeFeed(
        _ providers: [any ImageProvider],
        cache: ImageCache? = nil,
        _ configure: (inout SearchFeed.Configuration) -> Void = { _ in }
    ) -> SearchFeed {
        let configuration = SearchFeed.Configuration {
            $0.requestInterval = .zero
            $0.retry = PagingConfig.fastRetry
            $0.jitterSeed = 7
            configure(&$0)
        }
        return SearchFeed(providers: providers, query: SearchQuery(text: "kittens"), client: makeClient(cache: cache), configuration: configuration)
    }

    var openverse: OpenverseProvider { OpenverseProvider(endpoint: server.url("/v1/images/")) }
    var wikimedia: WikimediaCommonsProvider { WikimediaCommonsProvider(endpoint: server.url("/w/api.php"), pageSize: 3) }

    /// Requests that arrived for `path`, in order.
    func requests(_ path: String) -> [RecordedRequest] {
        server.requests.filter { $0.path == path }
    }
}

enum PagingConfig {
    static let fastRetry = RetryPolicy(maximumRetries: 3, baseDelay: .milliseconds(10), maximumDelay: .milliseconds(50))
}

extension SearchFeed {
    /// Every remaining result, or the error that stopped the feed.
    func drain() async -> (results: [ImageResult], error: SearchError?) {
        var results: [ImageResult] = []
        do {
            while let result = try await next() { results.append(result) }
            return (results, nil)
        } catch {
            return (results, error)
        }
    }
}

extension Duration {
    var pagingSeconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
