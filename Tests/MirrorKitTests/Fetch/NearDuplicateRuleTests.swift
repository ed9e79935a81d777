import CCodecs
import Foundation
@testable import MirrorModel
import MirrorSync
@testable import MirrorCore
@testable import MirrorFetch
import MirrorImages
@testable import MirrorStorage
import MirrorTestSupport
import Testing

/// Issue 45's rule for `--dedup near`: hashes of a canonical rendering, so that one picture at other sizes hashes
/// close even where it holds fine detail; low-quality hashes compared within a stricter distance instead of never; flat
/// ones never; and hashes an earlier mirror's computation made, recomputed before they are compared.
@Suite("Near-duplicate rule")
struct NearDuplicateRuleTests {
    // MARK: Pictures

    /// A brick wall of `width` × `height` pixels, drawn at that size from one description (each pixel the mean of 4 × 4
    /// points), so that two sizes are the same picture: 55 bricks across and 110 courses down, every other course
    /// shifted by half a brick, mortar lighter, each brick's shade within a few levels of the others' (`seed` chooses
    /// them). Fine detail and little else: what PDQ of the decoded pixels lost at 60 % and 50 % (40 bits and more).
    private static func bricks(width: Int, height: Int, seed: UInt64) -> (Int, Int) -> [UInt8] {
        { x, y in
            var sum = 0
            for sy in 0..<4 {
                for sx in 0..<4 {
                    let u = (Double(x) + (Double(sx) + 0.5) / 4) / Double(width), v = (Double(y) + (Double(sy) + 0.5) / 4) / Double(height)
                    let course = v * 110, row = Int(course)
                    let along = u * 55 + (row % 2 == 0 ? 0 : 0.5), column = Int(along)
                    if along - Double(column) < 0.08 || course - Double(row) < 0.12 {
                        sum += 230
                    } else {
                        var mixed = UInt64(row &* 1_000_003 &+ column) &+ seed &* 0x9E37_79B9_7F4A_7C15
                        mixed = (mixed ^ (mixed >> 31)) &* 0xBF58_476D_1CE4_E5B9
                        sum += 146 + Int((mixed >> 40) % 8)
                    }
                }
            }
            let grey = UInt8(sum / 16)
            return [grey, grey, grey]
        }
    }

    /// A low-contrast picture: a disc 35 levels above a grey ground with a gentle gradient down (PDQ quality about 6),
    /// its centre at (`x`, `y`) in fractions of the sides, brightened by `gain`.
    private static func disc(width: Int, height: Int, x cx: Double, y cy: Double, gain: Double = 1) -> (Int, Int) -> [UInt8] {
        { x, y in
            let u = Double(x) / Double(width), v = Double(y) / Double(height)
            let distance = (((u - cx) * Double(width) / Double(height)) * ((u - cx) * Double(width) / Double(height)) + (v - cy) * (v - cy)).squareRoot()
            let value = (110 + 20 * v + 35 * min(max((0.12 - distance) / 0.01, 0), 1)) * gain
            let grey = UInt8(min(max(value.rounded(), 0), 255))
            return [grey, grey, grey]
        }
    }

    private func hashes(_ data: Data) throws -> PictureHashes {
        try PerceptualHasher.hashes(data, format: try ImageValidator().validate(data).format)
    }

    // MARK: The hash

    @Test func theHashIsTheVersionTheRecordsName() {
        #expect(PerceptualHash.version == Int(MIRROR_CODECS_PDQ_VERSION))
    }

