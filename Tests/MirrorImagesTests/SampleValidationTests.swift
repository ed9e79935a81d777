import Foundation
import MirrorImages
import Testing

@Suite("Valid samples", .timeLimit(.minutes(5)))
struct SampleValidationTests {
    @Test("each sample validates with its exact format, size and frames", arguments: Sample.all)
    func validatesSample(_ sample: Sample) throws {
        // Given the bytes of a real file made by a real encoder
        let data = try sample.data()

        // When it is validated
        let info = try ImageValidator().validate(data)

        // Then format, width, height, frame count and animation match what the encoder was asked for
        #expect(info == sample.expectedInfo)
    }

    @Test("validate(fileAt:) maps the file and gives the same answer", arguments: Sample.all)
    func validatesFileOnDisk(_ sample: Sample) throws {
        // Given a sample on disk
        let url = try Sample.directory.appendingPathComponent(sample.file)

        // When it is validated by URL
        let info = try ImageValidator().validate(fileAt: url)

        // Then the result is the same as for the bytes in memory
        #expect(info == sample.expectedInfo)
    }

    @Test("a body that is a slice of a larger buffer validates the same")
    func validatesDataSlice() throws {
        // Given a sample embedded in a larger buffer, sliced out without rebasing (startIndex != 0)
        let sample = try Sample.named("baseline.jpg")
        let body = try sample.data()
        let buffer = Data([1, 2, 3, 4, 5]) + body + Data([9, 9])
        let slice = buffer[5..<(5 + body.count)]
        #expect(slice.startIndex == 5)

        // When the slice is validated
        let info = try ImageValidator().validate(slice)

        // Then it is read from its own start
        #expect(info == sample.expectedInfo)
    }

    @Test("validate(bytes:) accepts a raw buffer, as a fuzzer passes it")
    func validatesRawBuffer() throws {
        // Given the bytes of a sample in a raw buffer
        let sample = try Sample.named("animated.gif")
        let data = try sample.data()

        // When they are validated through the pointer API
        let info = try data.withUnsafeBytes { buffer in try ImageValidator().validate(bytes: buffer) }

        // Then the answer matches
        #expect(info == sample.expectedInfo)
    }
}

/// Checks that each sample really has the structure it is there to exercise, so a regenerated file that
/// lost it (a different encoder default) fails here rather than silently testing less.
@Suite("Samples exercise what they claim")
struct SampleStructureTests {
    @Test("progressive.jpg has an SOF2 frame and several scans")
    func progressiveJPEG() throws {
        let data = try Sample.named("progressive.jpg").data()
        #expect(data.offset(of: [0xFF, 0xC2]) != nil)
        #expect(data.offset(of: [0xFF, 0xC0]) == nil)
    }

    @Test("restart.jpg has a DRI segment and an RST0 marker inside its scan")
    func restartJPEG() throws {
        let data = try Sample.named("restart.jpg").data()
        let sos = try #require(data.offset(of: [0xFF, 0xDA]))
        #expect(data.offset(of: [0xFF, 0xDD]) != nil)
        #expect(data.offset(of: [0xFF, 0xD0], from: sos) != nil)
    }

    @Test("cmyk.jpg has four components in its frame header")
    func cmykJPEG() throws {
        let data = try Sample.named("cmyk.jpg").data()
        let sof = try #require(data.offset(of: [0xFF, 0xC0]))
        #expect(data[sof + 9] == 4)
    }

    @Test("exif.jpg starts with an APP1 Exif segment of over 4 KB, before the frame header")
    func exifJPEG() throws {
        let data = try Sample.named("exif.jpg").data()
        #expect(Array(data[0..<4]) == [0xFF, 0xD8, 0xFF, 0xE1])
        #expect(data.u16be(4) == 4047)
        #expect(data[6..<10] == Data("Exif".utf8))
        #expect(try #require(data.offset(of: [0xFF, 0xC0])) > 4000)
    }

    @Test("gray.png is grayscale and interlaced.png is Adam7-interlaced")
    func pngHeaders() throws {
        #expect(try Sample.named("gray.png").data()[25] == 0)  // color type
        #expect(try Sample.named("interlaced.png").data()[28] == 1)  // interlace method
    }

    @Test("the WebP samples use the three layouts")
    func webpLayouts() throws {
        #expect(try Sample.named("lossy.webp").data()[12..<16] == Data("VP8 ".utf8))
        #expect(try Sample.named("lossless.webp").data()[12..<16] == Data("VP8L".utf8))
        let alpha = try Sample.named("alpha.webp").data()
        #expect(alpha[12..<16] == Data("VP8X".utf8))
        #expect(alpha.offset(of: Array("ALPH".utf8)) != nil)
        #expect(try Sample.named("animated.webp").data().offset(of: Array("ANMF".utf8)) != nil)
    }

    @Test("the BMP samples cover both header kinds and a negative height")
    func bmpHeaders() throws {
        #expect(try Sample.named("bgr24.bmp").data().u32le(14) == 40)
        #expect(try Sample.named("os2.bmp").data().u32le(14) == 12)
        #expect(try Int32(bitPattern: Sample.named("topdown.bmp").data().u32le(22)) == -9)
    }

    @Test("the TIFF samples use both byte orders")
    func tiffByteOrders() throws {
        #expect(try Sample.named("little.tiff").data()[0..<4] == Data([0x49, 0x49, 0x2A, 0x00]))
        #expect(try Sample.named("big.tiff").data()[0..<4] == Data([0x4D, 0x4D, 0x00, 0x2A]))
    }

    @Test("image.heic has a padded tile ispe (64x80) before the primary grid's ispe (48x80)")
    func heicHasTwoSpatialExtents() throws {
        let data = try Sample.named("image.heic").data()
        let first = try #require(data.offset(of: Array("ispe".utf8)))
        let second = try #require(data.offset(of: Array("ispe".utf8), from: first + 4))
        // ispe payload: version/flags (4 bytes), width, height (big-endian UInt32)
        #expect(data.u16be(first + 10) == 64)
        #expect(data.u16be(second + 10) == 48)
    }
}
