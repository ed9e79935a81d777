import Foundation
@testable import MirrorCore
@testable import MirrorFetch
@testable import MirrorKit
@testable import MirrorSearch
@testable import MirrorStorage
import Testing

@Suite("DiskCache images", .timeLimit(.minutes(5)))
struct DiskCacheTests {
    private let imageKey = CacheKey(url: URL(string: "https://img.example.com/cat.jpg?w=640&api_key=SEKRET")!)

    /// A cache in `directory/cache`, plus a validated body in `directory/downloads` with its digest.
    private func makeCache(
        in directory: URL,
        prefersHardLinks: Bool = true,
        clock: CacheTestClock = CacheTestClock()
    ) throws -> (cache: DiskCache, body: URL, bytes: Data, sha256: String) {
        let cache = DiskCache(
            directory: directory.appendingPathComponent("cache", isDirectory: true),
            prefersHardLinks: prefersHardLinks,
            now: { clock.now() }
        )
        let downloads = directory.appendingPathComponent("downloads", isDirectory: true)
        try FileManager.default.createDirectory(at: downloads, withIntermediateDirectories: true)
        let bytes = CacheFixture.bytes(5_000, seed: 3)
        let body = try CacheFixture.writeFile(bytes, named: "cat.jpg.part", in: downloads)
        return (cache, body, bytes, sha256Hex(bytes))
    }

    @Test("store, look up and materialize by hard link: one inode throughout")
    func hardLinkRoundTrip() throws {
        try withCacheTestDirectory { directory in
            // Given a validated body on the cache's filesystem
            let (cache, body, bytes, digest) = try makeCache(in: directory)

            // When it is stored, looked up and materialized into an output folder
            try cache.store(fileAt: body, sha256: digest, for: imageKey, format: "jpeg")
            let entry = try #require(cache.entry(for: imageKey))
            let output = directory.appendingPathComponent("out.jpg")
            try cache.materialize(entry, at: output)

            // Then the entry describes the body, and source, object and output share one inode
            #expect(entry.sha256 == digest)
            #expect(entry.bytes == Int64(bytes.count))
            #expect(entry.format == "jpeg")
            #expect(entry.url.lastPathComponent == digest)
            #expect(entry.url.deletingLastPathComponent().lastPathComponent == String(digest.prefix(2)))
            let sourceInode = try #require(CacheFixture.inode(of: body))
            #expect(CacheFixture.inode(of: entry.url) == sourceInode)
            #expect(CacheFixture.inode(of: output) == sourceInode)
            #expect(try Data(contentsOf: output) == bytes)
        }
    }

    @Test("with hard links turned off, store and materialize copy, and leave no temporary files")
    func copyRoundTrip() throws {
        try withCacheTestDirectory { directory in
            // Given a cache that must copy
            let (cache, body, bytes, digest) = try makeCache(in: directory, prefersHardLinks: false)

            // When the body is stored and materialized
            try cache.store(fileAt: body, sha256: digest, for: imageKey)
            let entry = try #require(cache.entry(for: imageKey))
            let output = directory.appendingPathComponent("out.jpg")
            try cache.materialize(entry, at: output)

            // Then three separate files hold the same bytes
            let inodes = [body, entry.url, output].compactMap(CacheFixture.inode(of:))
            #expect(Set(inodes).count == 3)
            #expect(try Data(contentsOf: entry.url) == bytes)
            #expect(try Data(contentsOf: output) == bytes)

            // And nothing temporary is left in the cache or next to the output
            #expect(CacheFixture.files(under: cache.temporaryDirectory).isEmpty)
            let outputFolder = try FileManager.default.contentsOfDirectory(atPath: directory.path)
            #expect(!outputFolder.contains { $0.hasPrefix(DiskCache.temporaryFilePrefix) })
        }
    }

