import CCodecs
import Foundation
import MirrorCore
import MirrorImages
import MirrorModel
import MirrorStorage

/// Resizing, blurring and re-encoding a verified image (`--resize`, `--size`, `--pad-color`, `--encode`, `--quality`,
/// and a row's `--blur-col` boxes).
///
/// The image is decoded with its EXIF orientation applied (an animation's first frame), fitted into `size` × `size`
/// (``Fit``), and encoded as asked; the default (`fit: .no`, `encoding: .keep`) is no transform at all. An image that
/// needs no resize, has no boxes to blur and is already in the format written is kept byte for byte: with
/// `encoding: .jpeg` a served JPEG is stored as served (no generation loss, no CPU) and only the other formats are
/// converted. `keep` writes the served format where it can (JPEG, PNG, WebP, TIFF, HEIF, AVIF) and PNG otherwise (GIF,
/// BMP). Alpha is kept in PNG and WebP and composited onto white in JPEG (as img2dataset composites every image).
///
/// Boxes to blur (``BlurBoxes``) are blurred as img2dataset's `BoundingBoxBlurrer` blurs them, in its order: after
/// the resize, before a crop or a pad; they make an image be decoded and encoded again even with no resize.
///
/// JPEG, PNG, WebP and GIF — nearly everything hosts serve — go straight through their codecs (`CCodecs`: a JPEG is
/// decoded at the smallest DCT scale that still covers the target, a WebP scaled while it decodes, then Catmull-Rom
/// resampling); the rest, and the few images that path leaves (CMYK JPEGs, animated WebP), through libvips.
///
/// Every image is hostile: before a decoder allocates anything, the memory the whole transform will take (the blur's
/// buffers included) is estimated from the headers and checked against ``memoryLimit`` (and, in a run, taken from the
/// ``DecodeBudget`` the transforms share); an image that does not decode cleanly (decoder warnings, data that ends
/// early) fails as malformed instead of being saved grey; and a decoder that crashes anyway costs its row, not the job
/// (``DecodeJournal``).
public struct ImageTransform: Sendable, Hashable {
    /// How an image is fitted into `size` × `size` (img2dataset's `resize_mode` names in brackets). Every fit enlarges a
    /// smaller image too, as img2dataset does by default, unless ``ImageTransform/onlyIfBigger``.
    public enum Fit: String, Sendable, CaseIterable {
        /// No resize (`no`).
        case no
        /// The longer side becomes `size` (`keep_ratio_largest`); `keep-ratio` on the command line, its earlier name.
        case longerSide = "longer-side"
        /// The shorter side becomes `size` (`keep_ratio`).
        case shorterSide = "shorter-side"
        /// The shorter side becomes `size`, and the middle `size` × `size` is kept (`center_crop`).
        case centerCrop = "center-crop"
        /// The longer side becomes `size`, then borders of ``ImageTransform/padColor`` make it square.
        case pad
        /// The longer side becomes `size`, then white borders make it square (`border`).
        case border
        /// Stretched to `size` × `size`, the aspect not kept.
        case fixed

        /// The longer side becomes `size`: the earlier name of ``longerSide``.
        @available(*, deprecated, renamed: "longerSide")
        public static var keepRatio: Fit { .longerSide }

        /// The fit `name` names on the command line: a case's raw value, or `keep-ratio` (``longerSide``'s earlier name).
        public init?(name: String) {
            if name == "keep-ratio" {
                self = .longerSide
            } else {
                self.init(rawValue: name)
            }
        }
    }

    /// An opaque colour (`--pad-color`).
    public struct Color: Sendable, Hashable, CustomStringConvertible {
        public var red: UInt8, green: UInt8, blue: UInt8

        public init(red: UInt8, green: UInt8, blue: UInt8) {
            (self.red, self.green, self.blue) = (red, green, blue)
        }

        public static let black = Color(red: 0, green: 0, blue: 0)
        public static let white = Color(red: 255, green: 255, blue: 255)

