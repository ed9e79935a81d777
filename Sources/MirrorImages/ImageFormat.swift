/// An image container format that ``ImageValidator`` recognises from its magic bytes.
///
/// The format of a body is decided by its first bytes only, never by a `Content-Type` header or a URL's
/// extension: servers mislabel images often, and an HTML error page served as `image/jpeg` must not pass.
/// AVIF and HEIF share the ISO base media file format and are told apart by the brands in the `ftyp` box.
///
/// ```swift
/// let format = ImageValidator.sniff(firstBytes)      // .jpeg
/// let name = "photo." + (format?.fileExtension ?? "bin")
/// ```
public enum ImageFormat: String, Sendable, CaseIterable {
    /// JPEG / JFIF / EXIF (`FF D8 FF`).
    case jpeg
    /// PNG, including APNG (`89 50 4E 47 0D 0A 1A 0A`).
    case png
    /// GIF87a and GIF89a.
    case gif
    /// WebP in a RIFF container: lossy (`VP8 `), lossless (`VP8L`) or extended (`VP8X`).
    case webp
    /// Windows and OS/2 bitmap (`BM`).
    case bmp
    /// TIFF, little-endian (`II*\0`) or big-endian (`MM\0*`). BigTIFF is not supported.
    case tiff
    /// AV1 image file format: ISO-BMFF with brand `avif` or `avis`.
    case avif
    /// HEIF / HEIC: ISO-BMFF with brand `heic`, `heix`, `hevc`, `hevx`, `heim`, `heis`, `mif1` or `msf1`.
    case heif

    /// The conventional file name extension, without the dot (`"jpg"`, `"png"`, `"heic"`, …).
    public var fileExtension: String {
        switch self {
        case .jpeg: "jpg"
        case .png: "png"
        case .gif: "gif"
        case .webp: "webp"
        case .bmp: "bmp"
        case .tiff: "tiff"
        case .avif: "avif"
        case .heif: "heic"
        }
    }

    /// The registered MIME type (`"image/jpeg"`, …).
    public var mimeType: String {
        switch self {
        case .jpeg: "image/jpeg"
        case .png: "image/png"
        case .gif: "image/gif"
        case .webp: "image/webp"
        case .bmp: "image/bmp"
        case .tiff: "image/tiff"
        case .avif: "image/avif"
        case .heif: "image/heic"
        }
    }

    /// The name people use for the format in messages (`"JPEG"`, `"WebP"`, …).
    public var displayName: String {
        switch self {
        case .jpeg: "JPEG"
        case .png: "PNG"
        case .gif: "GIF"
        case .webp: "WebP"
        case .bmp: "BMP"
        case .tiff: "TIFF"
        case .avif: "AVIF"
        case .heif: "HEIF"
        }
    }
}
