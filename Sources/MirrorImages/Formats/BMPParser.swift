/// Reads a BMP's DIB header and checks that its pixel data lies inside the file.
///
/// Both header families are understood: the OS/2 `BITMAPCOREHEADER` (12 bytes, unsigned 16-bit sizes)
/// and `BITMAPINFOHEADER` with its extensions (40, 52, 56, 64, 108 and 124 bytes, signed 32-bit sizes,
/// where a negative height means the rows are stored top-down). Completeness: the file header's `bfSize`
/// must not exceed the body, and the pixel data must fit from `bfOffBits` — its size computed from width,
/// height and bit depth for uncompressed and bit-field images, or taken from `biSizeImage` for RLE, JPEG
/// and PNG payloads. Bytes after the pixel data are ignored, as every decoder ignores them.
enum BMPParser {
    static func parse(_ bytes: ByteView, pixelLimit: Int) throws(ImageRejection) -> ImageInfo {
        guard let fileSize = bytes.u32le(2), let pixelOffset = bytes.u32le(10), let headerSize = bytes.u32le(14) else {
            throw .truncated(.bmp, "file header cut off")
        }
        let width: Int
        let height: Int
        let bitsPerPixel: Int
        var compression: UInt32 = 0
        var imageSize: UInt32 = 0

        switch headerSize {
        case 12:
            guard let w = bytes.u16le(18), let h = bytes.u16le(20), let bpp = bytes.u16le(24) else {
                throw .truncated(.bmp, "BITMAPCOREHEADER cut off")
            }
            width = Int(w)
            height = Int(h)
            bitsPerPixel = Int(bpp)
        case 40, 52, 56, 64, 108, 124:
            guard bytes.contains(Int(headerSize), at: 14),
                  let w = bytes.u32le(18), let h = bytes.u32le(22), let bpp = bytes.u16le(28),
                  let method = bytes.u32le(30), let size = bytes.u32le(34)
            else {
                throw .truncated(.bmp, "BITMAPINFOHEADER cut off")
            }
            width = Int(Int32(bitPattern: w))
            // Negative height = top-down rows; Int is 64-bit, so negating Int32.min cannot overflow.
            height = abs(Int(Int32(bitPattern: h)))
            bitsPerPixel = Int(bpp)
            compression = method
            imageSize = size
        default:
            throw .malformed(.bmp, "unknown DIB header size \(headerSize)")
        }
        try checkDimensions(.bmp, width: width, height: height, limit: pixelLimit)

        let pixelBytes: Int
        switch compression {
        case 0, 3, 6:  // BI_RGB, BI_BITFIELDS, BI_ALPHABITFIELDS: rows padded to 4 bytes
            switch bitsPerPixel {
            case 1, 2, 4, 8, 16, 24, 32: break
            default: throw .malformed(.bmp, "\(bitsPerPixel) bits per pixel")
            }
            let (rowBits, rowOverflow) = width.multipliedReportingOverflow(by: bitsPerPixel)
            let rowBytes = (rowBits / 32 + (rowBits % 32 == 0 ? 0 : 1)) * 4
            let (total, overflow) = rowBytes.multipliedReportingOverflow(by: height)
            guard !rowOverflow, !overflow else { throw .malformed(.bmp, "pixel data size overflows") }
            pixelBytes = total
        case 1, 2, 4, 5:  // RLE8, RLE4, JPEG, PNG: the header must give the payload size
            guard imageSize > 0 else { throw .malformed(.bmp, "compressed bitmap without biSizeImage") }
            pixelBytes = Int(imageSize)
        default:
            throw .malformed(.bmp, "unknown compression method \(compression)")
        }

        let start = Int(pixelOffset)
        guard start >= 14 + Int(headerSize) else {
            throw .malformed(.bmp, "pixel data offset \(start) lies inside the headers")
        }
        guard bytes.contains(pixelBytes, at: start) else {
            throw .truncated(.bmp, "pixel data needs \(pixelBytes) bytes from offset \(start), have \(bytes.count) in all")
        }
        guard Int(fileSize) <= bytes.count else {
            throw .truncated(.bmp, "file header says \(fileSize) bytes, have \(bytes.count)")
        }
        return ImageInfo(format: .bmp, width: width, height: height)
    }
}
