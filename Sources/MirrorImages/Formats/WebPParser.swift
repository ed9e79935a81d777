/// Reads a WebP's bitstream or canvas header and walks its RIFF chunks.
///
/// The RIFF size field must account for the whole body: fewer bytes than it promises means truncation;
/// one extra byte is accepted when the size is odd (the RIFF pad byte some writers leave outside the
/// count) and otherwise only padding (NUL, space, tab, CR, LF) may follow. Inside, every chunk (padded to
/// an even length) must fit, and the first chunk decides the layout:
/// - `VP8 `: the lossy key frame header holds 14-bit width and height after the `9D 01 2A` start code;
/// - `VP8L`: the lossless header holds 14-bit width−1 and height−1 after the `2F` signature;
/// - `VP8X`: the extended header holds a 24-bit canvas width−1 and height−1 and the animation flag; the
///   walk then requires image data (`VP8 `/`VP8L`, or `ANMF` frames when animated) and counts frames.
///
/// When `payloads` collects, the `XMP ` chunk (an XMP packet) and the `C2PA` chunk (a C2PA manifest store) are noted
/// as the walk passes them, whatever the layout (c2pa-rs appends `C2PA` to a simple `VP8 ` file as well).
enum WebPParser {
    private static let vp8 = fourCC("VP8 ")
    private static let vp8l = fourCC("VP8L")
    private static let vp8x = fourCC("VP8X")
    private static let anmf = fourCC("ANMF")
    private static let xmp = fourCC("XMP ")
    private static let c2pa = fourCC("C2PA")

    static func parse(
        _ bytes: ByteView, pixelLimit: Int, payloads: inout MarkPayloads
    ) throws(ImageRejection) -> ImageInfo {
        guard let riffSize = bytes.u32le(4) else { throw .truncated(.webp, "RIFF header cut off") }
        guard riffSize >= 4 + 8 else { throw .malformed(.webp, "RIFF size \(riffSize) is too small") }
        // The RIFF size counts the bytes after the 8-byte RIFF header; it is at most 2^32-1, so this fits.
        let end = Int(riffSize) + 8
        guard bytes.count >= end else {
            throw .truncated(.webp, "RIFF size says \(end) bytes, have \(bytes.count)")
        }
        if bytes.count > end {
            let padAllowed = end % 2 == 1 ? end + 1 : end
            guard bytes.count == padAllowed || bytes.isPadding(from: end) else {
                throw .malformed(.webp, "\(bytes.count - end) bytes of trailing data after the RIFF chunk")
            }
        }

        // First chunk: the layout.
        guard let firstType = bytes.u32be(12), let firstSize32 = bytes.u32le(16) else {
            throw .malformed(.webp, "no chunk after the RIFF header")
        }
        let firstSize = Int(firstSize32)
        guard firstSize <= end - 20 else {
            throw .malformed(.webp, "chunk \(bytes.fourCCText(at: 12)) overruns the RIFF size")
        }
        let payload = 20
        var width: Int
        var height: Int
        var isExtended = false
        var isAnimated = false

        switch firstType {
        case vp8:
            // Frame tag (3 bytes; bit 0 clear for a key frame), start code 9D 01 2A, then 14-bit sizes.
            guard firstSize >= 10, let tag = bytes.u8(payload),
                  let w = bytes.u16le(payload + 6), let h = bytes.u16le(payload + 8)
            else {
                throw .malformed(.webp, "VP8 chunk too short for a frame header")
            }
            guard tag & 0x01 == 0 else { throw .malformed(.webp, "VP8 bitstream does not start with a key frame") }
            guard bytes.u8(payload + 3) == 0x9D, bytes.u8(payload + 4) == 0x01, bytes.u8(payload + 5) == 0x2A else {
                throw .malformed(.webp, "VP8 start code missing")
            }
            width = Int(w & 0x3FFF)
            height = Int(h & 0x3FFF)

        case vp8l:
            guard firstSize >= 5, let signature = bytes.u8(payload), let bits = bytes.u32le(payload + 1) else {
                throw .malformed(.webp, "VP8L chunk too short for a header")
            }
            guard signature == 0x2F else { throw .malformed(.webp, "VP8L signature byte is not 0x2F") }
            guard bits >> 29 == 0 else { throw .malformed(.webp, "VP8L version is not 0") }
            width = Int(bits & 0x3FFF) + 1
            height = Int((bits >> 14) & 0x3FFF) + 1

        case vp8x:
            guard firstSize >= 10, let flags = bytes.u8(payload),
                  let w = bytes.u24le(payload + 4), let h = bytes.u24le(payload + 7)
            else {
                throw .malformed(.webp, "VP8X chunk too short")
            }
            width = Int(w) + 1
            height = Int(h) + 1
            isExtended = true
            isAnimated = flags & 0x02 != 0

        default:
            throw .malformed(.webp, "first chunk is \(bytes.fourCCText(at: 12)), not VP8, VP8L or VP8X")
        }
        try checkDimensions(.webp, width: width, height: height, limit: pixelLimit)

        // Walk every chunk to the RIFF end.
        var frames = 0
        var sawBitstream = false
        var offset = 12
        while offset < end {
            guard offset + 8 <= end, let type = bytes.u32be(offset), let size32 = bytes.u32le(offset + 4) else {
                throw .malformed(.webp, "chunk header at offset \(offset) overruns the RIFF size")
            }
            let size = Int(size32)
            guard size <= end - offset - 8 else {
                throw .malformed(.webp, "chunk \(bytes.fourCCText(at: offset)) overruns the RIFF size")
            }
            switch type {
            case vp8, vp8l: sawBitstream = true
            case anmf: frames += 1
            case xmp where payloads.isCollecting: payloads.add(.xmp(.webpXMP), offset + 8..<offset + 8 + size)
            case c2pa where payloads.isCollecting: payloads.add(.manifestStore(.webpC2PA), offset + 8..<offset + 8 + size)
            default: break
            }
            offset += 8 + size + (size & 1)
        }

        if isExtended {
            if isAnimated {
                guard frames > 0 else { throw .malformed(.webp, "animated WebP has no ANMF frames") }
            } else {
                guard sawBitstream else { throw .malformed(.webp, "VP8X file has no VP8 or VP8L image data") }
            }
        }
        return ImageInfo(format: .webp, width: width, height: height,
                         frameCount: isAnimated ? frames : 1, isAnimated: isAnimated)
    }
}
