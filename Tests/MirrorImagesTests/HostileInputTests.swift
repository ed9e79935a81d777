import Foundation
import MirrorImages
import Testing

@Suite("Hostile and unusual headers", .timeLimit(.minutes(5)))
struct HostileInputTests {
    // MARK: - Pixel limit

    @Test("a PNG whose IHDR claims 100000x100000 is a decompression bomb")
    func pngBomb() throws {
        // Given a real PNG with its IHDR width and height rewritten to 100,000 (CRC left stale: not checked)
        let data = try Sample.named("gray.png").data()
        let forged = data.replacing(at: 16, with: [0x00, 0x01, 0x86, 0xA0, 0x00, 0x01, 0x86, 0xA0])

        // When it is validated with the default limit (Pillow's, 178,956,970 pixels)
        let result = rejection(of: forged)

        // Then it is refused for its pixel count before anything else is read
        #expect(result == .tooManyPixels(width: 100_000, height: 100_000, limit: 178_956_970))
        #expect(result?.description == "too many pixels: 100000x100000 exceeds the limit of 178956970")
    }

    @Test("the pixel limit is configurable and inclusive")
    func configurableLimit() throws {
        // Given a 37x23 (851-pixel) JPEG
        let data = try Sample.named("baseline.jpg").data()

        // When the limit is one pixel short, then exactly the image's size
        let tight = rejection(of: data, validator: ImageValidator(pixelLimit: 850))
        var validator = ImageValidator()
        validator.pixelLimit = 851
        let exact = try validator.validate(data)

        // Then only the smaller limit refuses it
        #expect(tight == .tooManyPixels(width: 37, height: 23, limit: 850))
        #expect(exact.width * exact.height == 851)
        #expect(ImageValidator().pixelLimit == 178_956_970)  // the most Pillow opens without refusing
    }

    @Test("a WebP VP8X canvas of 16777216x16777216 does not overflow")
    func webpHugeCanvas() throws {
        // Given an extended WebP whose canvas fields are all ones (24-bit width-1 and height-1)
        let data = try Sample.named("alpha.webp").data()
        let forged = data.replacing(at: 24, with: [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF])

        // When it is validated
        let result = rejection(of: forged)

        // Then the product is compared without trapping
        #expect(result == .tooManyPixels(width: 16_777_216, height: 16_777_216, limit: 178_956_970))
    }

    // MARK: - Zero and invalid dimensions

    @Test("a JPEG with zero height in its frame header")
    func jpegZeroHeight() throws {
        // Given a baseline JPEG whose SOF0 height is set to 0
        let data = try Sample.named("baseline.jpg").data()
        let sof = try #require(data.offset(of: [0xFF, 0xC0]))
        let forged = data.replacing(at: sof + 5, with: [0, 0])

        // When it is validated
        let result = rejection(of: forged)

        // Then it is malformed, with the reason
        #expect(result == .malformed(.jpeg, "zero height"))
        #expect(result?.description == "malformed JPEG: zero height")
    }

    @Test("a JPEG with no frame header before EOI")
    func jpegWithoutSOF() throws {
        // Given SOI, a comment segment and EOI
        let data = Data([0xFF, 0xD8, 0xFF, 0xFE, 0x00, 0x04, 0x68, 0x69, 0xFF, 0xD9])

        // When it is validated
        let result = rejection(of: data)

        // Then there is no size to report
        #expect(result == .malformed(.jpeg, "no SOF marker before EOI"))
    }

    @Test("a JPEG with a frame header but no scan before EOI")
    func jpegWithoutScan() throws {
        // Given the baseline JPEG cut right before its SOS marker, with EOI appended
        let data = try Sample.named("baseline.jpg").data()
        let sos = try #require(data.offset(of: [0xFF, 0xDA]))
        let forged = data.prefix(length: sos) + Data([0xFF, 0xD9])

        // When it is validated
        let result = rejection(of: forged)

        // Then a header without image data is not an image
        #expect(result == .malformed(.jpeg, "no scan (SOS) before EOI"))
    }

