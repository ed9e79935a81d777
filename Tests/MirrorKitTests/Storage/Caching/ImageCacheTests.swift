import Foundation
@testable import MirrorCore
@testable import MirrorFetch
@testable import MirrorKit
@testable import MirrorSearch
@testable import MirrorStorage
import Testing

@Suite("ImageCache façade", .timeLimit(.minutes(5)))
struct ImageCacheTests {
    private let pageKey = CacheKey(namespace: "openverse", string: "q=cats&page=1")

    @Test("a page is found in memory, else on disk (and then copied into memory)")
    func pageLookupOrder() throws {
        try withCacheTestDirectory { directory in
            // Given a page stored through one façade
            let clock = CacheTestClock()
            let disk = DiskCache(directory: directory, now: { clock.now() })
            let first = ImageCache(memory: MemoryCache(now: { clock.now() }), disk: disk)
            let body = Data(#"{"page":1}"#.utf8)
            try first.storePage(body, for: pageKey, ttl: .seconds(60))

            // When it is read there, and through a second façade sharing only the disk
            let second = ImageCache(memory: MemoryCache(now: { clock.now() }), disk: disk)

            // Then the first hits memory; the second hits disk once, then memory
            #expect(first.page(for: pageKey).cacheType == .memory)
            #expect(second.page(for: pageKey).cacheType == .disk)
            let again = second.page(for: pageKey)
            #expect(again.cacheType == .memory)
            #expect(again.value == body)

            // And once the time to live has passed, neither layer serves it
            clock.advance(by: 61)
            #expect(first.page(for: pageKey).cacheType == .none)
            #expect(second.page(for: pageKey).cacheType == .none)
        }
    }

    @Test("images are reported as disk hits, and unknown keys as misses")
    func imageLookup() throws {
        try withCacheTestDirectory { directory in
            // Given an image stored through the façade
            let cache = ImageCache(configuration: .init {
                $0.directory = directory.appendingPathComponent("cache")
            })
            let bytes = CacheFixture.bytes(1_000, seed: 1)
            let file = try CacheFixture.writeFile(bytes, named: "img", in: directory)
            let key = CacheKey(url: URL(string: "https://img.example.com/a.gif")!)
            try cache.store(fileAt: file, sha256: sha256Hex(bytes), for: key, format: "gif")

            // When it and an unknown key are looked up
            let hit = cache.entry(for: key)
            let miss = cache.entry(for: CacheKey(url: URL(string: "https://img.example.com/b.gif")!))

            // Then the hit comes from disk and can be materialized; the miss is none
            #expect(hit.cacheType == .disk)
            #expect(miss.cacheType == .none)
            #expect(miss.value == nil)
            let destination = directory.appendingPathComponent("a.gif")
            try cache.materialize(try #require(hit.value), at: destination)
            #expect(try Data(contentsOf: destination) == bytes)
        }
    }

    @Test("with caching disabled nothing is stored, nothing is found, and no directory is made")
    func disabled() throws {
        try withCacheTestDirectory { directory in
            // Given a disabled façade pointed at a directory
            let root = directory.appendingPathComponent("cache")
            let cache = ImageCache(configuration: .init {
                $0.isEnabled = false
                $0.directory = root
            })
            let bytes = CacheFixture.bytes(100)
            let file = try CacheFixture.writeFile(bytes, named: "img", in: directory)
            let key = CacheKey(url: URL(string: "https://img.example.com/a.png")!)

            // When things are stored and looked up
            try cache.store(fileAt: file, sha256: sha256Hex(bytes), for: key)
            try cache.storePage(Data("{}".utf8), for: pageKey, ttl: .seconds(60))

            // Then every lookup misses and the directory was never created
            #expect(!cache.isEnabled)
            #expect(cache.entry(for: key).cacheType == .none)
            #expect(cache.page(for: pageKey).cacheType == .none)
            #expect(cache.sweep() == nil)
            #expect(!FileManager.default.fileExists(atPath: root.path))
            #expect(!ImageCache(configuration: .disabled).isEnabled)
        }
    }

    @Test("remove and removeAll clear both layers")
    func removal() throws {
        try withCacheTestDirectory { directory in
            // Given a page in both layers
            let cache = ImageCache(memory: MemoryCache(), disk: DiskCache(directory: directory))
            try cache.storePage(Data("{}".utf8), for: pageKey, ttl: .seconds(60))

            // When it is removed / Then neither layer has it
            cache.remove(pageKey)
            #expect(cache.page(for: pageKey).cacheType == .none)

            // When it is stored again and everything is removed / Then neither layer has it
            try cache.storePage(Data("{}".utf8), for: pageKey, ttl: .seconds(60))
            try cache.removeAll()
            #expect(cache.page(for: pageKey).cacheType == .none)
        }
    }
}
