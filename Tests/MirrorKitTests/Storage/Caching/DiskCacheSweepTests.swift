import Foundation
@testable import MirrorCore
@testable import MirrorFetch
@testable import MirrorKit
@testable import MirrorSearch
@testable import MirrorStorage
import Testing

@Suite("DiskCache sweep and stats", .timeLimit(.minutes(5)))
struct DiskCacheSweepTests {
    /// Stores `count` distinct bodies of `size` bytes under keys `i0`, `i1`, …; returns keys and digests.
    private func fill(
        _ cache: DiskCache,
        count: Int,
        size: Int,
        scratch: URL
    ) throws -> [(key: CacheKey, sha256: String)] {
        try (0..<count).map { i in
            let bytes = CacheFixture.bytes(size, seed: UInt8(i + 1))
            let file = try CacheFixture.writeFile(bytes, named: "body-\(i)", in: scratch)
            let key = CacheKey(url: URL(string: "https://img.example.com/i\(i).png")!)
            try cache.store(fileAt: file, sha256: sha256Hex(bytes), for: key, format: "png")
            return (key, sha256Hex(bytes))
        }
    }

    @Test("over the limit, sweep removes least recently used objects until at most 70% remains")
    func sweepLeastRecentlyUsedFirst() throws {
        try withCacheTestDirectory { directory in
            // Given a 1,000-byte cache holding five 300-byte objects, used in the order 3, 0, 4, 1, 2
            let cache = DiskCache(
                directory: directory.appendingPathComponent("cache"),
                sizeLimit: 1_000,
                prefersHardLinks: false
            )
            let stored = try fill(cache, count: 5, size: 300, scratch: directory)
            let lastUsed = [3, 0, 4, 1, 2]
            for (rank, index) in lastUsed.enumerated() {
                let date = Date(timeIntervalSince1970: 1_800_000_000 + Double(rank) * 60)
                try CacheFixture.setModificationDate(date, of: cache.objectURL(for: stored[index].sha256))
            }
            #expect(cache.stats().bytes == 1_500)

            // When it is swept
            let result = cache.sweep()

            // Then the three least recently used (3, 0, 4) are gone: 600 bytes ≤ 700
            #expect(result.evictedFiles == 3)
            #expect(result.evictedBytes == 900)
            #expect(result.danglingIndexEntries == 3)
            #expect(cache.stats().entries == 2)
            #expect(cache.stats().bytes == 600)
            for index in [3, 0, 4] {
                #expect(cache.entry(for: stored[index].key) == nil)
                #expect(!FileManager.default.fileExists(atPath: cache.indexURL(for: stored[index].key).path))
            }
            for index in [1, 2] {
                #expect(cache.entry(for: stored[index].key)?.sha256 == stored[index].sha256)
            }
        }
    }

    @Test("under the limit, sweep removes nothing that is valid")
    func sweepUnderLimit() throws {
        try withCacheTestDirectory { directory in
            // Given a cache well under its limit
            let cache = DiskCache(directory: directory.appendingPathComponent("cache"), sizeLimit: 10_000)
            let stored = try fill(cache, count: 3, size: 300, scratch: directory)

            // When it is swept / Then everything is still there
            let result = cache.sweep()
            #expect(result == DiskCache.SweepResult())
            #expect(stored.allSatisfy { cache.entry(for: $0.key) != nil })
        }
    }

    @Test("sweep drops expired pages, dangling and corrupt index records, and stale temporary files")
    func sweepCleansUp() throws {
        try withCacheTestDirectory { directory in
            // Given an expired page, a live page, an index record whose object vanished, a corrupt record
            // and a temporary file left by a killed writer two hours ago
            let clock = CacheTestClock(Date())
            let cache = DiskCache(directory: directory.appendingPathComponent("cache"), now: { clock.now() })
            let stored = try fill(cache, count: 2, size: 100, scratch: directory)
            let expired = CacheKey(namespace: "search", string: "old")
            let live = CacheKey(namespace: "search", string: "new")
            try cache.storePage(Data("old".utf8), for: expired, ttl: .seconds(1))
            try cache.storePage(Data("new".utf8), for: live, ttl: .seconds(3600))
            try FileManager.default.removeItem(at: cache.objectURL(for: stored[0].sha256))
            try Data("{".utf8).write(to: cache.indexDirectory.appendingPathComponent(String(repeating: "0", count: 64)))
            let leftover = try CacheFixture.writeFile(
                Data("partial".utf8), named: "leftover", in: cache.temporaryDirectory)
            try CacheFixture.setModificationDate(Date().addingTimeInterval(-7200), of: leftover)
            clock.advance(by: 60)

            // When it is swept
            let result = cache.sweep()

            // Then only valid things remain
            #expect(result.expiredPages == 1)
            #expect(result.danglingIndexEntries == 2)
            #expect(result.evictedFiles == 0)
            #expect(cache.page(for: live) == Data("new".utf8))
            #expect(!FileManager.default.fileExists(atPath: cache.pageURL(for: expired).path))
            #expect(!FileManager.default.fileExists(atPath: leftover.path))
            #expect(CacheFixture.files(under: cache.indexDirectory) == [stored[1].key.fileName])
        }
    }

    @Test("stats counts distinct objects, their bytes plus page bytes, and pages")
    func stats() throws {
        try withCacheTestDirectory { directory in
            // Given two bodies under three keys, and one page
            let cache = DiskCache(directory: directory.appendingPathComponent("cache"))
            #expect(cache.stats().entries == 0)
            let stored = try fill(cache, count: 2, size: 250, scratch: directory)
            let alias = CacheKey(url: URL(string: "https://alias.example.com/i0.png")!)
            try cache.store(fileAt: directory.appendingPathComponent("body-0"), sha256: stored[0].sha256, for: alias)
            let page = Data("0123456789".utf8)
            try cache.storePage(page, for: CacheKey(namespace: "search", string: "p1"), ttl: .seconds(60))

            // When it is counted
            let stats = cache.stats()

            // Then objects count once each, and page files include their 16-byte header
            #expect(stats.entries == 2)
            #expect(stats.pages == 1)
            #expect(stats.bytes == 500 + Int64(DiskCache.pageHeaderSize + page.count))
        }
    }
}