    @Test("a PNG with an impossible bit depth")
    func pngBadBitDepth() throws {
        // Given a grayscale PNG whose IHDR bit depth is 3
        let data = try Sample.named("gray.png").data()
        let forged = data.replacing(at: 24, with: [3])

        // When it is validated
        let result = rejection(of: forged)

        // Then the IHDR is malformed
        #expect(result == .malformed(.png, "IHDR bit depth 3 is invalid for color type 0"))
    }

    @Test("a PNG with zero width")
    func pngZeroWidth() throws {
        let data = try Sample.named("gray.png").data()
        #expect(rejection(of: data.replacing(at: 16, with: [0, 0, 0, 0])) == .malformed(.png, "zero width"))
    }

    @Test("a GIF with a 0x0 logical screen takes the first frame's size")
    func gifEmptyScreen() throws {
        // Given a static GIF whose logical screen descriptor says 0x0
        let data = try Sample.named("static.gif").data()
        let forged = data.replacing(at: 6, with: [0, 0, 0, 0])

        // When it is validated
        let info = try ImageValidator().validate(forged)

        // Then the image descriptor's 33x27 is used
        #expect(info == ImageInfo(format: .gif, width: 33, height: 27))
    }

    @Test("a BMP whose file header claims more bytes than arrived")
    func bmpFileSizeTooLarge() throws {
        let data = try Sample.named("os2.bmp").data()
        let forged = data.replacing(at: 2, with: [0xE0, 0x03, 0x00, 0x00])  // 992 instead of 986
        #expect(rejection(of: forged) == .truncated(.bmp, "file header says 992 bytes, have 986"))
    }

    @Test("a TIFF whose strip offset points past the end")
    func tiffStripOffsetPastEnd() throws {
        // Given a little-endian uncompressed TIFF with one strip, whose offset and byte count (tags 273
        // and 279, one LONG each) are stored inline in their IFD entries
        let data = try Sample.named("little.tiff").data()
        let offsets = try #require(tiffEntry(tag: 273, in: data))
        let byteCounts = try #require(tiffEntry(tag: 279, in: data))
        #expect(data.u32le(offsets + 4) == 1)
        #expect(data.u32le(byteCounts + 8) == 5130)

        // When the strip is pointed at byte 0x7FFF0000
        let forged = data.replacing(at: offsets + 8, with: [0x00, 0x00, 0xFF, 0x7F])
        let result = rejection(of: forged)

        // Then the strip does not fit in the body
        #expect(result == .truncated(.tiff, "strip 0 needs 5130 bytes at offset 2147418112, have 5394 in all"))
    }

    /// The offset of the entry for `tag` in the first IFD of a little-endian TIFF.
    private func tiffEntry(tag: Int, in data: Data) -> Int? {
        let ifd = Int(data.u32le(4))
        let entryCount = Int(data[ifd]) | Int(data[ifd + 1]) << 8
        return (0..<entryCount).map { ifd + 2 + $0 * 12 }.first { Int(data[$0]) | Int(data[$0 + 1]) << 8 == tag }
    }

    // MARK: - Tolerated and refused trailing data

    @Test("a JPEG followed by NUL and newline padding is accepted")
    func jpegTrailingPadding() throws {
        let data = try Sample.named("baseline.jpg").data() + Data([0, 0, 0x0A])
        #expect(try ImageValidator().validate(data) == Sample.named("baseline.jpg").expectedInfo)
    }

    @Test("a JPEG followed by a second JPEG (an MPF image) is accepted with the first one's size")
    func jpegAppendedImage() throws {
        let data = try Sample.named("baseline.jpg").data() + Sample.named("progressive.jpg").data()
        #expect(try ImageValidator().validate(data) == Sample.named("baseline.jpg").expectedInfo)
    }

    @Test("a JPEG followed by an HTML fragment is refused")
    func jpegTrailingGarbage() throws {
        let data = try Sample.named("baseline.jpg").data() + Data("<html>".utf8)
        #expect(rejection(of: data) == .malformed(.jpeg, "6 bytes of trailing data after EOI"))
    }

    @Test("a PNG followed by junk after IEND is refused")
    func pngTrailingGarbage() throws {
        let data = try Sample.named("gray.png").data() + Data("junk".utf8)
        #expect(rejection(of: data) == .malformed(.png, "4 bytes of trailing data after IEND"))
    }

