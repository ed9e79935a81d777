import CImageLibraries
import Foundation
@testable import MirrorModel
import MirrorSync
@testable import MirrorCore
@testable import MirrorFetch
import MirrorImages
@testable import MirrorStorage
import MirrorTestSupport
import Testing

/// PDQ (`CCodecs/pdq.c`) and what `--dedup near` builds on it: the hash's form, its invariance to what copies of one
/// picture differ by, its refusals of hostile images, the multi-index against a brute-force scan, and the folder that
/// keeps the first of two looks-alike images, across a reopening too.
@Suite("Perceptual hash")
struct PerceptualHashTests {
    /// A picture (smooth shapes over a gradient) decoded to pixels, to encode it again in other ways.
    private func pixels(seed: UInt64, width: Int, height: Int) throws -> TestPixels.Pixels {
        try #require(TestPixels.decodePNG(TestImages.picture(width: width, height: height, seed: seed)))
    }

    private func hash(_ data: Data) throws -> PerceptualHash {
        let info = try ImageValidator().validate(data)
        return try PerceptualHasher.hash(data, format: info.format)
    }

    /// The whole image's hash and its trimmed centres', as `--dedup near` compares them.
    private func hashes(_ data: Data) throws -> PictureHashes {
        try PerceptualHasher.hashes(data, format: try ImageValidator().validate(data).format)
    }

    @Test func theHexFormRoundTripsAndDistancesCountBits() throws {
        let hex = "d8f8f0cee0f4a84f0637022a078f67f0b36e2ed596621e1d33e6339c4e9c9b22"
        let hash = try #require(PerceptualHash(hex: hex, quality: 100))
        #expect(hash.hex == hex)
        #expect(PerceptualHash(bytes: hash.bytes, quality: 100) == hash)
        #expect(hash.distance(to: hash) == 0)
        // One hex digit from 8 to 9 is one bit; the complement is all 256
        let one = try #require(PerceptualHash(hex: "d9" + hex.dropFirst(2), quality: 100))
        #expect(hash.distance(to: one) == 1)
        #expect(hash.distance(to: PerceptualHash(bits: ~hash.bits, quality: 100)) == 256)
        #expect(PerceptualHash(hex: "xyz", quality: 1) == nil)
        #expect(PerceptualHash(hex: String(hex.dropLast()) + "g", quality: 1) == nil)
        #expect(PerceptualHash(bytes: [UInt8](repeating: 0, count: 31), quality: 1) == nil)
    }

    @Test func copiesOfOnePictureHashCloseAndOtherPicturesFar() throws {
        // Given a picture as a PNG, and its copies: half size, as a BMP, as a JPEG, and trimmed by 3 % a side
        let original = try pixels(seed: 7, width: 640, height: 480)
        let base = try hash(TestImages.picture(width: 640, height: 480, seed: 7))
        let baseHashes = try hashes(TestImages.picture(width: 640, height: 480, seed: 7))
        let jpeg = try #require(TestPixels.jpeg(width: 640, height: 480, subsampling: TJSAMP_420) { original.rgb($0, $1) })
        let trimmed = try #require(TestPixels.jpeg(width: 602, height: 452) { original.rgb($0 + 19, $1 + 14) })
        let copies: [String: Data] = [
            "half size": TestImages.picture(width: 320, height: 240, seed: 7),
            "bmp": TestImages.picture(width: 500, height: 375, seed: 7, format: .bmp),
            "jpeg": jpeg,
            "trimmed": trimmed,
        ]
        // Then every copy is within the default distance, with a trustworthy quality: the trimmed one by the whole
        // image's centre (by the whole images alone, 3 % off each border is 40-100 bits on photographs)
        #expect(base.isReliable, "quality \(base.quality)")
        for (name, data) in copies {
            let distance = NearDuplicatePolicy.distance(baseHashes, try hashes(data))
            #expect(distance <= NearDuplicatePolicy.defaultDistance, "\(name): \(distance) bits")
        }
        // And other pictures are far from it and from each other
        let others = try (8..<14).map { try hash(TestImages.picture(width: 640, height: 480, seed: $0)) }
        for (index, other) in others.enumerated() {
            #expect(other.distance(to: base) > 2 * NearDuplicatePolicy.defaultDistance, "seed \(index + 8): \(other.distance(to: base)) bits")
        }
        let otherHashes = try (8..<14).map { try hashes(TestImages.picture(width: 640, height: 480, seed: $0)) }
        for (index, other) in otherHashes.enumerated() {
            let distance = NearDuplicatePolicy.distance(baseHashes, other)
            #expect(distance > 2 * NearDuplicatePolicy.defaultDistance, "seed \(index + 8), trims included: \(distance) bits")
        }
    }

