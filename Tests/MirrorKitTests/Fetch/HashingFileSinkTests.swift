import Crypto
import Foundation
@testable import MirrorCore
@testable import MirrorFetch
@testable import MirrorKit
@testable import MirrorSearch
@testable import MirrorStorage
import MirrorTestSupport
import Testing

/// The body sink: what reaches the file, what stays in memory, and the digest, whatever the chunking.
@Suite("HashingFileSink")
struct HashingFileSinkTests {
    /// Feeds `body` in chunks of the given sizes (cycled), finishes, and returns (the file, finish's data, digest).
    private func feed(_ body: Data, chunks: [Int]) throws -> (file: Data, inMemory: Data?, digest: String) {
        let folder = TemporaryFolder()
        let temporary = try AtomicFile.makeTemporary(in: folder.url)
        let sink = HashingFileSink(descriptor: temporary.descriptor, pool: BufferPool(size: HashingFileSink.memoryLimit))
        var offset = 0
        var index = 0
        while offset < body.count {
            let size = min(chunks[index % chunks.count], body.count - offset)
            try body[offset..<(offset + size)].withUnsafeBytes { try sink.write($0) }
            offset += size
            index += 1
        }
        let inMemory = try sink.finish().map { Data($0) }  // copied: finish's data lives only as long as the sink
        close(temporary.descriptor)
        return (try Data(contentsOf: temporary.url), inMemory, sink.digest())
    }

    private func hex(_ data: Data) -> String {
        SHA256.hash(data: data).map { String(format: "%02x", $0) }.joined()
    }

    @Test(arguments: [
        (bytes: 64, chunks: [7]),
        (bytes: 65_536, chunks: [16_384]),
        (bytes: 200_001, chunks: [1, 16_384, 7_001, 65_536, 300_000]),
        (bytes: HashingFileSink.memoryLimit, chunks: [16_384]),
        (bytes: HashingFileSink.memoryLimit + 1, chunks: [16_384, 3]),
        (bytes: 3 * HashingFileSink.memoryLimit + 12_345, chunks: [16_384, 99_999, 1]),
    ])
    func theFileHoldsTheBodyAndSmallBodiesStayInMemory(_ testCase: (bytes: Int, chunks: [Int])) throws {
        // Given a PNG-headed body (so the sniffing lets it through) of the given size
        var body = TestImages.png(width: 2, height: 2)
        while body.count < testCase.bytes { body.append(UInt8(truncatingIfNeeded: body.count &* 31)) }
        body = body.prefix(testCase.bytes)

        // When it is fed in uneven chunks
        let result = try feed(body, chunks: testCase.chunks)

        // Then the file is the body byte for byte, the digest is its SHA-256, and it is in memory iff it fits
        #expect(result.file == body)
        #expect(result.digest == hex(body))
        if body.count <= HashingFileSink.memoryLimit {
            #expect(result.inMemory == body)
        } else {
            #expect(result.inMemory == nil)
        }
    }
}
