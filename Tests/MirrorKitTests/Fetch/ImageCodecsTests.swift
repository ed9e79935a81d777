import CImageLibraries
import Foundation
@testable import MirrorCore
@testable import MirrorFetch
import MirrorImages
@testable import MirrorKit
@testable import MirrorModel
@testable import MirrorSearch
@testable import MirrorStorage
import MirrorTestSupport
import Testing

/// The transform on real files of every format mirror verifies: JPEG, PNG, WebP and GIF through their codecs, the
/// rest (and CMYK JPEGs, animated WebP) through libvips; what happens to alpha, animation, orientation and geometry.
@Suite("Resizing on the codecs")
struct ImageCodecsTests {
    private let folder = TemporaryFolder()
    private let validator = ImageValidator()

    /// The sample files of MirrorImagesTests (`Samples/make-samples.sh` says how each was made).
    private static let samples = PackageRoot.url.appendingPathComponent("Tests/MirrorImagesTests/Samples")

    private func image(_ data: Data) throws -> VerifiedImage {
        try folder.verifiedImage(data, validator: validator)
    }

    private func transformed(_ data: Data, _ transform: ImageTransform) throws -> (VerifiedImage, Data) {
        let result = try transform.apply(to: try image(data), validator: validator)
        defer { AtomicFile.remove(result.temporaryFile) }
        return (result, try Data(contentsOf: result.temporaryFile))
    }

    @Test(arguments: [
        "baseline.jpg", "progressive.jpg", "restart.jpg", "exif.jpg", "cmyk.jpg", "gray.png", "interlaced.png", "animated.png",
        "static.gif", "animated.gif", "lossy.webp", "lossless.webp", "alpha.webp", "animated.webp", "bgr24.bmp", "os2.bmp",
        "little.tiff", "big.tiff", "image.heic", "image.avif",
    ])
    func everyFormatBecomesAJPEGOfTheSize(sample: String) throws {
        // Given a sample file as a host would serve it
        let data = try Data(contentsOf: Self.samples.appendingPathComponent(sample))
        let served = try validator.validate(data)

        // When it is centre-cropped to 24 px as JPEG (every sample is between 9 and 53 px a side: some grow)
        let (result, bytes) = try transformed(data, ImageTransform(fit: .centerCrop, size: 24, encoding: .jpeg, quality: 90))

        // Then the file is a 24×24 JPEG that verifies, and the record keeps what was served
        #expect(try validator.validate(bytes) == ImageInfo(format: .jpeg, width: 24, height: 24))
        #expect(result.info.format == .jpeg && result.info.width == 24 && result.info.height == 24)
        #expect(result.originalFormat == served.format && result.originalBytes == Int64(data.count))
        #expect(result.originalWidth == served.width && result.originalHeight == served.height)
    }

    @Test func aJPEGThatNeedsNoResizeIsKeptAsServedAndOtherFormatsBecomeJPEG() throws {
        // Given a JPEG and a PNG, and a transform that only asks for JPEG
        let transform = ImageTransform(encoding: .jpeg)
        let jpeg = try Data(contentsOf: Self.samples.appendingPathComponent("progressive.jpg"))
        let source = try image(jpeg)

        // When each is transformed
        let kept = try transform.apply(to: source, validator: validator)
        defer { AtomicFile.remove(kept.temporaryFile) }
        let (converted, bytes) = try transformed(TestPixels.png(width: 30, height: 20, channels: 3) { _, _ in [10, 200, 30, 255] }, transform)

        // Then the JPEG is the same file, untouched (no second hash, no original_* of its own), and the PNG a JPEG
        #expect(kept == source)
        #expect(try Data(contentsOf: kept.temporaryFile) == jpeg)
        #expect(converted.info.format == .jpeg && converted.originalFormat == .png && bytes.starts(with: [0xFF, 0xD8, 0xFF]))
        #expect(converted.info.width == 30 && converted.info.height == 20)
    }

