import CCodecs
import CVips
import Foundation
import MirrorCore
import MirrorImages
import MirrorStorage

/// Resizing and re-encoding a verified image (`--resize`, `--size`, `--encode`, `--quality`).
///
/// The image is decoded with its EXIF orientation applied (an animation's first frame), fitted into `size` × `size`
/// (``Fit``), and encoded as asked; the default (`fit: .no`, `encoding: .keep`) is no transform at all. An image that
/// needs no resize and is already in the format written is kept byte for byte: with `encoding: .jpeg` a served JPEG
/// is stored as served (no generation loss, no CPU) and only the other formats are converted. `keep` writes the
/// served format where it can (JPEG, PNG, WebP, TIFF, HEIF, AVIF) and PNG otherwise (GIF, BMP). Alpha is kept in PNG
/// and WebP and composited onto white in JPEG.
///
/// JPEG, PNG, WebP and GIF — nearly everything hosts serve — go straight through their codecs (`CCodecs`: a JPEG is
/// decoded at the smallest DCT scale that still covers the target, a WebP scaled while it decodes, then Catmull-Rom
/// resampling); the rest, and the few images that path leaves (CMYK JPEGs, animated WebP), through libvips.
public struct ImageTransform: Sendable, Hashable {
    /// How an image is fitted into `size` × `size`.
    public enum Fit: String, Sendable, CaseIterable {
        /// No resize.
        case no
        /// The longer side becomes `size`.
        case keepRatio = "keep-ratio"
        /// The shorter side becomes `size`, and the middle `size` × `size` is kept.
        case centerCrop = "center-crop"
        /// The longer side becomes `size`, then black borders make it square.
        case pad
    }

    /// The format written.
    public enum Encoding: String, Sendable, CaseIterable {
        case keep, jpeg, png, webp
    }

    /// Why a transform failed (libvips could not decode or encode the image).
    public struct Failure: Error, Sendable, CustomStringConvertible {
        public var message: String
        public var description: String { "could not resize: \(message)" }
    }

    public var fit: Fit = .no
    /// The target size in pixels. Default 256.
    public var size = 256
    /// Whether only images larger than `size` are resized (smaller ones are kept as they are, or only padded).
    public var onlyIfBigger = false
    public var encoding: Encoding = .keep
    /// JPEG and WebP quality, 1–100. Default 95.
    public var quality = 95

