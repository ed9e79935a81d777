import Foundation
@testable import MirrorCore
@testable import MirrorFetch
@testable import MirrorKit
@testable import MirrorSearch
@testable import MirrorStorage
import Testing

@Suite("Hashing", .timeLimit(.minutes(5)))
struct HashingTests {
    @Test("sha256Hex matches the FIPS 180-2 test vector")
    func knownVector() {
        #expect(sha256Hex(Data("abc".utf8)) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(sha256Hex(Data()) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
    }

    @Test("hashing a file in chunks equals hashing its bytes at once")
    func fileMatchesData() throws {
        try withCacheTestDirectory { directory in
            // Given a file that spans three 1 MiB chunks
            let bytes = CacheFixture.bytes((1 << 21) + 12_345, seed: 7)
            let file = try CacheFixture.writeFile(bytes, named: "big.bin", in: directory)

            // When it is hashed from disk / Then the digest is the in-memory one
            #expect(try sha256Hex(fileAt: file) == sha256Hex(bytes))
        }
    }
}
