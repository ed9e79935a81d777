import CImageLibraries
import Foundation
@testable import MirrorCore
@testable import MirrorFetch
import MirrorImages
@testable import MirrorModel
@testable import MirrorStorage
import MirrorTestSupport
import Testing

/// img2dataset's resize modes and its face blur (`--resize`, `--pad-color`, `--blur-col`), judged on what a real
/// decoder reads back from the files written.
@Suite("Fits and blurred boxes")
struct BlurAndFitTests {
    private let folder = TemporaryFolder()
    private let validator = ImageValidator()

    private static let samples = PackageRoot.url.appendingPathComponent("Tests/MirrorImagesTests/Samples")

    private func transformed(_ data: Data, _ transform: ImageTransform, blurring boxes: BlurBoxes? = nil) throws -> (VerifiedImage, Data) {
        let source = try folder.verifiedImage(data, validator: validator)
        let result = try transform.apply(to: source, validator: validator, blurring: boxes)
        defer { AtomicFile.remove(result.temporaryFile) }
        return (result, try Data(contentsOf: result.temporaryFile))
    }

    private static func boxes(_ corners: [(Float, Float, Float, Float)]) -> BlurBoxes {
        BlurBoxes(corners.map { BlurBoxes.Box(x0: $0.0, y0: $0.1, x1: $0.2, y1: $0.3) })
    }

    /// The high-frequency energy of the pixels in `x` × `y`: the sum of |Laplacian| of each channel.
    private static func energy(_ pixels: TestPixels.Pixels, _ x: Range<Int>, _ y: Range<Int>) -> Int {
        var sum = 0
        for row in y where row > 0 && row < pixels.height - 1 {
            for column in x where column > 0 && column < pixels.width - 1 {
                for c in 0..<3 {
                    let value = { (dx: Int, dy: Int) in Int(pixels.pixel(column + dx, row + dy)[c]) }
                    sum += abs(4 * value(0, 0) - value(-1, 0) - value(1, 0) - value(0, -1) - value(0, 1))
                }
            }
        }
        return sum
    }

    // MARK: Fits

    @Test(arguments: [
        (ImageTransform.Fit.shorterSide, 150, 100), (.longerSide, 100, 67), (.centerCrop, 100, 100), (.border, 100, 100),
        (.pad, 100, 100), (.fixed, 100, 100), (.no, 300, 200),
    ])
    func eachModeGivesImg2datasetsSize(fit: ImageTransform.Fit, width: Int, height: Int) throws {
        // Given a 300×200 PNG
        let png = TestImages.png(width: 300, height: 200, seed: 3)

        // When it is fitted to 100 as a PNG
        let (result, bytes) = try transformed(png, ImageTransform(fit: fit, size: 100, encoding: fit == .no ? .jpeg : .png))

        // Then the file a decoder reads has the mode's size
        let pixels = try #require(fit == .no ? TestPixels.decodeJPEG(bytes) : TestPixels.decodePNG(bytes))
        #expect(pixels.width == width && pixels.height == height)
        #expect(result.info.width == width && result.info.height == height && result.originalWidth == 300)
    }