    public init(fit: Fit = .no, size: Int = 256, onlyIfBigger: Bool = false, encoding: Encoding = .keep, quality: Int = 95) {
        self.fit = fit
        self.size = size
        self.onlyIfBigger = onlyIfBigger
        self.encoding = encoding
        self.quality = quality
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

    /// `nil` once libvips is loaded and started (the first time an image is transformed); otherwise why it is not.
    private static let startFailure: String? = {
        var error = [CChar](repeating: 0, count: 512)
        guard mirror_vips_start(&error, error.count) != 0 else { return nil }
        return String(decoding: error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }()

    /// Applies the transform: the result replaces the download's temporary file (``replaceContents(of:with:)``); an
    /// image ``keepsAsServed(_:)`` is returned as it is.
    /// - Throws: ``Failure`` when the image cannot be read or written (the download is removed too).
    package func apply(to image: VerifiedImage, validator: ImageValidator) throws(Failure) -> VerifiedImage {
        if keepsAsServed(image.info.format) { return image }
        let data: Data
        let info: ImageInfo
        do throws(Failure) {
            let input: Data
            do {
                input = try Data(contentsOf: image.temporaryFile, options: .alwaysMapped)
            } catch {
                throw Failure(message: "cannot read the download (\(error.localizedDescription))")
            }
            data = try transform(input, format: image.info.format)
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
        return result
    }

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

    /// Transforms an image's bytes (downloaded as `format`) and returns the new file's bytes.
    /// - Throws: ``Failure`` when the codecs (or libvips, for the other formats) cannot read or write the image.
    public func transform(_ input: Data, format: ImageFormat) throws(Failure) -> Data {
        if let data = try codecsTransform(input, format: format) { return data }
        return try vipsTransform(input, format: format)
    }

    /// The transform through the codecs themselves, or `nil` for an image they leave to libvips.
    private func codecsTransform(_ input: Data, format: ImageFormat) throws(Failure) -> Data? {
        guard let inputCode = Self.codecsCode(format), let outputCode = Self.codecsCode(outputFormat(for: format)) else { return nil }
        var output: UnsafeMutablePointer<UInt8>?
        var length = 0
        var final = (width: Int32(0), height: Int32(0))
        var error = [CChar](repeating: 0, count: 512)
        let status = input.withUnsafeBytes { bytes in
            mirror_codecs_transform(
                bytes.bindMemory(to: UInt8.self).baseAddress, bytes.count, inputCode, fitCode, Int32(size), onlyIfBigger ? 1 : 0,
                outputCode, Int32(quality), &output, &length, &final.width, &final.height, &error, error.count
            )
        }
        if status == MIRROR_CODECS_UNSUPPORTED { return nil }
        guard status == 0, let output else {
            throw Failure(message: String(decoding: error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
        return Data(bytesNoCopy: UnsafeMutableRawPointer(output), count: length, deallocator: .custom { pointer, _ in mirror_codecs_free(pointer) })
    }

    /// CCodecs' code of a format it reads and writes, or `nil`.
    private static func codecsCode(_ format: ImageFormat) -> Int32? {
        switch format {
        case .jpeg: Int32(MIRROR_CODECS_JPEG.rawValue)
        case .png: Int32(MIRROR_CODECS_PNG.rawValue)
        case .webp: Int32(MIRROR_CODECS_WEBP.rawValue)
        case .gif: Int32(MIRROR_CODECS_GIF.rawValue)
        case .bmp, .tiff, .avif, .heif: nil
        }
    }

    /// The transform through libvips.
    private func vipsTransform(_ input: Data, format: ImageFormat) throws(Failure) -> Data {
        if let failure = Self.startFailure { throw Failure(message: failure) }
        var output: UnsafeMutableRawPointer?
        var length = 0
        var final = (width: Int32(0), height: Int32(0))
        var error = [CChar](repeating: 0, count: 512)
        let status = input.withUnsafeBytes { bytes in
            mirror_vips_transform(
                bytes.baseAddress, bytes.count, fitCode, Int32(size), onlyIfBigger ? 1 : 0, saver(for: format),
                &output, &length, &final.width, &final.height, &error, error.count
            )
        }
        guard status == 0, let output else {
            let message = String(decoding: error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            throw Failure(message: message.split(separator: "\n").first.map(String.init) ?? "libvips failed")
        }
        defer { mirror_vips_free(output) }
        return Data(UnsafeRawBufferPointer(start: output, count: length))
    }

    private var fitCode: Int32 {
        switch fit {
        case .no: Int32(MIRROR_VIPS_NONE.rawValue)
        case .keepRatio: Int32(MIRROR_VIPS_KEEP_RATIO.rawValue)
        case .centerCrop: Int32(MIRROR_VIPS_CENTER_CROP.rawValue)
        case .pad: Int32(MIRROR_VIPS_PAD.rawValue)
        }
    }

    /// The libvips saver suffix, with its options, for an image downloaded as `format` (JPEG flattens alpha onto white).
    func saver(for format: ImageFormat) -> String {
        let lossy = "[Q=\(quality),strip]"
        switch outputFormat(for: format) {
        case .jpeg: return ".jpg[Q=\(quality),strip,background=255]"
        case .webp: return ".webp" + lossy
        case .tiff: return ".tif[strip]"
        case .heif: return ".heif" + lossy
        case .avif: return ".avif" + lossy
        case .png, .gif, .bmp: return ".png[strip]"
        }
    }
}
