import Foundation
import MirrorImages
import Testing

@Suite("Truncation", .timeLimit(.minutes(5)))
struct TruncationTests {
    @Test("each sample cut at a quarter, half, three quarters and one byte short is .truncated", arguments: Sample.all)
    func cutAtSeveralPoints(_ sample: Sample) throws {
        // Given a valid sample
        let data = try sample.data()

        for length in [20, data.count / 4, data.count / 2, data.count * 3 / 4, data.count - 1] {
            // When only its first `length` bytes arrive
            let result = rejection(of: data.prefix(length: length))

            // Then it is rejected as a truncated file of its own format
            #expect(result?.truncatedFormat == sample.format, "cut at \(length) of \(data.count): \(String(describing: result))")
        }
    }

    @Test("every proper prefix of each sample is rejected, as truncated once the format is recognisable", arguments: Sample.all)
    func everyPrefixIsRejected(_ sample: Sample) throws {
        // Given a valid sample
        let data = try sample.data()

        for length in 0..<data.count {
            // When only its first `length` bytes arrive
            let prefix = data.prefix(length: length)
            let result = rejection(of: prefix)

            // Then it is never accepted, and once the signature is complete the reason is truncation
            if ImageValidator.sniff(prefix) == sample.format {
                #expect(result?.truncatedFormat == sample.format, "cut at \(length): \(String(describing: result))")
            } else {
                #expect(result != nil, "cut at \(length) was accepted")
            }
        }
    }

    @Test("a JPEG without its EOI marker")
    func jpegWithoutEOI() throws {
        // Given a baseline JPEG missing its last two bytes (FF D9)
        let data = try Sample.named("baseline.jpg").data()
        #expect(Array(data.suffix(2)) == [0xFF, 0xD9])

        // When it is validated
        let result = rejection(of: data.dropLast(2))

        // Then the reason names the missing marker
        #expect(result == .truncated(.jpeg, "no EOI marker"))
        #expect(result?.description == "truncated JPEG: no EOI marker")
    }

    @Test("a PNG without its IEND chunk")
    func pngWithoutIEND() throws {
        // Given an interlaced PNG missing its 12-byte IEND chunk
        let data = try Sample.named("interlaced.png").data()

        // When it is validated
        let result = rejection(of: data.dropLast(12))

        // Then the walk reached the end without IEND
        #expect(result == .truncated(.png, "no IEND chunk"))
    }

    @Test("a GIF without its trailer")
    func gifWithoutTrailer() throws {
        // Given an animated GIF missing its final 0x3B
        let data = try Sample.named("animated.gif").data()
        #expect(data.last == 0x3B)

        // When it is validated
        let result = rejection(of: data.dropLast())

        // Then the walk ran out after the last frame
        #expect(result == .truncated(.gif, "no trailer"))
        #expect(result?.description == "truncated GIF: no trailer")
    }

    @Test("a WebP whose RIFF size is larger than the data")
    func webpRIFFSizeTooLarge() throws {
        // Given a lossy WebP (118 bytes) whose RIFF size claims 10 more bytes
        let data = try Sample.named("lossy.webp").data()
        let riffSize = data.u32le(4) + 10
        let forged = data.replacing(at: 4, with: withUnsafeBytes(of: riffSize.littleEndian) { Array($0) })

        // When it is validated
        let result = rejection(of: forged)

        // Then the mismatch is reported as truncation, with both sizes
        #expect(result == .truncated(.webp, "RIFF size says 128 bytes, have 118"))
    }

    @Test("a BMP whose pixel data is cut")
    func bmpPixelDataCut() throws {
        // Given a 24-bit 23x37 BMP (rows of 72 bytes, data at offset 54) missing its last row
        let data = try Sample.named("bgr24.bmp").data()
        #expect(data.count == 54 + 72 * 37)

        // When it is validated
        let result = rejection(of: data.dropLast(72))

        // Then the pixel data does not fit
        #expect(result == .truncated(.bmp, "pixel data needs 2664 bytes from offset 54, have 2646 in all"))
    }

    @Test("an AVIF cut exactly between its meta and mdat boxes is truncated, not accepted")
    func avifCutAtBoxBoundary() throws {
        // Given an AVIF cut right before its mdat box, so the top-level boxes still walk exactly to the end
        let data = try Sample.named("image.avif").data()
        let mdat = try #require(data.offset(of: Array("mdat".utf8))) - 4

        // When it is validated
        let result = rejection(of: data.prefix(length: mdat))

        // Then the item location table points past the end
        #expect(result == .truncated(.avif, "item 1 data ends at byte 325, have \(mdat)"))
    }

    @Test("a TIFF whose strip points past the end")
    func tiffStripPastEnd() throws {
        // Given a big-endian TIFF whose IFD lies before the end of its data, cut one byte short
        let data = try Sample.named("big.tiff").data()

        // When it is validated
        let result = rejection(of: data.dropLast())

        // Then something the IFD references is missing
        #expect(result?.truncatedFormat == .tiff)
    }
}