    @Test func aFlatImageIsNotTrusted() throws {
        // A grey square and a gentle gradient hash, but flat: no step between samples of even 1 % of the range
        let grey = TestPixels.png(width: 300, height: 200, channels: 3) { _, _ in [128, 128, 128] }
        let gradient = TestPixels.png(width: 300, height: 200, channels: 3) { x, _ in [UInt8(100 + x / 10), 120, 120] }
        #expect(try hash(grey).isFlat)
        #expect(try hash(gradient).isFlat)
    }

    @Test func hostileImagesAreRefusedBeforeADecoderAllocates() throws {
        // A PNG declaring 100,000 × 100,000 pixels: too large, from its header, under any sane limit
        #expect(throws: ImageTransform.Failure.self) { try PerceptualHasher.hash(TestImages.pixelBomb(), format: .png, memoryLimit: 64 << 20) }
        do {
            _ = try PerceptualHasher.hash(TestImages.pixelBomb(), format: .png, memoryLimit: 64 << 20)
        } catch {
            #expect(error.kind == .tooLarge)
        }
        // A JPEG cut in half, and bytes that only start like a JPEG: refused, not a crash
        let jpeg = try #require(TestPixels.jpeg(width: 200, height: 150) { x, y in [UInt8(x), UInt8(y), 90] })
        #expect(throws: ImageTransform.Failure.self) { try PerceptualHasher.hash(jpeg.prefix(jpeg.count / 2), format: .jpeg) }
        #expect(throws: ImageTransform.Failure.self) { try PerceptualHasher.hash(Data([0xFF, 0xD8, 0xFF, 0xE0]) + Data(count: 64), format: .jpeg) }
        // A PNG declaring 1,195,787,832 × 929,103,872 pixels (the fuzzer's): never an estimate of nothing (past SIZE_MAX
        // the estimate once came back as OK, and -1 bytes to take from the budget), and too large to hash
        let huge = Data(base64Encoded: "iVBORw0KGgoAgAANSUhEUkdJRjg3YQAA////AAj/P///////////AOZe264pxwAAACAAAABJaUNDUEVOYESuQmCC")!
        let hugeEstimate = try? PerceptualHasher.estimate(huge, format: .png)
        #expect(hugeEstimate == nil || hugeEstimate! > 1 << 50, "\(String(describing: hugeEstimate))")
        #expect(throws: ImageTransform.Failure.self) { try PerceptualHasher.hash(huge, format: .png) }
        // And the estimate is what the hash is checked against: a limit under it refuses
        let picture = TestImages.picture(width: 400, height: 300, seed: 1)
        let needed = try PerceptualHasher.estimate(picture, format: .png)
        #expect(needed > 400 * 300 * 3)
        #expect(throws: ImageTransform.Failure.self) { try PerceptualHasher.hash(picture, format: .png, memoryLimit: 400 * 300) }
        #expect(try PerceptualHasher.hash(picture, format: .png, memoryLimit: needed).isReliable)
    }

    // MARK: The index

    /// A hash `flips` bits from `hash`, the bits chosen by `random`.
    private func neighbour(of hash: SIMD4<UInt64>, flips: Int, using random: inout some RandomNumberGenerator) -> SIMD4<UInt64> {
        var bits = hash
        for bit in Array(0..<256).shuffled(using: &random).prefix(flips) { bits[bit / 64] ^= 1 << UInt64(bit % 64) }
        return bits
    }

    /// The first 1,000 hashes are scanned, the rest through the tables built then (60 bits: scanned throughout).
    @Test(arguments: [(10, 8), (23, 8), (31, 16), (40, 16), (31, 8), (60, 16)])
    func theIndexFindsWhatAScanFinds(distance: Int, segments: Int) {
        // Given 3,000 random hashes, and queries near some of them (0 to distance + 3 bits away) and far from all
        var random = SeededRandom(seed: UInt64(distance * 100 + segments))
        var index = NearDuplicateIndex(distance: distance, segments: segments, scanLimit: 1_000)
        var stored: [SIMD4<UInt64>] = []
        for _ in 0..<3_000 {
            let bits = SIMD4<UInt64>(random.next(), random.next(), random.next(), random.next())
            stored.append(bits)
            index.insert(bits)
        }
        var queries = (0..<300).map { at in neighbour(of: stored[at * 7], flips: at % (distance + 4), using: &random) }
        queries += (0..<100).map { _ in SIMD4<UInt64>(random.next(), random.next(), random.next(), random.next()) }

        // Then the index answers each exactly as a scan of every hash does: the closest within the distance
        for query in queries {
            let hash = PerceptualHash(bits: query, quality: 100)
            var expected: (position: Int, distance: Int)?
            for (position, bits) in stored.enumerated() {
                let found = hash.distance(to: PerceptualHash(bits: bits, quality: 100))
                if found <= distance, expected == nil || found < expected!.distance { expected = (position, found) }
            }
            let answer = index.match(for: query)
            #expect(answer?.position == expected?.position && answer?.distance == expected?.distance)
        }
    }

