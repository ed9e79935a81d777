import Foundation
@testable import MirrorCore
@testable import MirrorFetch
@testable import MirrorKit
@testable import MirrorSearch
@testable import MirrorStorage
import Testing

@Suite("DiskCache under concurrent use", .timeLimit(.minutes(5)))
struct DiskCacheConcurrencyTests {
    @Test("8 tasks storing the same and different keys leave a consistent cache", arguments: [true, false])
    func concurrentStores(prefersHardLinks: Bool) async throws {
        try await withCacheTestDirectory { directory in
            // Given a shared body, one body per task, and a cache
            let root = directory.appendingPathComponent("cache")
            let cache = DiskCache(directory: root, prefersHardLinks: prefersHardLinks)
            let sharedKey = CacheKey(url: URL(string: "https://img.example.com/shared.jpg")!)
            let sharedBytes = CacheFixture.bytes(64 * 1024, seed: 200)
            let sharedFile = try CacheFixture.writeFile(sharedBytes, named: "shared", in: directory)
            let bodies = try (0..<8).map { task in
                let bytes = CacheFixture.bytes(16 * 1024 + task, seed: UInt8(task))
                return (
                    key: CacheKey(url: URL(string: "https://img.example.com/\(task).jpg?utm_campaign=\(task)")!),
                    file: try CacheFixture.writeFile(bytes, named: "body-\(task)", in: directory),
                    bytes: bytes
                )
            }

            // When 8 tasks each store the shared key and their own 25 times, and look both up in between
            let failures = await withTaskGroup(of: Int.self) { group in
                for task in 0..<8 {
                    group.addTask {
                        var failures = 0
                        let own = bodies[task]
                        for _ in 0..<25 {
                            do {
                                try cache.store(fileAt: sharedFile, sha256: sha256Hex(sharedBytes), for: sharedKey)
                                try cache.store(fileAt: own.file, sha256: sha256Hex(own.bytes), for: own.key)
                            } catch {
                                failures += 1
                            }
                            if cache.entry(for: sharedKey)?.bytes != Int64(sharedBytes.count) {
                                failures += 1
                            }
                            _ = cache.stats()
                        }
                        return failures
                    }
                }
                return await group.reduce(0, +)
            }

            // Then nothing failed, every key yields its own bytes, and nothing is left half-done
            #expect(failures == 0)
            let shared = try #require(cache.entry(for: sharedKey))
            #expect(try Data(contentsOf: shared.url) == sharedBytes)
            for body in bodies {
                let entry = try #require(cache.entry(for: body.key))
                #expect(entry.sha256 == sha256Hex(body.bytes))
                #expect(try Data(contentsOf: entry.url) == body.bytes)
            }
            #expect(cache.stats().entries == 9)
            #expect(CacheFixture.files(under: cache.indexDirectory).count == 9)
            #expect(CacheFixture.files(under: cache.temporaryDirectory).isEmpty)
        }
    }

    @Test("8 tasks materializing one entry into one place: exactly one succeeds, the rest are refused")
    func concurrentMaterialize() async throws {
        try await withCacheTestDirectory { directory in
            // Given a cached body
            let cache = DiskCache(directory: directory.appendingPathComponent("cache"), prefersHardLinks: false)
            let bytes = CacheFixture.bytes(256 * 1024, seed: 5)
            let key = CacheKey(url: URL(string: "https://img.example.com/race.jpg")!)
            let body = try CacheFixture.writeFile(bytes, named: "race", in: directory)
            try cache.store(fileAt: body, sha256: sha256Hex(bytes), for: key)
            let entry = try #require(cache.entry(for: key))
            let output = directory.appendingPathComponent("out", isDirectory: true)
            try FileManager.default.createDirectory(at: output, withIntermediateDirectories: true)
            let destination = output.appendingPathComponent("race.jpg")

            // When 8 tasks materialize it at the same destination
            let outcomes = await withTaskGroup(of: Bool.self) { group in
                for _ in 0..<8 {
                    group.addTask { (try? cache.materialize(entry, at: destination)) != nil }
                }
                return await group.reduce(into: [Bool]()) { $0.append($1) }
            }

            // Then one won, the file is whole, and no temporary file is left
            #expect(outcomes.filter { $0 }.count == 1)
            #expect(try Data(contentsOf: destination) == bytes)
            #expect(CacheFixture.files(under: output) == ["race.jpg"])
        }
    }
}