    @Test("fill bytes and a standalone TEM marker between JPEG segments are accepted")
    func jpegFillBytesAndStandaloneMarkers() throws {
        // Given a baseline JPEG with FF FF FF fill bytes and an FF 01 (TEM) inserted before its SOF0 marker
        let data = try Sample.named("baseline.jpg").data()
        let sof = try #require(data.offset(of: [0xFF, 0xC0]))
        var forged = data
        forged.insert(contentsOf: [0xFF, 0x01, 0xFF, 0xFF, 0xFF], at: sof)

        // When it is validated
        let info = try ImageValidator().validate(forged)

        // Then it reads the same frame header
        #expect(try info == Sample.named("baseline.jpg").expectedInfo)
    }

    // MARK: - ISO-BMFF box sizes

    @Test("a final box of size 0 extends to the end of the file")
    func isoBoxSizeZero() throws {
        let data = try Sample.named("image.heic").data()
        let mdat = try #require(data.offset(of: Array("mdat".utf8))) - 4
        let forged = data.replacing(at: mdat, with: [0, 0, 0, 0])
        #expect(try ImageValidator().validate(forged) == Sample.named("image.heic").expectedInfo)
    }

    @Test("a box that claims fewer bytes than its own header")
    func isoBoxTooSmall() throws {
        let data = try Sample.named("image.avif").data()
        let mdat = try #require(data.offset(of: Array("mdat".utf8))) - 4
        let forged = data.replacing(at: mdat, with: [0, 0, 0, 4])
        #expect(rejection(of: forged) == .malformed(.avif, "box 'mdat' at offset \(mdat) has size 4"))
    }

    @Test("a 64-bit box size is followed")
    func isoLargeSize() throws {
        // Given an AVIF whose mdat header is rewritten as a 16-byte header with a 64-bit size, and every
        // iloc offset unchanged (the payload moves 8 bytes, but only bounds are checked)
        let data = try Sample.named("image.avif").data()
        let mdat = try #require(data.offset(of: Array("mdat".utf8))) - 4
        let payload = data[(mdat + 8)...]
        var largeSize = Data([0, 0, 0, 1]) + Data("mdat".utf8)
        largeSize += withUnsafeBytes(of: UInt64(payload.count + 16).bigEndian) { Data($0) }
        let forged = data.prefix(mdat) + largeSize + payload

        // When it is validated
        let info = try ImageValidator().validate(Data(forged))

        // Then the walk ends exactly at the end of the body
        #expect(try info == Sample.named("image.avif").expectedInfo)
    }

    // MARK: - Robustness

    @Test("thousands of seeded mutations of every sample never trap", arguments: Sample.all)
    func mutationsNeverTrap(_ sample: Sample) throws {
        // Given a sample and a deterministic generator
        let original = try sample.data()
        var generator = SplitMix64(seed: UInt64(original.count))

        for _ in 0..<1500 {
            // When 1 to 4 random bytes are overwritten (biased towards the header) or the body is cut
            var bytes = [UInt8](original)
            for _ in 0..<Int.random(in: 1...4, using: &generator) {
                let limit = Bool.random(using: &generator) ? min(64, bytes.count) : bytes.count
                bytes[Int.random(in: 0..<limit, using: &generator)] = UInt8.random(in: 0...255, using: &generator)
            }
            if Int.random(in: 0..<4, using: &generator) == 0 {
                bytes.removeLast(Int.random(in: 0..<bytes.count, using: &generator))
            }

            // Then validation returns or throws an ImageRejection; what it accepts is within the limit
            if let info = try? ImageValidator().validate(Data(bytes)) {
                #expect(info.width >= 1 && info.height >= 1)
                #expect(info.pixelCount <= ImageValidator.defaultPixelLimit)
            }
        }
    }

    @Test("every single byte of each small sample set to 0x00 and to 0xFF never traps", arguments: Sample.all)
    func exhaustiveByteFlipsNeverTrap(_ sample: Sample) throws {
        let original = try sample.data()
        for offset in 0..<min(original.count, 1024) {
            for value: UInt8 in [0x00, 0xFF] {
                var bytes = original
                bytes[offset] = value
                _ = rejection(of: bytes)
            }
        }
    }
}
