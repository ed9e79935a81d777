import Foundation

/// Decides whether downloaded bytes are a complete image, and reads its format and size from the headers.
///
/// Validation never decodes pixels. It recognises the format from magic bytes (see ``ImageFormat``), reads
/// the dimensions from the header, refuses images with more than ``pixelLimit`` pixels (a decompression
/// bomb guard), and walks the container's structure to its end marker to prove the body is not truncated:
/// JPEG segments to EOI, PNG chunks to IEND, GIF blocks to the trailer, WebP chunks to the RIFF size, BMP
/// pixel data, TIFF strips and tiles, and AVIF/HEIF boxes and item extents. Bodies that are not images are
/// described too — empty, an HTML page, JSON or XML text — so a CLI can say why a download was refused.
///
/// With ``readsMarks`` set, the same walk notes where the image's metadata payloads lie (JPEG APP1/APP11, PNG
/// `iTXt`/`caBX`, WebP `XMP `/`C2PA`, GIF application extensions) and reads them into ``ImageInfo/marks`` before
/// returning (see ``ImageMarks``). A mark never changes whether an image is valid: one that cannot be read is a note.
///
/// The cost is linear in the number of segments, chunks or blocks (JPEG entropy-coded data is searched
/// with `memchr`), with no allocation per byte or per block; all reads are bounds-checked, so hostile input
/// can only produce an ``ImageRejection``, never a trap. The validator is a plain value: copy it freely and
/// use it from any thread.
///
/// ```swift
/// let validator = ImageValidator()                 // Pillow's limit, 178,956,970 pixels
/// do {
///     let info = try validator.validate(body)
///     print("\(info.format.displayName) \(info.width)x\(info.height)")
/// } catch {
///     print("skipped: \(error)")                   // "skipped: truncated JPEG: no EOI marker"
/// }
/// ```
public struct ImageValidator: Sendable {
    /// The default ``pixelLimit``: 178,956,970 pixels, the most Pillow opens without refusing (its
    /// `MAX_IMAGE_PIXELS` × 2), so that no saved image breaks a training loader that reads it with Pillow or Hugging
    /// Face `datasets` (for example 13,377 × 13,377, or 16,000 × 11,184).
    public static let defaultPixelLimit = 178_956_970

    /// The most pixels (`width × height`) an image may declare; larger ones are rejected with
    /// ``ImageRejection/tooManyPixels(width:height:limit:)``. Defaults to ``defaultPixelLimit``.
    public var pixelLimit: Int

    /// Whether ``validate(_:)`` also reads the image's data-mining and provenance marks into ``ImageInfo/marks``
    /// (XMP and C2PA; ``ImageMarks`` says what and where). Defaults to false: no payload is noted and the walk costs
    /// what it did. When true, an image without metadata still costs nothing more (no search, no allocation); an XMP
    /// packet costs a byte search, and an XML parse only when it names a wanted property; a C2PA store is read
    /// whenever present. Measured on a 340-KB, 1024×768 JPEG (release build, best of 5): 13.8 µs to validate before
    /// this existed, with `readsMarks` false and with it true alike; with a 3-KB XMP packet naming `plus:DataMining`,
    /// 37 µs (the parse); with a small C2PA store, 7.5 µs more; with c2pa-python's store of a 340-KB thumbnail over six
    /// APP11 segments (copied once to be joined), 29 µs. BMP, TIFF, AVIF and HEIF are validated without marks
    /// (`marks` stays nil): their XMP and C2PA boxes are not read.
    public var readsMarks: Bool

    /// Creates a validator.
    ///
    /// - Parameters:
    ///   - pixelLimit: The most pixels an image may declare; defaults to 178,956,970.
    ///   - readsMarks: Whether to read the image's XMP and C2PA marks too; defaults to false.
    public init(pixelLimit: Int = ImageValidator.defaultPixelLimit, readsMarks: Bool = false) {
        self.pixelLimit = pixelLimit
        self.readsMarks = readsMarks
    }

    /// Validates a complete body.
    ///
    /// - Parameter data: The whole downloaded body. Slices are fine.
    /// - Returns: The image's format, dimensions and, where cheap, frame count.
    /// - Throws: ``ImageRejection`` saying why the bytes are not a complete image within the pixel limit.
    public func validate(_ data: Data) throws(ImageRejection) -> ImageInfo {
        let result = data.withUnsafeBytes { buffer in
            Result { () throws(ImageRejection) -> ImageInfo in try validate(bytes: buffer) }
        }
        return try result.get()
    }

    /// Validates bytes in memory the caller owns, such as a fuzzer's input.
    ///
    /// - Parameter bytes: The whole body; only read during the call (its marks too are read before it returns).
    /// - Returns: The image's format, dimensions and, where cheap, frame count.
    /// - Throws: ``ImageRejection`` saying why the bytes are not a complete image within the pixel limit.
    public func validate(bytes: UnsafeRawBufferPointer) throws(ImageRejection) -> ImageInfo {
        let view = ByteView(bytes)
        guard let format = Sniffing.format(of: view) else {
            throw Sniffing.rejection(forNonImage: view)
        }
        var payloads = MarkPayloads(collecting: readsMarks)
        var info: ImageInfo
        switch format {
        case .jpeg: info = try JPEGParser.parse(view, pixelLimit: pixelLimit, payloads: &payloads)
        case .png: info = try PNGParser.parse(view, pixelLimit: pixelLimit, payloads: &payloads)
        case .gif: info = try GIFParser.parse(view, pixelLimit: pixelLimit, payloads: &payloads)
        case .webp: info = try WebPParser.parse(view, pixelLimit: pixelLimit, payloads: &payloads)
        case .bmp: return try BMPParser.parse(view, pixelLimit: pixelLimit)
        case .tiff: return try TIFFParser.parse(view, pixelLimit: pixelLimit)
        case .avif, .heif: return try ISOBMFFParser.parse(view, format: format, pixelLimit: pixelLimit)
        }
        // Only once the image is known valid: a rejected body's metadata is never read.
        if readsMarks {
            info.marks = MarkReader.read(payloads, in: view)
        }
        return info
    }

    /// Validates a file on disk, memory-mapping it so a large file is not copied into memory.
    ///
    /// - Parameter url: A file URL.
    /// - Returns: The image's format, dimensions and, where cheap, frame count.
    /// - Throws: The file system's error if the file cannot be read, otherwise ``ImageRejection``.
    /// - Important: The file must not be truncated by another process while it is mapped; a mapped read
    ///   past a shrunken file's end raises `SIGBUS`. Validate files this process owns, such as its own
    ///   temporary downloads.
    public func validate(fileAt url: URL) throws -> ImageInfo {
        let data = try Data(contentsOf: url, options: .alwaysMapped)
        return try validate(data)
    }

    /// The format whose signature starts `prefix`, or nil; for deciding early, from the first bytes of a
    /// response, whether a download is worth finishing.
    ///
    /// Twelve bytes are enough for every format except AVIF/HEIF files whose decisive brand is among the
    /// compatible brands, which need the whole `ftyp` box (usually under 40 bytes). A shorter prefix
    /// returns nil rather than guessing. Matching a signature says nothing about validity: call
    /// ``validate(_:)`` on the finished body.
    public static func sniff(_ prefix: Data) -> ImageFormat? {
        prefix.withUnsafeBytes { Sniffing.format(of: ByteView($0)) }
    }
}