        /// `white`, `black` or `#RRGGBB` (any case).
        public init?(name: String) {
            switch name.lowercased() {
            case "white": self = .white
            case "black": self = .black
            case let hex where hex.count == 7 && hex.hasPrefix("#"):
                guard let value = UInt32(hex.dropFirst(), radix: 16), hex.dropFirst().allSatisfy(\.isHexDigit) else { return nil }
                self.init(red: UInt8(value >> 16 & 0xFF), green: UInt8(value >> 8 & 0xFF), blue: UInt8(value & 0xFF))
            default: return nil
            }
        }

        /// `#rrggbb`.
        public var description: String {
            "#" + [red, green, blue].map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
        }

        var rgb: UInt32 { UInt32(red) << 16 | UInt32(green) << 8 | UInt32(blue) }
    }

    /// The format written.
    public enum Encoding: String, Sendable, CaseIterable {
        case keep, jpeg, png, webp
    }

    /// Why a transform failed.
    public struct Failure: Error, Sendable, Equatable, CustomStringConvertible {
        /// What kind of failure, which names it in records and summaries.
        public enum Kind: Sendable, Equatable {
            /// The image does not decode cleanly (corrupt or cut-short data, decoder warnings, a frame without rows).
            case malformed
            /// Decoding it would take more memory than ``ImageTransform/memoryLimit``.
            case tooLarge
            /// A decoder crashed on it in an earlier run (``DecodeJournal``): it is not decoded again.
            case decoderCrash
            /// Anything else: an encoder, the resampler or the file system failed, or libvips is missing.
            case failed
        }

        public var kind: Kind = .failed
        public var message: String

        public init(kind: Kind = .failed, message: String) {
            self.kind = kind
            self.message = message
        }

        public var description: String { "could not resize: \(message)" }

        /// The key a record and a summary count it by: `malformed`, `too-large-to-decode`, `decoder-crash`, `resize`.
        public var reasonKey: String {
            switch kind {
            case .malformed: "malformed"
            case .tooLarge: "too-large-to-decode"
            case .decoderCrash: "decoder-crash"
            case .failed: "resize"
            }
        }
    }

    /// The default ``memoryLimit``: 512 MiB. With the default 16 downloads at once, mirror's peak stays under 1 GB
    /// whatever the images claim, and it still decodes a 48-megapixel progressive photo (about 150 MB of libjpeg's
    /// coefficients) or a 100-megapixel PNG.
    public static let defaultMemoryLimit = 512 << 20

    public var fit: Fit = .no
    /// The target size in pixels. Default 256.
    public var size = 256
    /// Whether only images whose fitted side (the longer for ``Fit/longerSide``, ``Fit/pad`` and ``Fit/border``, the
    /// shorter for ``Fit/shorterSide`` and ``Fit/centerCrop``, each side for ``Fit/fixed``) is larger than `size` are
    /// resized; smaller ones keep their size and are still cropped or padded to the square (img2dataset's
    /// `resize_only_if_bigger` leaves them whole). Default false: smaller images are enlarged, as img2dataset does.
    public var onlyIfBigger = false
    /// What ``Fit/pad`` fills with. Default black (``Fit/border`` always fills with white).
    public var padColor = Color.black
    public var encoding: Encoding = .keep
    /// JPEG and WebP quality, 1–100. Default 95.
    public var quality = 95
    /// The memory, in bytes, the transforms running at once may take together; an image whose decode alone would take
    /// more fails (`too-large-to-decode`). Default ``defaultMemoryLimit``.
    public var memoryLimit = ImageTransform.defaultMemoryLimit

    public init(
        fit: Fit = .no, size: Int = 256, onlyIfBigger: Bool = false, padColor: Color = .black, encoding: Encoding = .keep,
        quality: Int = 95, memoryLimit: Int = ImageTransform.defaultMemoryLimit
    ) {
        self.fit = fit
        self.size = size
        self.onlyIfBigger = onlyIfBigger
        self.padColor = padColor
        self.encoding = encoding
        self.quality = quality
        self.memoryLimit = memoryLimit
    }

