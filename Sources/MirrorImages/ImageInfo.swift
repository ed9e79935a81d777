/// What ``ImageValidator`` learned about a complete, well-formed image without decoding its pixels.
///
/// Dimensions are the stored (coded) size from the container's header, before any orientation transform
/// such as EXIF `Orientation` or HEIF `irot` is applied, so a portrait photo taken sideways reports its
/// sensor width as ``width``.
public struct ImageInfo: Sendable, Equatable {
    /// The container format, decided by magic bytes.
    public var format: ImageFormat
    /// Width in pixels; always at least 1.
    public var width: Int
    /// Height in pixels; always at least 1. A top-down BMP's negative height is reported as positive.
    public var height: Int
    /// The number of frames when it is cheap to know, otherwise `nil`.
    ///
    /// - GIF: image descriptors counted while walking the blocks.
    /// - PNG: `acTL`'s `num_frames` for APNG, otherwise 1.
    /// - WebP: `ANMF` chunks for animated files, otherwise 1.
    /// - TIFF: the number of IFDs (pages) in the chain.
    /// - JPEG and BMP: 1.
    /// - AVIF and HEIF: `nil` (sequences keep their frames in tracks that are not walked).
    public var frameCount: Int?
    /// Whether the image is meant to play as an animation: a GIF with more than one frame, an APNG with more
    /// than one frame, a WebP with the `VP8X` animation flag, or an AVIF/HEIF whose major brand is a sequence
    /// brand (`avis`, `msf1`, `hevc`, `hevx`).
    public var isAnimated: Bool
    /// What the image's own metadata says about data mining and how it was made, when the validator was asked
    /// (``ImageValidator/readsMarks``) and the image has an XMP packet or a C2PA manifest store; otherwise `nil`.
    /// Part of equality: two descriptions of one image, one with its marks read and one without, differ.
    public var marks: ImageMarks?

    /// Creates an image description; ``ImageValidator`` is the usual source of these.
    public init(
        format: ImageFormat, width: Int, height: Int, frameCount: Int? = 1, isAnimated: Bool = false,
        marks: ImageMarks? = nil
    ) {
        self.format = format
        self.width = width
        self.height = height
        self.frameCount = frameCount
        self.isAnimated = isAnimated
        self.marks = marks
    }

    /// `width × height`, saturating at `Int.max` rather than trapping.
    public var pixelCount: Int {
        let (product, overflow) = width.multipliedReportingOverflow(by: height)
        return overflow ? .max : product
    }
}
