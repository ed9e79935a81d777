/// Reads a GIF's logical screen descriptor and walks its blocks to the trailer.
///
/// The walk visits each extension and image descriptor in turn, skipping colour tables by their declared
/// size and data by its sub-block chain, so its cost is linear in the number of blocks and sub-blocks. A
/// file is complete when the walk reaches the `3B` trailer after at least one image; only padding (NUL,
/// space, tab, CR, LF) may follow; the first frame must hold some image data. A 0×0 logical screen, which some encoders write, takes the size of the
/// first image descriptor instead, as browsers do.
///
/// When `payloads` collects, the application extensions identified `XMP DataXMP` (XMP's GIF embedding: the packet raw
/// across the sub-blocks, then a magic trailer) and `C2PA_GIF` (C2PA's: a manifest store in ordinary sub-blocks) are
/// noted as the walk passes them.
enum GIFParser {
    static func parse(
        _ bytes: ByteView, pixelLimit: Int, payloads: inout MarkPayloads
    ) throws(ImageRejection) -> ImageInfo {
        guard let screenWidth = bytes.u16le(6), let screenHeight = bytes.u16le(8), let packed = bytes.u8(10),
              bytes.contains(13, at: 0)
        else {
            throw .truncated(.gif, "logical screen descriptor cut off")
        }
        var width = Int(screenWidth)
        var height = Int(screenHeight)
        let screenIsEmpty = width == 0 && height == 0
        if !screenIsEmpty {
            try checkDimensions(.gif, width: width, height: height, limit: pixelLimit)
        }

        var offset = 13
        if packed & 0x80 != 0 {
            offset += colorTableSize(packed)
        }

        var frameCount = 0
        while true {
            guard let introducer = bytes.u8(offset) else {
                throw .truncated(.gif, frameCount == 0 ? "no image data" : "no trailer")
            }
            switch introducer {
            case 0x3B:  // trailer
                guard frameCount > 0 else { throw .malformed(.gif, "no image before the trailer") }
                guard bytes.isPadding(from: offset + 1) else {
                    throw .malformed(.gif, "\(bytes.count - offset - 1) bytes of trailing data after the trailer")
                }
                return ImageInfo(format: .gif, width: width, height: height,
                                 frameCount: frameCount, isAnimated: frameCount > 1)

            case 0x21:  // extension: label, then sub-blocks
                guard let label = bytes.u8(offset + 1) else { throw .truncated(.gif, "extension cut off") }
                let end = try skipSubBlocks(bytes, from: offset + 2)
                // An application extension's first sub-block is its 11-byte identifier and authentication code.
                if payloads.isCollecting, label == 0xFF, bytes.u8(offset + 2) == 11, offset + 14 <= end {
                    if bytes.matches("XMP DataXMP", at: offset + 3) {
                        payloads.add(.gifXMP, offset + 14..<end)
                    } else if bytes.matches("C2PA_GIF", at: offset + 3) {
                        payloads.add(.gifC2PA, offset + 14..<end)
                    }
                }
                offset = end

            case 0x2C:  // image descriptor
                guard bytes.contains(10, at: offset),
                      let frameWidth = bytes.u16le(offset + 5), let frameHeight = bytes.u16le(offset + 7),
                      let framePacked = bytes.u8(offset + 9)
                else {
                    throw .truncated(.gif, "image descriptor cut off")
                }
                if screenIsEmpty && frameCount == 0 {
                    width = Int(frameWidth)
                    height = Int(frameHeight)
                    try checkDimensions(.gif, width: width, height: height, limit: pixelLimit)
                }
                offset += 10
                if framePacked & 0x80 != 0 {
                    offset += colorTableSize(framePacked)
                }
                // LZW minimum code size, then the image data sub-blocks.
                guard let codeSize = bytes.u8(offset) else { throw .truncated(.gif, "image data cut off") }
                guard codeSize >= 1, codeSize <= 12 else {
                    throw .malformed(.gif, "LZW minimum code size \(codeSize) at offset \(offset)")
                }
                // A first frame without a byte of image data draws nothing: a decoder shows a blank screen (or
                // refuses it, as Pillow does), not the picture the file claims to be.
                if frameCount == 0, bytes.u8(offset + 1) == 0 {
                    throw .malformed(.gif, "the first frame has no image data")
                }
                offset = try skipSubBlocks(bytes, from: offset + 1)
                frameCount += 1

            default:
                throw .malformed(.gif, "unexpected block 0x\(String(introducer, radix: 16)) at offset \(offset)")
            }
        }
    }

    /// Bytes in a global or local colour table: 3 × 2^(N+1), where N is the packed field's low three bits.
    private static func colorTableSize(_ packed: UInt8) -> Int {
        3 << (Int(packed & 0x07) + 1)
    }

    /// The offset just past a chain of data sub-blocks (length byte, data) ended by a zero-length block.
    private static func skipSubBlocks(_ bytes: ByteView, from start: Int) throws(ImageRejection) -> Int {
        var offset = start
        while true {
            guard let size = bytes.u8(offset) else {
                throw .truncated(.gif, "data sub-blocks cut off")
            }
            offset += 1
            if size == 0 { return offset }
            offset += Int(size)
        }
    }
}