    /// Whether the transform leaves every image as it is.
    public var isIdentity: Bool { fit == .no && encoding == .keep }

    /// The format an image served as `format` is written in.
    public func outputFormat(for format: ImageFormat) -> ImageFormat {
        switch encoding {
        case .jpeg: .jpeg
        case .png: .png
        case .webp: .webp
        case .keep:
            switch format {
            case .jpeg, .png, .webp, .tiff, .heif, .avif: format
            case .gif, .bmp: .png
            }
        }
    }

    /// Whether an image served as `format` is stored as served: nothing to resize, and already the format written.
    public func keepsAsServed(_ format: ImageFormat) -> Bool {
        fit == .no && (encoding == .keep || outputFormat(for: format) == format)
    }

    /// Applies the transform, blurring `boxes` (``BlurBoxes``; nil when the run has none to give): the result replaces
    /// the download's temporary file (``replaceContents(of:with:)``); an image ``keepsAsServed(_:)`` with no box to blur
    /// is returned as it is. The result's ``VerifiedImage/blurredBoxes`` says how many boxes had pixels to blur (0 for
    /// none or an empty list; nil when `boxes` is nil).
    ///
    /// With a `budget`, the memory the decode will take is taken from it first (waiting for it if need be); with a
    /// `journal`, the image is marked as being decoded while it is, and one a decoder crashed on before is not decoded
    /// (one that was decoded beside others then is decoded alone: it takes the whole budget).
    /// - Throws: ``Failure`` when the image cannot be read or written (the download is removed too).
    package func apply(
        to image: VerifiedImage, validator: ImageValidator, budget: DecodeBudget? = nil, journal: DecodeJournal? = nil,
        blurring boxes: BlurBoxes? = nil
    ) throws(Failure) -> VerifiedImage {
        let blurs = !(boxes?.isEmpty ?? true)
        if keepsAsServed(image.info.format), !blurs {
            var kept = image
            kept.blurredBoxes = boxes.map { _ in 0 }
            return kept
        }
        let data: Data
        let blurred: Int
        let info: ImageInfo
        do throws(Failure) {
            let verdict = journal?.verdict(for: image.url) ?? .decode
            if verdict == .crashed {
                throw Failure(kind: .decoderCrash, message: "a decoder crashed on this image in an earlier run, which stopped there; it is not decoded again")
            }
            let input: Data
            do {
                input = try Data(contentsOf: image.temporaryFile, options: .alwaysMapped)
            } catch {
                throw Failure(message: "cannot read the download (\(error.localizedDescription))")
            }
            let needed = try estimate(input, format: image.info.format, blurring: boxes)
            (data, blurred) = try Self.guardedDecode(of: image.url, needing: needed, alone: verdict == .decodeAlone, budget: budget, journal: journal) { () throws(Failure) in
                try transformed(input, format: image.info.format, blurring: boxes)
            }
            do {
                info = try validator.validate(data)
            } catch {
                throw Failure(message: "the transform wrote an image that does not verify (\(error))")
            }
        } catch {
            AtomicFile.remove(image.temporaryFile)
            throw error
        }
        var result = image
        do throws(FileError) {
            result.temporaryFile = try Self.replaceContents(of: image.temporaryFile, with: data)
        } catch {
            throw Failure(message: error.description)
        }
        result.info = info
        result.bytes = Int64(data.count)
        result.originalSHA256 = image.downloadDigest
        result.originalFormat = image.originalFormat ?? image.info.format
        result.originalBytes = image.originalBytes ?? image.bytes
        result.sha256 = sha256Hex(data)
        result.originalWidth = image.originalWidth ?? image.info.width
        result.originalHeight = image.originalHeight ?? image.info.height
        result.blurredBoxes = boxes.map { _ in blurred }
        return result
    }

