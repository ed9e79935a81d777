import CCodecs
import CCodecsTesting
import CImageLibraries
import Foundation
import MirrorCore
@testable import MirrorFetch
import MirrorImages
@testable import MirrorModel
@testable import MirrorStorage
import MirrorTestSupport
import Testing

/// The transform against what a hostile host serves (`HostileImages`): no input crashes, aborts or makes a decoder
/// allocate past the limit checked beforehand; what does not decode fails with its reason instead of being saved grey
/// or white; what does is saved as Pillow shows it.
@Suite("Resizing hostile images")
struct HostileCodecsTests {
    private let folder = TemporaryFolder()

    /// What a transform of `data` ends in: the failure's reason key, or the image.
    private func outcome(_ data: Data, _ transform: ImageTransform) throws -> Result<(VerifiedImage, Data), ImageTransform.Failure> {
        let image = try folder.verifiedImage(data)
        let result: VerifiedImage
        do throws(ImageTransform.Failure) {
            result = try transform.apply(to: image, validator: ImageValidator())
        } catch {
            return .failure(error)
        }
        defer { AtomicFile.remove(result.temporaryFile) }
        return .success((result, try Data(contentsOf: result.temporaryFile)))
    }

    // MARK: EXIF

    @Test(arguments: [UInt32(0xFFFF_FFFE), 0xFFFF_FFFF, 0xFFFF_FFF0, 0x8000_0000])
    func anEXIFOffsetNearTwoToTheThirtyTwoIsReadAsNoOrientation(offset: UInt32) throws {
        // Given a JPEG whose EXIF IFD offset wraps a 32-bit "offset + 2 > size" check
        let data = HostileImages.exifJPEG(ifdOffset: offset)

        // When its orientation is read (under AddressSanitizer in the fuzzer's replay, a read past the segment traps)
        let orientation = data.withUnsafeBytes { mirror_codecs_jpeg_orientation($0.bindMemory(to: UInt8.self).baseAddress, $0.count) }

        // Then it has none, and the image resizes
        #expect(orientation == 1)
        let result = try outcome(data, ImageTransform(fit: .longerSide, size: 32, encoding: .jpeg))
        #expect(try result.get().0.info.width == 32)
    }

    @Test func anEXIFOrientationInsideItsSegmentIsStillRead() throws {
        // Given the same JPEG with its IFD right after the TIFF header (offset 8), which holds orientation 6
        let data = HostileImages.exifJPEG(ifdOffset: 8)

        // Then it is read, and the resized image is turned upright (64 x 48 stored, 48 x 64 shown)
        let orientation = data.withUnsafeBytes { mirror_codecs_jpeg_orientation($0.bindMemory(to: UInt8.self).baseAddress, $0.count) }
        #expect(orientation == 6)
        let (image, _) = try outcome(data, ImageTransform(fit: .longerSide, size: 32, encoding: .jpeg)).get()
        #expect(image.info.width == 24 && image.info.height == 32)
    }

    // MARK: Every crafted file

    @Test(arguments: HostileImages.samples().map(\.name))
    func everyCraftedFileFailsWithItsReasonOrIsSavedRight(name: String) throws {
        let sample = try #require(HostileImages.samples().first { $0.name == name })
        for transform in [ImageTransform(fit: .centerCrop, size: 224, encoding: .jpeg), ImageTransform(fit: .longerSide, size: 256, encoding: .jpeg)] {
            // Given a crafted file the validator lets through (those it refuses never reach a decoder)
            guard (try? ImageValidator().validate(sample.data)) != nil else {
                #expect(["truncated", "too-many-pixels", "malformed"].contains(sample.whenResized ?? ""), "\(name) does not verify")
                continue
            }

            // When it is resized
            let result = try outcome(sample.data, transform)

            // Then it fails for the reason expected, or is saved in the box
            switch result {
            case let .failure(failure):
                #expect(failure.reasonKey == sample.whenResized, "\(name) \(transform.fit): \(failure)")
            case let .success((image, bytes)):
                #expect(sample.whenResized == nil, "\(name) \(transform.fit) was saved, expected \(sample.whenResized ?? "")")
                #expect(max(image.info.width, image.info.height) == transform.size, "\(name): \(image.info.width)x\(image.info.height)")
                if let grey = sample.meanGrey, let pixels = TestPixels.decodeJPEG(bytes) {
                    let mean = Double(pixels.data.reduce(0) { $0 + Int($1) }) / Double(pixels.data.count)
                    #expect(abs(mean - grey) < 4, "\(name): mean grey \(mean), Pillow shows \(grey)")
                }
            }
        }
    }