    @Test func alphaIsCompositedOntoWhiteInJPEGAndKeptInPNGAndWebP() throws {
        // Given a PNG whose left half is transparent black and right half opaque red
        let png = TestPixels.png(width: 40, height: 20, channels: 4) { x, _ in x < 20 ? [0, 0, 0, 0] : [255, 0, 0, 255] }

        // When it becomes a JPEG, a PNG and a WebP of half its size
        let (_, jpeg) = try transformed(png, ImageTransform(fit: .longerSide, size: 20, encoding: .jpeg))
        let (_, keptPNG) = try transformed(png, ImageTransform(fit: .longerSide, size: 20, encoding: .png))
        let (webpImage, _) = try transformed(png, ImageTransform(fit: .longerSide, size: 20, encoding: .webp))

        // Then the JPEG's transparent side is white and its opaque side red; the PNG keeps the transparency
        let pixels = try #require(TestPixels.decodeJPEG(jpeg))
        #expect(pixels.width == 20 && pixels.height == 10)
        #expect(pixels.rgb(2, 5).allSatisfy { $0 > 235 }, "\(pixels.rgb(2, 5))")
        #expect(pixels.rgb(17, 5)[0] > 220 && pixels.rgb(17, 5)[1] < 40 && pixels.rgb(17, 5)[2] < 40, "\(pixels.rgb(17, 5))")
        let rgba = try #require(TestPixels.decodePNG(keptPNG))
        #expect(rgba.channels == 4 && rgba.pixel(2, 5)[3] == 0 && rgba.pixel(17, 5)[3] == 255)
        #expect(webpImage.info.format == .webp)
    }

    @Test func anAnimatedGIFGivesItsFirstFrame() throws {
        // Given a 35×25 GIF of three frames: red, lime, blue
        let gif = try Data(contentsOf: Self.samples.appendingPathComponent("animated.gif"))

        // When it is stored as JPEG
        let (_, jpeg) = try transformed(gif, ImageTransform(encoding: .jpeg))

        // Then it is the red frame
        let pixels = try #require(TestPixels.decodeJPEG(jpeg))
        let middle = pixels.rgb(17, 12)
        #expect(pixels.width == 35 && pixels.height == 25)
        #expect(middle[0] > 200 && middle[1] < 60 && middle[2] < 60, "\(middle)")
    }

    @Test func aLargeJPEGIsCroppedAroundItsCentreAfterAShrinkOnLoad() throws {
        // Given a 1,200×600 JPEG: a red quarter, a green half in the middle, a blue quarter
        let jpeg = try #require(TestPixels.jpeg(width: 1200, height: 600) { x, _ in x < 300 ? [220, 20, 20] : x < 900 ? [20, 220, 20] : [20, 20, 220] })

        // When it is centre-cropped to 256 (the decoder shrinks it to at least 512×256 first)
        let (result, bytes) = try transformed(jpeg, ImageTransform(fit: .centerCrop, size: 256, encoding: .jpeg))

        // Then what is kept is the green middle, edge to edge, at 256×256
        let pixels = try #require(TestPixels.decodeJPEG(bytes))
        #expect(result.info.width == 256 && result.info.height == 256 && result.originalWidth == 1200)
        for x in [2, 128, 253] {
            let pixel = pixels.rgb(x, 128)
            #expect(pixel[1] > 180 && pixel[0] < 70 && pixel[2] < 70, "x \(x): \(pixel)")
        }

        // And fitted with pad, the whole picture is there with black above and below
        let (_, padded) = try transformed(jpeg, ImageTransform(fit: .pad, size: 256, encoding: .jpeg))
        let whole = try #require(TestPixels.decodeJPEG(padded))
        #expect(whole.width == 256 && whole.height == 256)
        #expect(whole.rgb(128, 10).allSatisfy { $0 < 30 }, "\(whole.rgb(128, 10))")
        #expect(whole.rgb(10, 128)[0] > 180 && whole.rgb(245, 128)[2] > 180)
    }