    /// Runs `decode` (of the image downloaded from `url`, which takes `needed` bytes) as one guarded decode: its memory
    /// taken from `budget` first (all of it when the image must be decoded `alone`), and the image marked in `journal`
    /// as being decoded while it is, so that a decoder's crash is pinned on it.
    package static func guardedDecode<Value>(
        of url: URL, needing needed: Int, alone: Bool, budget: DecodeBudget?, journal: DecodeJournal?, _ decode: () throws(Failure) -> Value
    ) throws(Failure) -> Value {
        let taken = budget?.take(alone ? Int.max : needed)
        let mark = journal?.begin(url)
        if let mark, let flag = journal?.culpritFlag(of: mark) {
            mirror_codecs_arm_crash_mark(flag.descriptor, Int64(flag.offset), flag.byte)
        }
        defer {
            if let mark {
                mirror_codecs_disarm_crash_mark()
                journal?.end(mark)
            }
            if let taken { budget?.give(taken) }
        }
        crashForTests(url)
        return try decode()
    }

    #if DEBUG
    /// For the test that kills mirror inside a decode (`PoisonImageTests`, which runs the debug build): with
    /// `MIRROR_TEST_CRASH_DECODING` set, a URL containing its value makes the decoding thread fault (SIGSEGV, as a
    /// decoder reading past its buffer would) while it is marked as being decoded. Compiled into debug builds only: a
    /// release binary reads no such variable.
    private static let crashTrigger = ProcessInfo.processInfo.environment["MIRROR_TEST_CRASH_DECODING"].flatMap { $0.isEmpty ? nil : $0 }

    private static func crashForTests(_ url: URL) {
        // A real fault, not a Swift trap: the page at 0 is never mapped.
        if let trigger = crashTrigger, url.absoluteString.contains(trigger) { UnsafeMutablePointer<Int32>(bitPattern: 16)!.pointee = 1 }
    }
    #else
    @inline(__always) private static func crashForTests(_ url: URL) {}
    #endif

    /// Puts `data` in place of the download's temporary file and returns where it is: the same file, rewritten, when
    /// nothing else links to it; otherwise (the disk cache holds the download under another name) a new temporary
    /// file beside it, the download's name removed. Rewriting saves a file creation and a removal per image, which
    /// cost ext4 more than the encoding (measured: a third of a resize run's CPU was the kernel allocating inodes past
    /// the recently deleted ones).
    private static func replaceContents(of file: URL, with data: Data) throws(FileError) -> URL {
        let descriptor = open(file.path, O_RDWR | O_CLOEXEC)
        var status = stat()
        if descriptor >= 0, fstat(descriptor, &status) == 0, status.st_nlink == 1 {
            defer { close(descriptor) }
            do throws(FileError) {
                guard ftruncate(descriptor, 0) == 0 else { throw FileError(operation: "write", path: file.path, code: errno) }
                try AtomicFile.writeAll(data, to: descriptor, path: file.path)
            } catch {
                AtomicFile.remove(file)
                throw error
            }
            return file
        }
        if descriptor >= 0 { close(descriptor) }
        defer { AtomicFile.remove(file) }
        let destination = try AtomicFile.makeTemporary(in: file.deletingLastPathComponent())
        defer { close(destination.descriptor) }
        do throws(FileError) {
            try AtomicFile.writeAll(data, to: destination.descriptor, path: destination.url.path)
        } catch {
            AtomicFile.remove(destination.url)
            throw error
        }
        return destination.url
    }

    /// The memory, in bytes, transforming `input` (downloaded as `format`) and blurring `boxes` will take, read from its
    /// headers.
    /// - Throws: ``Failure``: malformed headers, or more than ``memoryLimit``.
    public func estimate(_ input: Data, format: ImageFormat, blurring boxes: BlurBoxes? = nil) throws(Failure) -> Int {
        var bytes = 0
        var message = [CChar](repeating: 0, count: 256)
        let status = withRequest(for: format, blurring: boxes) { request in
            input.withUnsafeBytes { buffer in
                mirror_codecs_estimate(buffer.bindMemory(to: UInt8.self).baseAddress, buffer.count, &request, &bytes, &message, message.count)
            }
        }
        if status != MIRROR_CODECS_OK { throw Self.failure(status, message) }
        return bytes
    }