    // MARK: The folder

    @Test func aFolderKeepsTheFirstOfTwoLooksAlikeAndRemembersIt() async throws {
        // Given a folder that takes near-duplicates for duplicates, and three images: a picture, a smaller copy of it,
        // and another picture
        let directory = TemporaryFolder()
        let folder = try OutputFolder(directory: directory.url)
        let sink = try FolderSink(folder: folder, deduplication: .near(NearDuplicatePolicy()))
        func image(_ data: Data, _ name: String) throws -> VerifiedImage {
            var image = try directory.verifiedImage(data, from: URL(string: "http://h.test/\(name)")!)
            image.pictureHashes = PictureHashes(whole: try hash(data))
            return image
        }
        let first = try image(TestImages.picture(width: 480, height: 360, seed: 3), "a")
        let copy = try image(TestImages.picture(width: 240, height: 180, seed: 3, format: .bmp), "b")
        let other = try image(TestImages.picture(width: 480, height: 360, seed: 4), "c")

        // When all three are published together (one batch), and the copy again after the folder is reopened
        let outcomes = Locked<[String: Publication]>([:])
        for (stem, image) in [("a", first), ("b", copy), ("c", other)] {
            sink.publish(image, stem: stem, provenance: ImageProvenance()) { outcome in outcomes.withLock { $0[stem] = outcome } }
        }
        await sink.drain()
        folder.releaseLock()
        let reopened = try OutputFolder(directory: directory.url)
        defer { reopened.releaseLock() }
        let again = try FolderSink(folder: reopened, deduplication: .near(NearDuplicatePolicy()))
        let copyAgain = try image(TestImages.picture(width: 300, height: 225, seed: 3), "d")
        let later = Locked<Publication?>(nil)
        again.publish(copyAgain, stem: "d", provenance: ImageProvenance()) { outcome in later.withLock { $0 = outcome } }
        await again.drain()

        // Then the first is kept, the copy is a near-duplicate of it (its distance named), the other picture is saved,
        // and the reopened folder still knows the first by its hash (from the manifest)
        let results = outcomes.withLock { $0 }
        guard case .success(.saved)? = results["a"], case .success(.saved)? = results["c"] else {
            Issue.record("expected a and c saved: \(results)")
            return
        }
        guard case let .success(.nearDuplicate(of, distance))? = results["b"] else {
            Issue.record("expected b to be a near-duplicate: \(String(describing: results["b"]))")
            return
        }
        #expect(of == "a.png" && distance <= NearDuplicatePolicy.defaultDistance)
        guard case .success(.nearDuplicate(of: "a.png", _))? = later.withLock({ $0 }) else {
            Issue.record("expected d to be a near-duplicate of a.png: \(String(describing: later.withLock { $0 }))")
            return
        }
        #expect(reopened.records.map(\.file).sorted() == ["a.png", "c.png"])
        #expect(reopened.records.allSatisfy { $0.pdq?.count == 64 && ($0.pdqQuality ?? 0) >= PerceptualHash.reliableQuality })
    }

    @Test func withExactOrNoneAndForFlatHashesNothingIsMerged() async throws {
        // Given a picture and its copy, both hashed
        let directory = TemporaryFolder()
        func image(_ data: Data, _ name: String, quality: Int? = nil) throws -> VerifiedImage {
            var image = try directory.verifiedImage(data, from: URL(string: "http://h.test/\(name)")!)
            let hash = try hash(data)
            image.pictureHashes = PictureHashes(whole: quality.map { PerceptualHash(bits: hash.bits, quality: $0) } ?? hash)
            return image
        }
        for (deduplication, quality, saved) in [(Deduplication.exact, nil, 2), (.none, nil, 3), (.near(NearDuplicatePolicy()), 0, 2)] {
            let output = directory.url.appendingPathComponent(UUID().uuidString)
            let folder = try OutputFolder(directory: output)
            defer { folder.releaseLock() }
            let sink = try FolderSink(folder: folder, deduplication: deduplication)
            let picture = TestImages.picture(width: 480, height: 360, seed: 5)
            // When the picture, its copy and the picture's very bytes again are published
            for (stem, data) in [("a", picture), ("b", TestImages.picture(width: 240, height: 180, seed: 5)), ("c", picture)] {
                sink.publish(try image(data, stem, quality: quality), stem: stem, provenance: ImageProvenance()) { _ in }
            }
            await sink.drain()
            // Then only `none` keeps the same bytes twice, and the copy is kept by all three (in the third its hash is
            // flat: noise, never compared)
            #expect(folder.savedCount == saved, "\(deduplication)")
        }
    }

}