    @Test func aSixteenBitPNGWithoutColourInformationIsShownAsSRGB() throws {
        // Given a 16-bit PNG with no gAMA, sRGB, cHRM or iCCP (Pillow and browsers show its samples' high bytes)
        let (png, grey) = HostileImages.png16WithoutGamma(width: 64, height: 64)

        // When it becomes an 8-bit PNG of half its size
        let (_, bytes) = try outcome(png, ImageTransform(fit: .longerSide, size: 32, encoding: .png)).get()

        // Then its mean grey is what Pillow shows, not the far brighter linear-light reading (178 against 122)
        let pixels = try #require(TestPixels.decodePNG(bytes))
        let mean = Double(pixels.data.reduce(0) { $0 + Int($1) }) / Double(pixels.data.count)
        #expect(abs(mean - grey) < 2, "mean \(mean), expected \(grey)")
    }

    @Test func aBombIsRefusedBeforeTheDecoderAllocates() throws {
        // Given a 613-byte progressive JPEG claiming 13000 x 13000 (4:4:4: libjpeg would take 1.01 GB at any scale)
        let bomb = HostileImages.jpegBomb(width: 13_000, height: 13_000, subsampling: TJSAMP_444)
        let transform = ImageTransform(fit: .longerSide, size: 256, encoding: .jpeg)

        // When its memory is estimated, and it is transformed
        let estimate = Result { () throws(ImageTransform.Failure) in try ImageTransform(fit: .longerSide, size: 256, encoding: .jpeg, memoryLimit: 0).estimate(bomb, format: .jpeg) }
        let result = try outcome(bomb, transform)

        // Then the estimate counts libjpeg's coefficients, and the transform refuses it without decoding
        #expect(try estimate.get() > 1_000_000_000)
        #expect(result.failureReason == "too-large-to-decode")
        // And one with room to decode (3000 x 3000) is decoded, and refused for its warnings instead of saved flat grey
        let small = HostileImages.jpegBomb(width: 3_000, height: 3_000, subsampling: TJSAMP_444)
        #expect(try outcome(small, transform).failureReason == "malformed")
    }

    @Test func aThinImageLibvipsWouldEnlargeWholeIsRefusedFromItsHeader() throws {
        // Given a CMYK JPEG (libvips' to read) of 4000 x 4: centre-cropped to 480, libvips' thumbnail first enlarges
        // the whole image to cover the box (480,000 x 480), as a fuzzed JPEG showed by taking 354 MB at once
        let thin = HostileImages.jpeg(width: 4_000, height: 4, subsampling: TJSAMP_444, cmyk: true)

        // When it is centre-cropped, and fitted by its longer side
        let crop = try outcome(thin, ImageTransform(fit: .centerCrop, size: 480, encoding: .jpeg))
        let keep = try outcome(thin, ImageTransform(fit: .longerSide, size: 480, encoding: .jpeg))

        // Then the crop is refused from the headers, and the fit that stays small is made
        #expect(crop.failureReason == "too-large-to-decode")
        #expect(try keep.get().0.info.width == 480)
    }

    @Test func junkAfterTheLastScanIsNoReasonToRefuseAJPEG() throws {
        // Given a photo with bytes between its last scan and the end-of-image marker (common on the web)
        var photo = HostileImages.jpeg(width: 64, height: 64, subsampling: TJSAMP_420)
        photo.insert(contentsOf: [0x00, 0x12, 0x34, 0x56], at: photo.count - 2)

        // When it is resized, Then it is saved (libjpeg's one warning is that the bytes are there)
        let (image, _) = try outcome(photo, ImageTransform(fit: .longerSide, size: 32, encoding: .jpeg)).get()
        #expect(image.info.width == 32)
    }

    // MARK: The sweep