    /// Transforms an image's bytes (downloaded as `format`) and returns the new file's bytes.
    /// - Throws: ``Failure`` when the image does not decode, would take more than ``memoryLimit``, or cannot be written.
    public func transform(_ input: Data, format: ImageFormat) throws(Failure) -> Data {
        try transformed(input, format: format, blurring: nil).data
    }

    /// Transforms an image's bytes (downloaded as `format`), blurring `boxes`: the new file's bytes, and how many boxes
    /// had pixels to blur.
    /// - Throws: ``Failure`` as ``transform(_:format:)``.
    public func transformed(_ input: Data, format: ImageFormat, blurring boxes: BlurBoxes?) throws(Failure) -> (data: Data, blurredBoxes: Int) {
        var output = mirror_codecs_output()
        let status = withRequest(for: format, blurring: boxes) { request in
            input.withUnsafeBytes { buffer in
                mirror_codecs_transform(buffer.bindMemory(to: UInt8.self).baseAddress, buffer.count, &request, &output)
            }
        }
        guard status == MIRROR_CODECS_OK, let bytes = output.data else {
            throw Self.failure(status, withUnsafeBytes(of: output.message) { Array($0.bindMemory(to: CChar.self)) })
        }
        let data = Data(bytesNoCopy: bytes, count: output.length, deallocator: .custom { pointer, _ in mirror_codecs_free(pointer) })
        return (data, Int(output.blurred_boxes))
    }

    /// Runs `body` with the codecs' request for an image served as `format`, its boxes valid for the call.
    private func withRequest<Result>(
        for format: ImageFormat, blurring boxes: BlurBoxes?, _ body: (inout mirror_codecs_request) -> Result
    ) -> Result {
        let fitted = fitCode
        let pad = fit == .border ? Color.white : padColor
        let corners = (boxes?.boxes ?? []).prefix(BlurBoxes.maximumCount).map { mirror_codecs_box(x0: $0.x0, y0: $0.y0, x1: $0.x1, y1: $0.y1) }
        return corners.withUnsafeBufferPointer { corners in
            var request = mirror_codecs_request(
                input_format: Self.code(format), fit: fitted, size: Int32(size), only_if_bigger: onlyIfBigger,
                output_format: Self.code(outputFormat(for: format)), quality: Int32(quality), memory_limit: max(0, memoryLimit),
                pad_color: pad.rgb, blur_boxes: corners.isEmpty ? nil : corners.baseAddress, blur_box_count: Int32(corners.count)
            )
            return body(&request)
        }
    }

    package static func failure(_ status: mirror_codecs_status, _ message: [CChar]) -> Failure {
        let text = String(decoding: message.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let kind: Failure.Kind = switch status {
        case MIRROR_CODECS_MALFORMED: .malformed
        case MIRROR_CODECS_TOO_LARGE: .tooLarge
        default: .failed
        }
        return Failure(kind: kind, message: text.isEmpty ? "the codecs failed (status \(status.rawValue))" : text)
    }

    /// CCodecs' code of a format.
    package static func code(_ format: ImageFormat) -> mirror_codecs_format {
        switch format {
        case .jpeg: MIRROR_CODECS_JPEG
        case .png: MIRROR_CODECS_PNG
        case .webp: MIRROR_CODECS_WEBP
        case .gif: MIRROR_CODECS_GIF
        case .bmp: MIRROR_CODECS_BMP
        case .tiff: MIRROR_CODECS_TIFF
        case .heif: MIRROR_CODECS_HEIF
        case .avif: MIRROR_CODECS_AVIF
        }
    }

    private var fitCode: mirror_codecs_fit {
        switch fit {
        case .no: MIRROR_CODECS_NONE
        case .longerSide: MIRROR_CODECS_LONGER_SIDE
        case .shorterSide: MIRROR_CODECS_SHORTER_SIDE
        case .centerCrop: MIRROR_CODECS_CENTER_CROP
        case .pad, .border: MIRROR_CODECS_PAD
        case .fixed: MIRROR_CODECS_FIXED
        }
    }
}