    @Test(arguments: ["little.tiff", "static.gif", "lossy.webp", "baseline.jpg"])
    func borderPadsWithWhiteAndPadWithItsColour(sample: String) throws {
        // Given a sample much wider or taller than square (a TIFF goes through libvips), or a landscape photo
        let data = sample == "baseline.jpg"
            ? try #require(TestPixels.jpeg(width: 120, height: 40) { _, _ in [30, 90, 200] })
            : try Data(contentsOf: Self.samples.appendingPathComponent(sample))
        let served = try validator.validate(data)
        try #require(served.width != served.height)

        // When it is fitted with border, and with pad in a colour, to 64 as PNG
        let (_, bordered) = try transformed(data, ImageTransform(fit: .border, size: 64, encoding: .png))
        let teal = try #require(ImageTransform.Color(name: "#00C8A0"))
        let (_, padded) = try transformed(data, ImageTransform(fit: .pad, size: 64, padColor: teal, encoding: .png))

        // Then both are 64 square, their corners white and teal, opaque
        for (bytes, color) in [(bordered, [255, 255, 255]), (padded, [0, 200, 160])] as [(Data, [UInt8])] {
            let pixels = try #require(TestPixels.decodePNG(bytes))
            #expect(pixels.width == 64 && pixels.height == 64)
            for (x, y) in [(0, 0), (63, 63)] {
                #expect(pixels.rgb(x, y) == color, "\(sample) at \(x),\(y): \(pixels.pixel(x, y))")
                if pixels.channels == 4 { #expect(pixels.pixel(x, y)[3] == 255) }
            }
        }
    }

    @Test func aTransparentImageWrittenAsJPEGIsMattedOnWhiteAndPaddedWithIt() throws {
        // Given a 60×20 PNG: transparent on its left half, opaque blue on its right
        let png = TestPixels.png(width: 60, height: 20, channels: 4) { x, _ in x < 30 ? [0, 0, 0, 0] : [0, 0, 255, 255] }

        // When it is bordered to 30 as JPEG
        let (_, jpeg) = try transformed(png, ImageTransform(fit: .border, size: 30, encoding: .jpeg))

        // Then the transparent half is white, as img2dataset mattes it, and so are the borders
        let pixels = try #require(TestPixels.decodeJPEG(jpeg))
        #expect(pixels.width == 30 && pixels.height == 30)
        for (x, y) in [(0, 0), (5, 15), (29, 29)] { #expect(pixels.rgb(x, y).allSatisfy { $0 > 240 }, "\(x),\(y): \(pixels.rgb(x, y))") }
        #expect(pixels.rgb(25, 15)[2] > 200 && pixels.rgb(25, 15)[0] < 60)
    }

    @Test func onlyIfBiggerKeepsASmallImagesSizeAndStillMakesTheSquare() throws {
        // Given a 60×40 PNG, smaller than the box
        let png = TestImages.png(width: 60, height: 40, seed: 4)

        // When each mode fits it into 100 only if bigger
        func size(_ fit: ImageTransform.Fit) throws -> (Int, Int) {
            let (result, _) = try transformed(png, ImageTransform(fit: fit, size: 100, onlyIfBigger: true, encoding: .png))
            return (result.info.width, result.info.height)
        }

        // Then nothing is enlarged: the sides keep their size, and a pad still makes the square
        #expect(try size(.shorterSide) == (60, 40) && size(.longerSide) == (60, 40) && size(.centerCrop) == (60, 40))
        #expect(try size(.fixed) == (60, 40) && size(.border) == (100, 100))
        // And fixed brings only the side over the box to it
        let (tall, _) = try transformed(TestImages.png(width: 60, height: 150, seed: 5), ImageTransform(fit: .fixed, size: 100, onlyIfBigger: true, encoding: .png))
        #expect(tall.info.width == 60 && tall.info.height == 100)
    }

    @Test func keepRatioIsStillTheLongerSide() {
        #expect(ImageTransform.Fit(name: "keep-ratio") == .longerSide)
        #expect(ImageTransform.Fit(name: "shorter-side") == .shorterSide)
        #expect(ImageTransform.Fit.allCases.map(\.rawValue) == ["no", "longer-side", "shorter-side", "center-crop", "pad", "border", "fixed"])
        #expect(ImageTransform.Color(name: "WHITE") == .white && ImageTransform.Color(name: "#ff8000") == ImageTransform.Color(red: 255, green: 128, blue: 0))
        #expect(ImageTransform.Color(name: "#ff80") == nil && ImageTransform.Color(name: "#gg0000") == nil && ImageTransform.Color(name: "red") == nil)
    }

    // MARK: Blur

    @Test func boxesAreBlurredAndTheRestIsLeftAsItWas() throws {
        // Given 240×160 pixels of noise (every pixel differs from its neighbours) and two boxes
        let png = TestImages.png(width: 240, height: 160, seed: 7)
        let before = try #require(TestPixels.decodePNG(png))
        let boxes = Self.boxes([(0.1, 0.1, 0.3, 0.4), (0.6, 0.5, 0.8, 0.9)])

        // When they are blurred, written as PNG (lossless: every pixel can be compared)
        let (result, bytes) = try transformed(png, ImageTransform(encoding: .png), blurring: boxes)

        // Then the record says two boxes were blurred, and the image keeps its size
        #expect(result.blurredBoxes == 2)
        let after = try #require(TestPixels.decodePNG(bytes))
        #expect(after.width == 240 && after.height == 160)
        // Inside each box (pixels: 24..<72 × 16..<64 and 144..<192 × 80..<144) the high frequencies are nearly gone
        for (x, y) in [(24..<72, 16..<64), (144..<192, 80..<144)] {
            let (was, now) = (Self.energy(before, x, y), Self.energy(after, x, y))
            #expect(now * 10 < was, "energy \(was) → \(now)")
        }
        // And farther than 4σ from both grown boxes (σ = 6.4: a tenth of the longer box's 64 px; grown, they cover
        // 19..<76 × 11..<68 and 137..<198 × 73..<150), not a pixel moved
        for (x, y) in [(103..<110, 0..<160), (225..<240, 0..<160), (0..<100, 95..<160)] {
            for row in y { for column in x { #expect(after.rgb(column, row) == before.rgb(column, row), "\(column),\(row)") } }
        }
    }

    @Test func theBlurComesAfterTheResizeAndBeforeTheCrop() throws {
        // Given a 400×200 noise image and one box across the left third, which a centre crop to the shorter side cuts
        let png = TestImages.png(width: 400, height: 200, seed: 8)
        let boxes = Self.boxes([(0.0, 0.2, 0.3, 0.8)])

        // When it is centre-cropped to 100 and blurred
        let (result, bytes) = try transformed(png, ImageTransform(fit: .centerCrop, size: 100, encoding: .png), blurring: boxes)
        let (_, plain) = try transformed(png, ImageTransform(fit: .centerCrop, size: 100, encoding: .png))

        // Then the box counts (it had pixels in the resized image, 200×100), and its blur reaches over the crop's left
        // edge (the grown box ends at x 66 of 200; the crop starts at 50): the left of the crop is smooth, the right not
        #expect(result.blurredBoxes == 1 && result.info.width == 100 && result.info.height == 100)
        let (blurred, sharp) = (try #require(TestPixels.decodePNG(bytes)), try #require(TestPixels.decodePNG(plain)))
        #expect(Self.energy(blurred, 0..<10, 30..<70) * 4 < Self.energy(sharp, 0..<10, 30..<70))
        #expect(Self.energy(blurred, 60..<95, 5..<95) == Self.energy(sharp, 60..<95, 5..<95))
    }

    @Test func boxesMakeAnImageBeEncodedAgainAndNoBoxesKeepItAsServed() throws {
        // Given a JPEG, and a transform that changes nothing by itself
        let jpeg = try #require(TestPixels.jpeg(width: 64, height: 48) { x, y in [UInt8(x * 4), UInt8(y * 5), UInt8((x ^ y) & 0xFF)] })
        let identity = ImageTransform()

        // When it has one box, and when its row gives none
        let (blurred, bytes) = try transformed(jpeg, identity, blurring: Self.boxes([(0.25, 0.25, 0.75, 0.75)]))
        let (kept, keptBytes) = try transformed(jpeg, identity, blurring: BlurBoxes())

        // Then the first is a new JPEG of the same size that says so, the second the bytes as served
        #expect(blurred.info.format == .jpeg && blurred.info.width == 64 && blurred.originalFormat == .jpeg)
        #expect(bytes != jpeg && blurred.blurredBoxes == 1 && blurred.sha256 == sha256Hex(bytes))
        #expect(keptBytes == jpeg && kept.blurredBoxes == 0)
        // And a GIF with a box is written as the --encode rules say: PNG
        let gif = try Data(contentsOf: Self.samples.appendingPathComponent("static.gif"))
        let (fromGIF, _) = try transformed(gif, identity, blurring: Self.boxes([(0, 0, 0.5, 0.5)]))
        #expect(fromGIF.info.format == .png && fromGIF.blurredBoxes == 1)
    }

    @Test func aJPEGsBoxesTurnWithItsOrientation() throws {
        // Given an 80×40 JPEG of noise stored on its side (EXIF orientation 6: turned clockwise to stand 40×80), and a
        // box over the stored image's left quarter, where DataComp's detector saw it (img2dataset ignores EXIF)
        var jpeg = try #require(TestPixels.jpeg(width: 80, height: 40) { x, y in
            let noise = UInt8(truncatingIfNeeded: (x &* 7919 ^ y &* 104_729) &* 2_654_435_761 >> 7)
            return [noise, noise &+ 85, noise &+ 170]
        })
        let tiff: [UInt8] = [0x4D, 0x4D, 0x00, 0x2A, 0x00, 0x00, 0x00, 0x08, 0x00, 0x01, 0x01, 0x12, 0x00, 0x03, 0x00, 0x00, 0x00, 0x01, 0x00, 6, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00]
        let payload = Array("Exif".utf8) + [0, 0] + tiff
        jpeg.insert(contentsOf: [0xFF, 0xE1, 0x00, UInt8(payload.count + 2)] + payload, at: 2)

        // When it is blurred, as PNG
        let (result, bytes) = try transformed(jpeg, ImageTransform(encoding: .png), blurring: Self.boxes([(0, 0, 0.25, 1)]))
        let (_, plain) = try transformed(jpeg, ImageTransform(encoding: .png))

        // Then, upright, the blur is across the top (the stored left), and the bottom is untouched
        let (after, before) = (try #require(TestPixels.decodePNG(bytes)), try #require(TestPixels.decodePNG(plain)))
        #expect(result.info.width == 40 && result.info.height == 80)
        #expect(Self.energy(after, 0..<40, 0..<18) * 5 < Self.energy(before, 0..<40, 0..<18))
        #expect(Self.energy(after, 0..<40, 50..<80) == Self.energy(before, 0..<40, 50..<80))
    }

    @Test func hostileBoxesAreBoundedByTheImage() throws {
        // Given boxes a row may hold: coordinates far outside the image, a box inside out, a thousand boxes
        let png = TestImages.png(width: 120, height: 90, seed: 9)
        let huge = try BlurBoxes(parsing: Array("[[-1e300, -1e300, 1e300, 1e300], [0.9, 0.9, 0.1, 0.1]]".utf8))
        let many = BlurBoxes((0..<BlurBoxes.maximumCount).map { index in
            let x = Float(index % 40) / 40, y = Float(index / 40) / 25
            return BlurBoxes.Box(x0: x, y0: y, x1: x + 0.02, y1: y + 0.03)
        })

        // When each is blurred
        let (whole, _) = try transformed(png, ImageTransform(encoding: .png), blurring: huge)
        let (thousand, _) = try transformed(png, ImageTransform(encoding: .png), blurring: many)

        // Then the huge box is the whole image (clamped), the inside-out one blurs nothing, and the thousand all count
        #expect(whole.blurredBoxes == 1 && whole.info.width == 120)
        #expect(thousand.blurredBoxes == BlurBoxes.maximumCount)
        // And what the blur takes is in the estimate made before decoding
        let estimate = { (boxes: BlurBoxes?) throws(ImageTransform.Failure) in try ImageTransform(encoding: .png).estimate(png, format: .png, blurring: boxes) }
        #expect(try estimate(huge) > estimate(nil))
        #expect(throws: ImageTransform.Failure.self) {
            try ImageTransform(encoding: .png, memoryLimit: try estimate(nil)).estimate(png, format: .png, blurring: huge)
        }
    }

    // MARK: The box column

    @Test(arguments: [
        ("[[0.1, 0.2, 0.3, 0.4]]", 1), ("  [ [0,0,1,1] , [0.5e0,0.5,1E0,1] ]\n", 2), ("[]", 0), ("", 0), ("null", 0), ("  ", 0),
        ("[[-3, 0.5, 2, 7]]", 1),
    ])
    func boxValuesThatRead(text: String, count: Int) throws {
        let boxes = try BlurBoxes(parsing: Array(text.utf8))
        #expect(boxes.boxes.count == count)
        for box in boxes.boxes { #expect([box.x0, box.y0, box.x1, box.y1].allSatisfy { (0...1).contains($0) }) }
    }

    @Test(arguments: [
        "[[0.1, 0.2, 0.3]]", "[[0.1, 0.2, 0.3, 0.4, 0.5]]", "[0.1, 0.2, 0.3, 0.4]", "[[0.1, 0.2, 0.3, 0.4]", "[[\"a\", 0, 1, 1]]",
        "[[0.1, 0.2, 0.3, 0.4]] x", "{\"x0\": 0}", "[[.5, 0, 1, 1]]", "[[1., 0, 1, 1]]", "[[NaN, 0, 1, 1]]", "[[0x1, 0, 1, 1]]",
        "[[[0.1, 0.2, 0.3, 0.4]]]", "[[0.1 0.2 0.3 0.4]]", "nul",
    ])
    func boxValuesThatDoNotRead(text: String) {
        #expect(throws: BlurBoxes.Malformed.self) { try BlurBoxes(parsing: Array(text.utf8)) }
    }

    @Test func aMillionBoxesAndHugeNumbersAreRefusedWithoutReadingThemAll() throws {
        // Given a value of a million boxes (25 MB), and one number of a million digits
        let box = "[0.1,0.2,0.3,0.4],"
        let million = Array(("[" + String(repeating: box, count: 1_000_000) + "[0,0,1,1]]").utf8)
        let digits = Array(("[[0." + String(repeating: "1", count: 1_000_000) + ", 0, 1, 1]]").utf8)

        // Then each is refused with its reason; the first after 1,000 boxes
        #expect { try BlurBoxes(parsing: million) } throws: { ($0 as? BlurBoxes.Malformed)?.reason.contains("more than 1000 boxes") == true }
        #expect { try BlurBoxes(parsing: digits) } throws: { ($0 as? BlurBoxes.Malformed)?.reason.contains("longer than 64") == true }
        #expect(try BlurBoxes(parsing: Array(("[" + String(repeating: box, count: 999) + "[0,0,1,1]]").utf8)).boxes.count == 1_000)
    }
}