    @Test("materialize never replaces an existing file", arguments: [true, false])
    func materializeNeverOverwrites(prefersHardLinks: Bool) throws {
        try withCacheTestDirectory { directory in
            // Given a cached body and a file already at the destination
            let (cache, body, _, digest) = try makeCache(in: directory, prefersHardLinks: prefersHardLinks)
            try cache.store(fileAt: body, sha256: digest, for: imageKey)
            let entry = try #require(cache.entry(for: imageKey))
            let output = try CacheFixture.writeFile(Data("precious".utf8), named: "out.jpg", in: directory)

            // When it is materialized there
            #expect(throws: DiskCacheError.destinationExists(path: output.path)) {
                try cache.materialize(entry, at: output)
            }

            // Then the existing file is untouched and no temporary file is left beside it
            #expect(try Data(contentsOf: output) == Data("precious".utf8))
            let names = try FileManager.default.contentsOfDirectory(atPath: directory.path)
            #expect(!names.contains { $0.hasPrefix(DiskCache.temporaryFilePrefix) })
        }
    }

    @Test("materialize reports an object swept since the lookup, and writes nothing", arguments: [true, false])
    func materializeMissingObject(prefersHardLinks: Bool) throws {
        try withCacheTestDirectory { directory in
            // Given an entry whose object has since been removed
            let (cache, body, _, digest) = try makeCache(in: directory, prefersHardLinks: prefersHardLinks)
            try cache.store(fileAt: body, sha256: digest, for: imageKey)
            let entry = try #require(cache.entry(for: imageKey))
            try FileManager.default.removeItem(at: entry.url)

            // When it is materialized
            let output = directory.appendingPathComponent("out.jpg")
            #expect(throws: DiskCacheError.objectMissing(sha256: digest)) {
                try cache.materialize(entry, at: output)
            }

            // Then nothing appeared
            #expect(!FileManager.default.fileExists(atPath: output.path))
        }
    }

    @Test("a missing or resized object is a miss, and its index record is cleaned up")
    func missingObjectIsAMiss() throws {
        try withCacheTestDirectory { directory in
            // Given two keys whose objects are then deleted and truncated
            let (cache, body, _, digest) = try makeCache(in: directory, prefersHardLinks: false)
            let other = CacheKey(url: URL(string: "https://img.example.com/dog.jpg")!)
            let otherBytes = CacheFixture.bytes(700, seed: 9)
            let otherBody = try CacheFixture.writeFile(otherBytes, named: "dog.jpg", in: directory)
            try cache.store(fileAt: body, sha256: digest, for: imageKey)
            try cache.store(fileAt: otherBody, sha256: sha256Hex(otherBytes), for: other)
            try FileManager.default.removeItem(at: cache.objectURL(for: digest))
            try Data("short".utf8).write(to: cache.objectURL(for: sha256Hex(otherBytes)))

            // When they are looked up
            let missing = cache.entry(for: imageKey)
            let resized = cache.entry(for: other)

            // Then both miss, their index records are gone, and so is the damaged object
            #expect(missing == nil)
            #expect(resized == nil)
            #expect(!FileManager.default.fileExists(atPath: cache.indexURL(for: imageKey).path))
            #expect(!FileManager.default.fileExists(atPath: cache.indexURL(for: other).path))
            #expect(!FileManager.default.fileExists(atPath: cache.objectURL(for: sha256Hex(otherBytes)).path))
        }
    }

    @Test("a corrupt or hostile index record is a miss, never a crash", arguments: [
        "not json at all",
        "{\"sha256\": 42}",
        "{\"sha256\": \"../../../../etc/passwd\", \"bytes\": 1}",
        "{\"sha256\": \"\(String(repeating: "A", count: 64))\", \"bytes\": 1}",
        "",
    ])
    func corruptIndexIsAMiss(contents: String) throws {
        try withCacheTestDirectory { directory in
            // Given a stored body whose index record is then overwritten
            let (cache, body, _, digest) = try makeCache(in: directory)
            try cache.store(fileAt: body, sha256: digest, for: imageKey)
            try Data(contents.utf8).write(to: cache.indexURL(for: imageKey))

            // When it is looked up / Then it misses and the bad record is removed
            #expect(cache.entry(for: imageKey) == nil)
            #expect(!FileManager.default.fileExists(atPath: cache.indexURL(for: imageKey).path))
        }
    }

    @Test("a digest that is not 64 lowercase hex digits is refused")
    func invalidDigest() throws {
        try withCacheTestDirectory { directory in
            let (cache, body, _, digest) = try makeCache(in: directory)
            for bad in ["", "../x", digest.uppercased(), String(digest.dropLast())] {
                #expect(throws: DiskCacheError.invalidDigest(bad)) {
                    try cache.store(fileAt: body, sha256: bad, for: imageKey)
                }
            }
            #expect(CacheFixture.files(under: cache.directory).isEmpty)
        }
    }

    @Test("a symbolic link is refused as a source, so no object can point outside the cache")
    func symbolicLinkSource() throws {
        try withCacheTestDirectory { directory in
            // Given a link to a validated body
            let (cache, body, _, digest) = try makeCache(in: directory)
            let link = directory.appendingPathComponent("link.jpg")
            try FileManager.default.createSymbolicLink(at: link, withDestinationURL: body)

            // When the link is stored / Then it is refused and nothing is cached
            #expect(throws: DiskCacheError.self) {
                try cache.store(fileAt: link, sha256: digest, for: imageKey)
            }
            #expect(cache.entry(for: imageKey) == nil)
        }
    }

    @Test("the index record holds the normalized URL, without secrets")
    func indexRecordHasNoSecrets() throws {
        try withCacheTestDirectory { directory in
            // Given a body stored under a key made from a URL with an API key
            let (cache, body, bytes, digest) = try makeCache(in: directory)
            try cache.store(fileAt: body, sha256: digest, for: imageKey, format: "jpeg")

            // When the index record is read
            let data = try Data(contentsOf: cache.indexURL(for: imageKey))
            let record = try JSONDecoder().decode(DiskCache.IndexRecord.self, from: data)

            // Then it names the object and the normalized URL, and nowhere the secret
            #expect(record == .init(sha256: digest, bytes: Int64(bytes.count), format: "jpeg",
                                    url: "https://img.example.com/cat.jpg?w=640"))
            #expect(!String(decoding: data, as: UTF8.self).contains("SEKRET"))
            #expect(!CacheFixture.files(under: cache.directory).contains { $0.contains("SEKRET") })
        }
    }

    @Test("two URLs with the same bytes share one object")
    func contentAddressing() throws {
        try withCacheTestDirectory { directory in
            // Given the same body stored under two keys
            let (cache, body, _, digest) = try makeCache(in: directory, prefersHardLinks: false)
            let mirrorKey = CacheKey(url: URL(string: "https://mirror.example.org/cat.jpg")!)
            try cache.store(fileAt: body, sha256: digest, for: imageKey)
            try cache.store(fileAt: body, sha256: digest, for: mirrorKey)

            // When both are looked up / Then they resolve to one object
            #expect(cache.entry(for: imageKey)?.url == cache.entry(for: mirrorKey)?.url)
            #expect(cache.stats().entries == 1)
            #expect(CacheFixture.files(under: cache.indexDirectory).count == 2)
        }
    }

    @Test("a hit sets the object's modification date to now (Linux cannot set birth time)")
    func hitTouchesModificationDate() throws {
        try withCacheTestDirectory { directory in
            // Given a stored object last used long ago
            let clock = CacheTestClock()
            let (cache, body, _, digest) = try makeCache(in: directory, clock: clock)
            try cache.store(fileAt: body, sha256: digest, for: imageKey)
            let longAgo = Date(timeIntervalSince1970: 1_000_000)
            try CacheFixture.setModificationDate(longAgo, of: cache.objectURL(for: digest))

            // When it is looked up an hour later on the cache's clock
            clock.advance(by: 3600)
            let entry = try #require(cache.entry(for: imageKey))

            // Then its modification date is that time
            let touched = try #require(CacheFixture.modificationDate(of: entry.url))
            #expect(abs(touched.timeIntervalSince(clock.now())) < 1)
        }
    }

    @Test("remove drops the key; removeAll empties the cache")
    func removal() throws {
        try withCacheTestDirectory { directory in
            let (cache, body, _, digest) = try makeCache(in: directory)
            try cache.store(fileAt: body, sha256: digest, for: imageKey)
            try cache.storePage(Data("{}".utf8), for: imageKey, ttl: .seconds(60))

            // When the key is removed / Then its record and page are gone, the object stays for the sweep
            cache.remove(imageKey)
            #expect(cache.entry(for: imageKey) == nil)
            #expect(cache.page(for: imageKey) == nil)
            #expect(cache.stats().entries == 1)

            // When everything is removed / Then nothing is left
            try cache.store(fileAt: body, sha256: digest, for: imageKey)
            try cache.removeAll()
            #expect(cache.entry(for: imageKey) == nil)
            #expect(cache.stats() == (0, 0, 0))
            #expect(CacheFixture.files(under: cache.directory).isEmpty)
        }
    }

    @Test("the default directory follows XDG_CACHE_HOME, else HOME")
    func defaultDirectory() {
        #expect(DiskCache.defaultDirectory(environment: ["XDG_CACHE_HOME": "/var/cache/u", "HOME": "/home/u"]).path
            == "/var/cache/u/mirror")
        #expect(DiskCache.defaultDirectory(environment: ["XDG_CACHE_HOME": "relative", "HOME": "/home/u"]).path
            == "/home/u/.cache/mirror")
        #expect(DiskCache.defaultDirectory(environment: ["XDG_CACHE_HOME": "", "HOME": "/home/u"]).path
            == "/home/u/.cache/mirror")
        #expect(DiskCache.defaultDirectory(environment: ["HOME": "/home/u"]).path == "/home/u/.cache/mirror")
    }
}
