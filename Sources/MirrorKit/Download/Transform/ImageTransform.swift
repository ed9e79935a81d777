import CVips
import Foundation
import MirrorImages

/// Resizing and re-encoding a verified image through libvips (`--resize`, `--size`, `--encode`, `--quality`).
///
/// The image is decoded with its EXIF orientation applied, fitted into `size` × `size` (``Fit``), and encoded as
/// asked; the default (`fit: .no`, `encoding: .keep`) is no transform at all, and nothing is decoded. `keep` writes
/// the downloaded format where libvips can (JPEG, PNG, WebP, TIFF, HEIF, AVIF) and PNG otherwise (GIF, BMP).
/// libvips's thumbnail path does the resize: it shrinks while decoding where the format allows (JPEG, WebP), so
/// a large photo costs a fraction of a full decode.
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

    /// `nil` once libvips is loaded and started (the first time an image is transformed); otherwise why it is not.
    private static let startFailure: String? = {
        var error = [CChar](repeating: 0, count: 512)
        guard mirror_vips_start(&error, error.count) != 0 else { return nil }
        return String(decoding: error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }()

    /// Applies the transform: the result is a new temporary file beside the original, which is removed.
    /// - Throws: ``Failure`` when libvips cannot read or write the image (the original is removed too).
    func apply(to image: VerifiedImage, validator: ImageValidator) throws(Failure) -> VerifiedImage {
        defer { AtomicFile.remove(image.temporaryFile) }
        let input: Data
        do {
            input = try Data(contentsOf: image.temporaryFile, options: .alwaysMapped)
        } catch {
            throw Failure(message: "cannot read the download (\(error.localizedDescription))")
        }
        let data = try transform(input, format: image.info.format)
        let info: ImageInfo
        do {
            info = try validator.validate(data)
        } catch {
            throw Failure(message: "libvips wrote an image that does not verify (\(error))")
        }
        let destination: AtomicFile.Temporary
        do throws(FileError) {
            destination = try AtomicFile.makeTemporary(in: image.temporaryFile.deletingLastPathComponent())
            defer { close(destination.descriptor) }
            try AtomicFile.writeAll(data, to: destination.descriptor, path: destination.url.path)
        } catch {
            throw Failure(message: error.description)
        }
        var result = image
        result.temporaryFile = destination.url
        result.info = info
        result.bytes = Int64(data.count)
        result.originalSHA256 = image.downloadDigest
        result.sha256 = sha256Hex(data)
        result.originalWidth = image.originalWidth ?? image.info.width
        result.originalHeight = image.originalHeight ?? image.info.height
        return result
    }

    /// Transforms an image's bytes (downloaded as `format`) and returns the new file's bytes.
    /// - Throws: ``Failure`` when libvips cannot read or write the image.
    public func transform(_ input: Data, format: ImageFormat) throws(Failure) -> Data {
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

    /// The libvips saver suffix, with its options, for an image downloaded as `format`.
    func saver(for format: ImageFormat) -> String {
        let lossy = "[Q=\(quality),strip]"
        switch encoding {
        case .jpeg: return ".jpg" + lossy
        case .png: return ".png[strip]"
        case .webp: return ".webp" + lossy
        case .keep:
            switch format {
            case .jpeg: return ".jpg" + lossy
            case .webp: return ".webp" + lossy
            case .tiff: return ".tif[strip]"
            case .heif: return ".heif" + lossy
            case .avif: return ".avif" + lossy
            default: return ".png[strip]"
            }
        }
    }
}
