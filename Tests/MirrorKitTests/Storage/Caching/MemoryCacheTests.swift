import Foundation
@testable import MirrorCore
@testable import MirrorFetch
@testable import MirrorKit
@testable import MirrorSearch
@testable import MirrorStorage
import Testing

@Suite("MemoryCache", .timeLimit(.minutes(5)))
struct MemoryCacheTests {
    private func key(_ name: String) -> CacheKey {
        CacheKey(namespace: "test", string: name)
    }

    @Test("over the cost limit, the cheapest entries go first, whatever was read recently (not LRU)")
    func costLimitEvictsCheapestFirst() {
        // Given a 100-byte cache holding a (10 bytes), b (50) and c (30), with a read just now
        let cache = MemoryCache(configuration: .init(totalCostLimit: 100, countLimit: 0))
        cache.store(CacheFixture.bytes(10), for: key("a"))
        cache.store(CacheFixture.bytes(50), for: key("b"))
        cache.store(CacheFixture.bytes(30), for: key("c"))
        #expect(cache.value(for: key("a")) != nil)

        // When d (40) pushes the total to 130
        cache.store(CacheFixture.bytes(40), for: key("d"))

        // Then the two cheapest, a and c, were evicted (30 bytes needed, cheapest first), not b, the oldest
        #expect(!cache.contains(key("a")))
        #expect(!cache.contains(key("c")))
        #expect(cache.contains(key("b")))
        #expect(cache.value(for: key("d")) == CacheFixture.bytes(40))
    }

    @Test("a store that overflows the cache can evict the value it just stored, when it is the cheapest")
    func cheapestNewValueEvictsItself() {
        // Given a 100-byte cache holding x (60) and y (30)
        let cache = MemoryCache(configuration: .init(totalCostLimit: 100, countLimit: 0))
        cache.store(CacheFixture.bytes(60), for: key("x"))
        cache.store(CacheFixture.bytes(30), for: key("y"))

        // When z (20), the cheapest, overflows it
        let accepted = cache.store(CacheFixture.bytes(20), for: key("z"))

        // Then the store was accepted, yet z is the one evicted
        #expect(accepted)
        #expect(!cache.contains(key("z")))
        #expect(cache.contains(key("x")))
        #expect(cache.contains(key("y")))
    }

    @Test("values above the per-entry limit are refused, and replace no older value")
    func entryCostLimit() {
        // Given a cache with a 1 KiB entry limit and a small value stored under k
        let cache = MemoryCache(configuration: .init(entryCostLimit: 1024))
        cache.store(CacheFixture.bytes(100), for: key("k"))

        // When a 2 KiB value is stored under k
        let accepted = cache.store(CacheFixture.bytes(2048), for: key("k"))

        // Then it is refused and k holds nothing, rather than the stale value
        #expect(!accepted)
        #expect(cache.value(for: key("k")) == nil)
    }

    @Test("values past their expiry date are not returned")
    func expiry() {
        // Given a cache on a test clock, with one value expiring in 10 s and one never
        let clock = CacheTestClock()
        let cache = MemoryCache(now: { clock.now() })
        cache.store(Data("soon".utf8), for: key("soon"), expiresAt: clock.now().addingTimeInterval(10))
        cache.store(Data("ttl".utf8), for: key("ttl"), ttl: .milliseconds(50))
        cache.store(Data("never".utf8), for: key("never"))
        #expect(cache.value(for: key("soon")) == Data("soon".utf8))
        #expect(cache.contains(key("ttl")))

        // When 11 s pass
        clock.advance(by: 11)

        // Then only the value without expiry is left
        #expect(cache.value(for: key("soon")) == nil)
        #expect(!cache.contains(key("ttl")))
        #expect(cache.value(for: key("never")) == Data("never".utf8))
    }

    @Test("remove and removeAll")
    func removal() {
        // Given three values
        let cache = MemoryCache()
        for name in ["a", "b", "c"] {
            cache.store(Data(name.utf8), for: key(name))
        }

        // When one is removed / Then only it is gone
        cache.remove(key("a"))
        #expect(!cache.contains(key("a")))
        #expect(cache.contains(key("b")))

        // When all are removed / Then none is left
        cache.removeAll()
        #expect(!cache.contains(key("b")))
        #expect(!cache.contains(key("c")))
    }

    @Test("many threads storing and reading at once")
    func concurrentUse() async {
        // Given one cache shared by 8 tasks
        let cache = MemoryCache()

        // When each stores and reads 200 values, some under shared keys
        await withTaskGroup(of: Void.self) { group in
            for task in 0..<8 {
                group.addTask {
                    for i in 0..<200 {
                        let k = CacheKey(namespace: "t", string: "\(i % 50)")
                        cache.store(Data("\(i % 50)".utf8), for: k)
                        _ = cache.value(for: CacheKey(namespace: "t", string: "\((i + task) % 50)"))
                    }
                }
            }
        }

        // Then every shared key holds its one possible value
        for i in 0..<50 {
            let value = cache.value(for: CacheKey(namespace: "t", string: "\(i)"))
            #expect(value == nil || value == Data("\(i)".utf8))
        }
    }
}