    @Test func aBrickWallAtSixtyAndFiftyPercentHashesCloseToItsWholeSize() throws {
        // Given a brick wall drawn at 640 × 480 (JPEG and PNG), at 60 % and at 50 % of that, and another wall
        let original = try hashes(try #require(TestPixels.jpeg(width: 640, height: 480, color: Self.bricks(width: 640, height: 480, seed: 1))))
        let copies: [String: Data] = [
            "png": TestPixels.png(width: 640, height: 480, channels: 3, color: Self.bricks(width: 640, height: 480, seed: 1)),
            "60 %": try #require(TestPixels.jpeg(width: 384, height: 288, color: Self.bricks(width: 384, height: 288, seed: 1))),
            "50 %": try #require(TestPixels.jpeg(width: 320, height: 240, color: Self.bricks(width: 320, height: 240, seed: 1))),
        ]
        let other = try hashes(try #require(TestPixels.jpeg(width: 640, height: 480, color: Self.bricks(width: 640, height: 480, seed: 2))))

        // Then every copy is one picture with it by the rule (within 26 bits: the wall's quality may fall under 50 at some
        // size), and the other wall is far from all of them
        let policy = NearDuplicatePolicy()
        for (name, data) in copies {
            let copy = try hashes(data)
            let distance = NearDuplicatePolicy.distance(original, copy)
            #expect(distance <= policy.lowQualityDistance, "\(name): \(distance) bits")
            #expect(policy.matches(original, copy), "\(name): qualities \(original.quality), \(copy.quality)")
            #expect(NearDuplicatePolicy.distance(other, copy) > 2 * policy.distance, "\(name) against the other wall")
        }
        #expect(!policy.matches(original, other))
    }

    @Test func aLowContrastPictureAndItsCopiesAreComparedAndAnotherIsNot() throws {
        // Given a grey disc on grey (PDQ quality under 50), its copies at 60 % and 8 % brighter, and the disc elsewhere
        let original = try hashes(TestPixels.png(width: 480, height: 360, channels: 3, color: Self.disc(width: 480, height: 360, x: 0.3, y: 0.4)))
        let smaller = try hashes(try #require(TestPixels.jpeg(width: 288, height: 216, color: Self.disc(width: 288, height: 216, x: 0.3, y: 0.4))))
        let brighter = try hashes(try #require(TestPixels.jpeg(width: 480, height: 360, color: Self.disc(width: 480, height: 360, x: 0.3, y: 0.4, gain: 1.08))))
        let elsewhere = try hashes(TestPixels.png(width: 480, height: 360, channels: 3, color: Self.disc(width: 480, height: 360, x: 0.7, y: 0.6)))

        // Then all four are of low quality but not flat, the copies match (they were never compared before), and the
        // disc elsewhere does not
        for image in [original, smaller, brighter, elsewhere] {
            #expect(image.quality > 0 && image.quality < PerceptualHash.reliableQuality, "quality \(image.quality)")
        }
        let policy = NearDuplicatePolicy()
        #expect(policy.matches(original, smaller), "\(NearDuplicatePolicy.distance(original, smaller)) bits")
        #expect(policy.matches(original, brighter), "\(NearDuplicatePolicy.distance(original, brighter)) bits")
        #expect(!policy.matches(original, elsewhere), "\(NearDuplicatePolicy.distance(original, elsewhere)) bits")
    }

    @Test func flatImagesOfDifferentColoursAreNeverOneAnother() throws {
        // Given solid grey 128 and solid grey 64: their hashes are the rounding of equal numbers, the same rounding
        let light = try hashes(TestPixels.png(width: 300, height: 200, channels: 3) { _, _ in [128, 128, 128] })
        let dark = try hashes(TestPixels.png(width: 300, height: 200, channels: 3) { _, _ in [64, 64, 64] })

        // Then both are flat and never match, however close their bits
        #expect(light.quality == 0 && dark.quality == 0)
        #expect(!NearDuplicatePolicy().matches(light, dark))
    }

    // MARK: The rule

    /// `hash` with its first `count` bits flipped.
    private func flipped(_ hash: SIMD4<UInt64>, _ count: Int) -> SIMD4<UInt64> {
        var bits = hash
        for bit in 0..<count { bits[bit / 64] ^= 1 << UInt64(bit % 64) }
        return bits
    }

    @Test func lowQualityHashesMatchWithinTheStricterDistanceAndFlatOnesNever() {
        let policy = NearDuplicatePolicy()
        #expect(policy.distance(between: 100, 50) == 31)
        #expect(policy.distance(between: 100, 49) == 26)
        #expect(policy.distance(between: 1, 1) == 26)
        #expect(policy.distance(between: 0, 100) == nil && policy.distance(between: 100, 0) == nil)

        // Given a hash, and others 26, 28 and 30 bits from it
        let base = SIMD4<UInt64>(0x0123_4567_89AB_CDEF, 0xFEDC_BA98_7654_3210, 0x0F0F_0F0F_F0F0_F0F0, 0x5555_AAAA_3333_CCCC)
        func pair(_ bits: Int, _ a: Int, _ b: Int) -> Bool {
            policy.matches(PictureHashes(whole: PerceptualHash(bits: base, quality: a)), PictureHashes(whole: PerceptualHash(bits: flipped(base, bits), quality: b)))
        }
        // Then two trusted hashes match at 30 bits; when either is of low quality, at 26 but not 28; a flat one never
        #expect(pair(30, 100, 50))
        #expect(!pair(28, 100, 49) && !pair(28, 20, 20))
        #expect(pair(26, 100, 49) && pair(26, 1, 1))
        #expect(!pair(0, 0, 0) && !pair(0, 100, 0))
    }

    @Test func aCloserLowQualityImageNeverHidesATrustedOneWithinReach() {
        // Given a set holding a low-quality image 28 bits from a new trusted one, and a trusted image 30 bits from it
        let base = SIMD4<UInt64>(0x0123_4567_89AB_CDEF, 0xFEDC_BA98_7654_3210, 0x0F0F_0F0F_F0F0_F0F0, 0x5555_AAAA_3333_CCCC)
        var set = NearDuplicateSet<String>(policy: NearDuplicatePolicy())
        set.insert(PictureHashes(whole: PerceptualHash(bits: flipped(base, 28), quality: 30)), "low")
        set.insert(PictureHashes(whole: PerceptualHash(bits: flipped(base, 30), quality: 90)), "trusted")
        set.insert(PictureHashes(whole: PerceptualHash(bits: base, quality: 0)), "flat")

        // Then the trusted image is its match; a new low-quality image matches neither (28 and 30 are past 26), nor the
        // flat one (never kept); a low-quality image 24 bits from the low one matches it
        #expect(set.count == 2)
        #expect(set.match(for: PictureHashes(whole: PerceptualHash(bits: base, quality: 90)))?.payload == "trusted")
        #expect(set.match(for: PictureHashes(whole: PerceptualHash(bits: base, quality: 49))) == nil)
        #expect(set.match(for: PictureHashes(whole: PerceptualHash(bits: flipped(flipped(base, 28), 24), quality: 10)))?.payload == "low")
        #expect(set.match(for: PictureHashes(whole: PerceptualHash(bits: base, quality: 0))) == nil)
    }

    @Test func aFolderMergesALowContrastCopyThatItOnceKeptTwice() async throws {
        // Given a folder comparing near-duplicates, a low-contrast picture, its smaller copy, and the disc elsewhere
        let directory = TemporaryFolder()
        let folder = try OutputFolder(directory: directory.url)
        defer { folder.releaseLock() }
        let sink = try FolderSink(folder: folder, deduplication: .near(NearDuplicatePolicy()))
        func image(_ data: Data, _ name: String) throws -> VerifiedImage {
            var image = try directory.verifiedImage(data, from: URL(string: "http://h.test/\(name)")!)
            image.pictureHashes = try PerceptualHasher.hashes(data, format: image.info.format)
            return image
        }
        let pictures = [
            ("a", TestPixels.png(width: 480, height: 360, channels: 3, color: Self.disc(width: 480, height: 360, x: 0.3, y: 0.4))),
            ("b", try #require(TestPixels.jpeg(width: 288, height: 216, color: Self.disc(width: 288, height: 216, x: 0.3, y: 0.4)))),
            ("c", TestPixels.png(width: 480, height: 360, channels: 3, color: Self.disc(width: 480, height: 360, x: 0.7, y: 0.6))),
        ]

        // When all three are published
        let outcomes = Locked<[String: Publication]>([:])
        for (stem, data) in pictures {
            sink.publish(try image(data, stem), stem: stem, provenance: ImageProvenance()) { outcome in outcomes.withLock { $0[stem] = outcome } }
        }
        await sink.drain()

        // Then the copy is a near-duplicate of the first, within the stricter distance, and the other disc is saved
        let results = outcomes.withLock { $0 }
        guard case let .success(.nearDuplicate(of, distance))? = results["b"] else {
            Issue.record("expected b to be a near-duplicate: \(String(describing: results["b"]))")
            return
        }
        #expect(of == "a.png" && distance <= NearDuplicatePolicy.defaultLowQualityDistance)
        #expect(folder.records.map(\.file).sorted() == ["a.png", "c.png"])
        #expect(folder.records.allSatisfy { $0.pdqVersion == PerceptualHash.version })
    }

    // MARK: Hashes of an earlier version

    @Test func aManifestLineGetsNewHashesAndKeepsEveryOtherByte() throws {
        // Given a version-1 line (no pdq_version) with a kept column, and one without hashes
        let old = #"{"file_name":"a.png","url":"http://h.test/a","pdq":"\#(String(repeating: "ab", count: 32))","pdq_quality":80,"pdq_trimmed":["\#(String(repeating: "cd", count: 32))"],"purpose":null,"w":"\u00e9"}"#
        let hash = PerceptualHash(bits: SIMD4(1, 2, 3, 4), quality: 42)

        // When its hashes are replaced
        let line = try #require(ManifestRecord.line(Data(old.utf8), replacingHashesWith: PictureHashes(whole: hash, trimmed: [SIMD4(5, 6, 7, 8)])))
        let text = String(decoding: line, as: UTF8.self)

        // Then the hashes, quality and version are the new ones, in place, and the rest is as it was
        let trim = PerceptualHash.hex(SIMD4(5, 6, 7, 8))
        #expect(text == #"{"file_name":"a.png","url":"http://h.test/a","pdq":"\#(hash.hex)","pdq_quality":42,"pdq_trimmed":["\#(trim)"],"pdq_version":2,"purpose":null,"w":"\u00e9"}"#)
        #expect(ManifestRecord.line(Data(#"{"file_name":"b.png","pdq":null,"pdq_quality":null}"#.utf8), replacingHashesWith: PictureHashes(whole: hash)) == nil)
    }

    @Test func aFolderSavedByAnEarlierMirrorIsHashedAgainOnceAndComparedFromThen() async throws {
        // Given a folder whose manifest holds a picture with a version-1 hash (garbage to this version) and no
        // pdq_version, as an earlier mirror wrote it
        let directory = TemporaryFolder()
        let picture = TestImages.picture(width: 480, height: 360, seed: 3)
        try picture.write(to: directory.url.appendingPathComponent("a.png"))
        let record = ManifestRecord(
            file: "a.png", url: "http://h.test/a", width: 480, height: 360, bytes: Int64(picture.count), sha256: sha256Hex(picture), format: "png",
            fetchedAt: Date(timeIntervalSince1970: 0), hashes: PictureHashes(whole: PerceptualHash(bits: SIMD4(1, 2, 3, 4), quality: 90), trimmed: [SIMD4(5, 6, 7, 8)])
        )
        var line = String(decoding: try record.jsonLine(), as: UTF8.self)
        line = line.replacingOccurrences(of: #","pdq_version":2"#, with: "")
        try Data(line.utf8).write(to: directory.url.appendingPathComponent("manifest.jsonl"))

        // When the folder opens comparing near-duplicates
        let folder = try OutputFolder(directory: directory.url, nearDuplicates: NearDuplicatePolicy())
        defer { folder.releaseLock() }
        let copy = try hashes(TestImages.picture(width: 240, height: 180, seed: 3))
        #expect(folder.recordsWithStaleHashes().map(\.file) == ["a.png"])
        #expect(folder.file(lookingLike: copy) == nil)  // a stale hash is never compared
        let refreshed = try PerceptualHasher(journal: folder.decodeJournal).refreshHashes(in: folder)

        // Then the picture is hashed again and written back with its version, a copy of it is found, and a second
        // refresh has nothing to do
        #expect(refreshed == 1)
        let saved = try #require(folder.records.first)
        #expect(saved.pdqVersion == PerceptualHash.version && saved.pdq != record.pdq)
        #expect(folder.file(lookingLike: copy)?.file == "a.png")
        #expect(folder.recordsWithStaleHashes().isEmpty)
        #expect(try PerceptualHasher(journal: folder.decodeJournal).refreshHashes(in: folder) == 0)
    }
}