    @Test(arguments: [TJSAMP_420, TJSAMP_422, TJSAMP_444, TJSAMP_GRAY])
    func aJPEGStaysInYCbCrAndLandsWhereItShould(subsampling: TJSAMP) throws {
        // Given a 300×200 JPEG, its left half bright and its right half dark (yellow and blue, or grey)
        let jpeg = try #require(TestPixels.jpeg(width: 300, height: 200, subsampling: subsampling) { x, _ in x < 150 ? [240, 200, 60] : [20, 20, 120] })

        // When it is fitted into 149 px: an odd size, which the 4:2:0 planes pad to even
        let (result, bytes) = try transformed(jpeg, ImageTransform(fit: .longerSide, size: 149, encoding: .jpeg))

        // Then it is 149×99, and the edge between the halves is still in the middle, not stretched into the padding
        let pixels = try #require(TestPixels.decodeJPEG(bytes))
        #expect(result.info.width == 149 && result.info.height == 99)
        #expect(pixels.width == 149 && pixels.height == 99)
        let (left, right, last) = (pixels.rgb(70, 50), pixels.rgb(79, 50), pixels.rgb(148, 98))
        let brightness = { (pixel: [UInt8]) in pixel.reduce(0) { $0 + Int($1) } }
        #expect(brightness(left) > 400, "left \(left)")
        #expect(brightness(right) < 200, "right \(right)")
        #expect(brightness(last) < 200, "the last pixel \(last) is the dark half's")
        if subsampling != TJSAMP_GRAY { #expect(left[0] > 200 && left[2] < 110 && right[2] > 90, "colours \(left) \(right)") }
    }

    @Test(arguments: [(6, 20, 40), (3, 40, 20), (8, 20, 40)])
    func exifOrientationIsAppliedBeforeTheFit(orientation: UInt8, width: Int, height: Int) throws {
        // Given an 80×40 JPEG, red on its left, whose EXIF orientation is `orientation`
        var jpeg = try #require(TestPixels.jpeg(width: 80, height: 40) { x, _ in x < 40 ? [230, 10, 10] : [10, 10, 230] })
        let tiff: [UInt8] = [0x4D, 0x4D, 0x00, 0x2A, 0x00, 0x00, 0x00, 0x08, 0x00, 0x01, 0x01, 0x12, 0x00, 0x03, 0x00, 0x00, 0x00, 0x01, 0x00, orientation, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00]
        let payload = Array("Exif".utf8) + [0, 0] + tiff
        jpeg.insert(contentsOf: [0xFF, 0xE1, 0x00, UInt8(payload.count + 2)] + payload, at: 2)

        // When it is fitted into 40 px
        let (result, bytes) = try transformed(jpeg, ImageTransform(fit: .longerSide, size: 40, encoding: .jpeg))

        // Then it stands as the orientation says: 6 turns it clockwise (red on top), 3 upside down (red on the right),
        // 8 anticlockwise (red at the bottom)
        let pixels = try #require(TestPixels.decodeJPEG(bytes))
        #expect(result.info.width == width && result.info.height == height)
        let red: (Int, Int) = switch orientation {
        case 6: (10, 5)
        case 3: (35, 10)
        default: (10, 35)
        }
        #expect(pixels.rgb(red.0, red.1)[0] > 180, "\(pixels.rgb(red.0, red.1))")
    }

    @Test func aTruncatedPNGIsAFailureNotACrash() throws {
        // Given a PNG whose pixel data is cut to zeros after its header
        var broken = TestPixels.png(width: 30, height: 30, channels: 3) { x, y in [UInt8(x * 8), UInt8(y * 8), 0, 255] }
        broken.replaceSubrange(60..<broken.count, with: Data(repeating: 0, count: broken.count - 60))
        let transform = ImageTransform(fit: .centerCrop, size: 16, encoding: .jpeg)

        // Then the codecs refuse it with a reason, and so does the whole transform
        #expect(throws: ImageTransform.Failure.self) { try transform.transform(broken, format: .png) }
    }
}
