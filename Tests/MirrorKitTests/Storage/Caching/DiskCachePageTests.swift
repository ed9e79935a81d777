import Foundation
@testable import MirrorCore
@testable import MirrorFetch
@testable import MirrorKit
@testable import MirrorSearch
@testable import MirrorStorage
import Testing

@Suite("DiskCache pages", .timeLimit(.minutes(5)))
struct DiskCachePageTests {
    private let pageKey = CacheKey(url: URL(string: "https://api.example.com/v1/images?q=cats&page=2&api_key=SEKRET")!)

    @Test("a page is served until its time to live has passed, then deleted on read")
    func pageTimeToLive() throws {
        try withCacheTestDirectory { directory in
            // Given a page stored with a 50 ms time to live on a test clock
            let clock = CacheTestClock()
            let cache = DiskCache(directory: directory, now: { clock.now() })
            let body = Data(#"{"results":[]}"#.utf8)
            try cache.storePage(body, for: pageKey, ttl: .milliseconds(50))

            // When it is read at once / Then it is there
            #expect(cache.page(for: pageKey) == body)
            #expect(cache.stats().pages == 1)

            // When it is read 100 ms later / Then it is gone, file and all
            clock.advance(by: 0.1)
            #expect(cache.page(for: pageKey) == nil)
            #expect(!FileManager.default.fileExists(atPath: cache.pageURL(for: pageKey).path))
            #expect(cache.stats().pages == 0)
        }
    }

    @Test("storing a page again replaces it and its expiry")
    func pageReplacement() throws {
        try withCacheTestDirectory { directory in
            // Given a page stored for 1 s, then again for 1 h
            let clock = CacheTestClock()
            let cache = DiskCache(directory: directory, now: { clock.now() })
            try cache.storePage(Data("old".utf8), for: pageKey, ttl: .seconds(1))
            try cache.storePage(Data("new".utf8), for: pageKey, ttl: .seconds(3600))

            // When 10 s pass / Then the new page is served
            clock.advance(by: 10)
            #expect(cache.page(for: pageKey) == Data("new".utf8))
        }
    }

    @Test("a page file with a damaged header is a miss and is removed",
          arguments: ["", "short", "mirrorXX-and-some-body"])
    func corruptPage(contents: String) throws {
        try withCacheTestDirectory { directory in
            // Given a page whose file is then overwritten
            let cache = DiskCache(directory: directory)
            try cache.storePage(Data("{}".utf8), for: pageKey, ttl: .seconds(60))
            try Data(contents.utf8).write(to: cache.pageURL(for: pageKey))

            // When it is read / Then it misses and the file is gone
            #expect(cache.page(for: pageKey) == nil)
            #expect(!FileManager.default.fileExists(atPath: cache.pageURL(for: pageKey).path))
        }
    }

    @Test("an empty page round-trips")
    func emptyPage() throws {
        try withCacheTestDirectory { directory in
            let cache = DiskCache(directory: directory)
            try cache.storePage(Data(), for: pageKey, ttl: .seconds(60))
            #expect(cache.page(for: pageKey) == Data())
        }
    }

    @Test("a write the file system refuses throws its FileError, and leaves no temporary file")
    func refusedWriteIsAFileError() throws {
        try withCacheTestDirectory { directory in
            // Given a cache where a folder stands in the page's place
            let cache = DiskCache(directory: directory)
            let page = cache.pageURL(for: pageKey)
            try FileManager.default.createDirectory(at: page, withIntermediateDirectories: true)

            // When the page is stored / Then rename(2)'s error comes through whole, and tmp/ is left empty
            #expect(throws: DiskCacheError.fileSystem(FileError(operation: "save", path: page.path, code: EISDIR))) {
                try cache.storePage(Data("{}".utf8), for: pageKey, ttl: .seconds(60))
            }
            #expect(CacheFixture.files(under: cache.temporaryDirectory).isEmpty)
        }
    }
}