    /// Runs `body` on a Dispatch thread: the sweeps are long C calls that must not hold the cooperative pool.
    private func offPool<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in DispatchQueue.global().async { continuation.resume(returning: body()) } }
    }

    @Test(.timeLimit(.minutes(10)))
    func everyResampleTheGeometryAsksForWorks() async throws {
        // Given every source of 1-640 pixels a side, every fit (img2dataset's shorter and longer side, centre crop, pad,
        // and the stretch, whose axes are independent, from square sources), every size from 1 to 512, with and without
        // only-if-bigger, as packed pixels and as JPEG planes of each subsampling (a superset of the DCT scales)
        let (maxSource, maxSize) = (640, 512)

        // When the resampler runs every one-dimensional resample from 1-640 to 1-512 pixels, across and down, and the
        // geometry of every case is computed (on both cores, each half of the range)
        async let resamplerHalves = [(1, 450), (451, maxSource)].asyncMap { range in
            await offPool { () -> (Int, String) in
                var message = [CChar](repeating: 0, count: 256)
                let failures = mirror_codecs_sweep_resampler(Int32(range.0), Int32(range.1), Int32(maxSize), &message, message.count)
                return (failures, String(decoding: message.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
            }
        }
        let geometryHalves = await [(1, 320), (321, maxSource)].asyncMap { range in
            await offPool { () -> (Int, Int, String) in
                var message = [CChar](repeating: 0, count: 256)
                var geometries = 0
                let failures = mirror_codecs_sweep_geometry(Int32(range.0), Int32(range.1), Int32(maxSource), Int32(maxSize), Int32(maxSource),
                                                            Int32(maxSize), &geometries, &message, message.count)
                return (failures, geometries, String(decoding: message.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
            }
        }
        let resampler = await resamplerHalves

        // Then the resampler refuses none, every crop is inside its plane, every output in the box, and every
        // resample asked for is one of those run
        for (failures, message) in resampler { #expect(failures == 0, "\(message)") }
        for (failures, _, message) in geometryHalves { #expect(failures == 0, "\(message)") }
        #expect(geometryHalves.reduce(0) { $0 + $1.1 } > 3_000_000_000)
    }

    @Test(arguments: [(3, 10, TJSAMP_420, ImageTransform.Fit.longerSide, 256), (3, 9, TJSAMP_444, .longerSide, 256),
                      (3, 22, TJSAMP_422, .longerSide, 256), (18, 16, TJSAMP_444, .centerCrop, 224), (1, 1, TJSAMP_420, .pad, 300)])
    func theTinyJPEGsThatAbortedAResizeRunNowResize(width: Int, height: Int, subsampling: TJSAMP, fit: ImageTransform.Fit, size: Int) throws {
        // Given a JPEG whose enlargement once made stb_image_resize assert (the whole run died with SIGABRT)
        let data = HostileImages.jpeg(width: width, height: height, subsampling: subsampling)

        // When it is enlarged
        let (image, bytes) = try outcome(data, ImageTransform(fit: fit, size: size, encoding: .jpeg)).get()

        // Then it is, to the box, and its colours are the picture's (the gradient's first column is about 40, 60, 90)
        #expect(max(image.info.width, image.info.height) == size)
        let pixels = try #require(TestPixels.decodeJPEG(bytes))
        let corner = pixels.rgb(0, 0)
        #expect(abs(Int(corner[0]) - 40) < 24 && abs(Int(corner[2]) - 90) < 24, "\(corner)")
    }
}

extension Result where Failure == ImageTransform.Failure {
    var failureReason: String? {
        if case let .failure(failure) = self { return failure.reasonKey }
        return nil
    }
}

extension Array where Element: Sendable {
    /// Maps on concurrent tasks, keeping the order.
    func asyncMap<T: Sendable>(_ transform: @escaping @Sendable (Element) async -> T) async -> [T] {
        await withTaskGroup(of: (Int, T).self) { group in
            for (index, element) in enumerated() { group.addTask { (index, await transform(element)) } }
            var results = [(Int, T)]()
            for await result in group { results.append(result) }
            return results.sorted { $0.0 < $1.0 }.map(\.1)
        }
    }
}
