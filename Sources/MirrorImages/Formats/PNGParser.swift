/// Reads a PNG's IHDR and walks its chunks by length to IEND.
///
/// The first chunk must be a 13-byte IHDR with a valid bit depth and color type combination. Every chunk
/// length is followed, so a file is complete only when the lengths lead exactly to an `IEND` chunk that
/// fits; at least one `IDAT` must come before it. After IEND only padding (NUL, space, tab, CR, LF) may
/// follow. CRCs are not verified: truncation, not bit rot, is what downloads suffer from, and a CRC pass
/// would read every byte. An `acTL` chunk (APNG) supplies the frame count.
///
/// When `payloads` collects, an `iTXt` chunk with keyword `XML:com.adobe.xmp` (its text; a compressed one is noted as
/// such) and a `caBX` chunk (a C2PA manifest store) are noted as the walk passes them.
enum PNGParser {
    private static let ihdr = fourCC("IHDR")
    private static let idat = fourCC("IDAT")
    private static let iend = fourCC("IEND")
    private static let actl = fourCC("acTL")
    private static let itxt = fourCC("iTXt")
    private static let cabx = fourCC("caBX")

    static func parse(
        _ bytes: ByteView, pixelLimit: Int, payloads: inout MarkPayloads
    ) throws(ImageRejection) -> ImageInfo {
        guard let ihdrLength = bytes.u32be(8), let firstType = bytes.u32be(12) else {
            throw .truncated(.png, "IHDR chunk cut off")
        }
        guard firstType == ihdr else { throw .malformed(.png, "first chunk is \(bytes.fourCCText(at: 12)), not IHDR") }
        guard ihdrLength == 13 else { throw .malformed(.png, "IHDR length is \(ihdrLength), expected 13") }
        guard bytes.contains(25, at: 8),
              let w = bytes.u32be(16), let h = bytes.u32be(20),
              let bitDepth = bytes.u8(24), let colorType = bytes.u8(25),
              let compression = bytes.u8(26), let filter = bytes.u8(27), let interlace = bytes.u8(28)
        else {
            throw .truncated(.png, "IHDR chunk cut off")
        }
        guard w <= 0x7FFF_FFFF, h <= 0x7FFF_FFFF else {
            throw .malformed(.png, "IHDR dimensions \(w)x\(h) exceed 2^31-1")
        }
        guard isValid(bitDepth: bitDepth, colorType: colorType) else {
            throw .malformed(.png, "IHDR bit depth \(bitDepth) is invalid for color type \(colorType)")
        }
        guard compression == 0, filter == 0, interlace <= 1 else {
            throw .malformed(.png, "IHDR has unknown compression, filter or interlace method")
        }
        let width = Int(w)
        let height = Int(h)
        try checkDimensions(.png, width: width, height: height, limit: pixelLimit)

        var frameCount = 1
        var sawImageData = false
        var offset = 8 + 12 + 13  // the chunk after IHDR
        while true {
            guard let length32 = bytes.u32be(offset), bytes.contains(8, at: offset) else {
                throw .truncated(.png, "no IEND chunk")
            }
            guard length32 <= 0x7FFF_FFFF else {
                throw .malformed(.png, "chunk at offset \(offset) has length \(length32) over 2^31-1")
            }
            guard isValidChunkType(bytes, at: offset + 4) else {
                throw .malformed(.png, "invalid chunk type \(bytes.fourCCText(at: offset + 4)) at offset \(offset)")
            }
            let length = Int(length32)
            guard bytes.contains(length + 12, at: offset) else {
                throw .truncated(.png, "chunk \(bytes.fourCCText(at: offset + 4)) needs \(length + 12) bytes, \(bytes.remaining(from: offset)) left")
            }
            let type = bytes.u32be(offset + 4) ?? 0  // in bounds: checked above
            switch type {
            case idat:
                sawImageData = true
            case actl:
                if length >= 8, let frames = bytes.u32be(offset + 8) {
                    frameCount = max(1, Int(frames))
                }
            case iend:
                guard sawImageData else { throw .malformed(.png, "no IDAT chunk before IEND") }
                let end = offset + 12 + length
                guard bytes.isPadding(from: end) else {
                    throw .malformed(.png, "\(bytes.count - end) bytes of trailing data after IEND")
                }
                return ImageInfo(format: .png, width: width, height: height,
                                 frameCount: frameCount, isAnimated: frameCount > 1)
            case ihdr:
                throw .malformed(.png, "second IHDR chunk at offset \(offset)")
            case itxt where payloads.isCollecting:
                noteXMP(bytes, data: offset + 8..<offset + 8 + length, in: &payloads)
            case cabx where payloads.isCollecting:
                payloads.add(.manifestStore(.pngCaBX), offset + 8..<offset + 8 + length)
            default:
                break
            }
            offset += 12 + length
        }
    }

    /// Notes an `iTXt` chunk's text when its keyword is `XML:com.adobe.xmp`: keyword, NUL, compression flag and
    /// method, a NUL-terminated language tag and translated keyword, then the text (PNG 3rd ed., 11.3.3.4).
    private static func noteXMP(_ bytes: ByteView, data: Range<Int>, in payloads: inout MarkPayloads) {
        guard bytes.matches("XML:com.adobe.xmp\0", at: data.lowerBound) else { return }
        let flags = data.lowerBound + 18
        guard let compressed = bytes.u8(flags), flags + 2 <= data.upperBound,
              let languageEnd = bytes.firstIndex(of: 0, in: flags + 2..<data.upperBound),
              let translatedEnd = bytes.firstIndex(of: 0, in: languageEnd + 1..<data.upperBound)
        else {
            payloads.add(.malformedITXt, data)
            return
        }
        payloads.add(compressed == 0 ? .xmp(.pngITXt) : .compressedXMP, translatedEnd + 1..<data.upperBound)
    }

    /// The combinations of PNG spec table 11.1.
    private static func isValid(bitDepth: UInt8, colorType: UInt8) -> Bool {
        switch (colorType, bitDepth) {
        case (0, 1), (0, 2), (0, 4), (0, 8), (0, 16): true
        case (3, 1), (3, 2), (3, 4), (3, 8): true
        case (2, 8), (2, 16), (4, 8), (4, 16), (6, 8), (6, 16): true
        default: false
        }
    }

    /// Chunk types are four ASCII letters.
    private static func isValidChunkType(_ bytes: ByteView, at offset: Int) -> Bool {
        for index in offset..<offset + 4 {
            guard let byte = bytes.u8(index) else { return false }
            let isLetter = (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
            if !isLetter { return false }
        }
        return true
    }
}
