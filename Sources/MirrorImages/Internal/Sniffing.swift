/// Format detection from magic bytes, and a description of bodies that are not images.
enum Sniffing {
    // MARK: - Images

    /// Brands that mean AVIF.
    private static let avifBrands: [UInt32] = [fourCC("avif"), fourCC("avis")]
    /// Brands that mean HEVC-coded HEIF specifically.
    private static let heicBrands: [UInt32] = [
        fourCC("heic"), fourCC("heix"), fourCC("hevc"), fourCC("hevx"), fourCC("heim"), fourCC("heis"),
    ]
    /// Generic HEIF brands, which AVIF files carry too; they decide only when nothing more specific does.
    private static let heifBrands: [UInt32] = [fourCC("mif1"), fourCC("msf1")]

    /// The image format whose signature starts `bytes`, or nil. Needs only the first bytes (up to the end
    /// of `ftyp` for AVIF/HEIF; 12 bytes decide every other format).
    static func format(of bytes: ByteView) -> ImageFormat? {
        guard let first = bytes.u8(0) else { return nil }
        switch first {
        case 0xFF:
            if bytes.u8(1) == 0xD8, bytes.u8(2) == 0xFF { return .jpeg }
        case 0x89:
            if bytes.matches("PNG\r\n", at: 1), bytes.u8(6) == 0x1A, bytes.u8(7) == 0x0A { return .png }
        case UInt8(ascii: "G"):
            if bytes.matches("GIF87a", at: 0) || bytes.matches("GIF89a", at: 0) { return .gif }
        case UInt8(ascii: "R"):
            if bytes.matches("RIFF", at: 0), bytes.matches("WEBP", at: 8) { return .webp }
        case UInt8(ascii: "B"):
            // "BM" alone is two printable letters; when the DIB header size is there, require a known one.
            if bytes.matches("BM", at: 0) {
                guard let headerSize = bytes.u32le(14) else { return .bmp }
                switch headerSize {
                case 12, 40, 52, 56, 64, 108, 124: return .bmp
                default: return nil
                }
            }
        case UInt8(ascii: "I"):
            if bytes.matches("II*\0", at: 0) { return .tiff }
        case UInt8(ascii: "M"):
            if bytes.matches("MM\0*", at: 0) { return .tiff }
        default:
            break
        }
        if bytes.matches("ftyp", at: 4) {
            return isoFormat(of: bytes)
        }
        return nil
    }

    /// AVIF or HEIF from the `ftyp` major brand, then its compatible brands.
    private static func isoFormat(of bytes: ByteView) -> ImageFormat? {
        guard let size = bytes.u32be(0), let major = bytes.u32be(8) else { return nil }
        if avifBrands.contains(major) { return .avif }
        if heicBrands.contains(major) { return .heif }
        // Compatible brands run from offset 16 to the end of the box (or of what we have).
        let end = min(Int(size), bytes.count)
        var sawAVIF = false
        var sawHEIC = false
        var sawHEIF = heifBrands.contains(major)
        var offset = 16
        while offset + 4 <= end, let brand = bytes.u32be(offset) {
            if avifBrands.contains(brand) { sawAVIF = true }
            if heicBrands.contains(brand) { sawHEIC = true }
            if heifBrands.contains(brand) { sawHEIF = true }
            offset += 4
        }
        if sawAVIF { return .avif }
        if sawHEIC || sawHEIF { return .heif }
        return nil
    }

    // MARK: - Not images

    /// What a body that matched no image signature is: empty, HTML, other text, or unknown binary.
    static func rejection(forNonImage bytes: ByteView) -> ImageRejection {
        guard bytes.count > 0 else { return .empty }
        var start = 0
        if bytes.u8(0) == 0xEF, bytes.u8(1) == 0xBB, bytes.u8(2) == 0xBF { start = 3 }  // UTF-8 BOM
        while let byte = bytes.u8(start), isWhitespace(byte) { start += 1 }

        let window = min(bytes.count, start + 1024)
        switch bytes.u8(start) {
        case UInt8(ascii: "<"):
            if startsHTMLTag(bytes, at: start) { return .html }
            // An XML declaration, comment or other doctype may precede <html> (XHTML); look a little way in.
            var offset = start + 1
            while offset < window, let next = bytes.firstIndex(of: UInt8(ascii: "<"), from: offset), next < window {
                if startsHTMLTag(bytes, at: next) { return .html }
                offset = next + 1
            }
            return .text(.xml)
        case UInt8(ascii: "{"), UInt8(ascii: "["):
            return .text(.json)
        default:
            break
        }
        if isText(bytes, upTo: min(bytes.count, 512)) {
            return .text(.plain)
        }
        return .unknownFormat(prefix: bytes.hexPrefix())
    }

    private static func isWhitespace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D || byte == 0x0C
    }

    /// `<!doctype html`, `<html`, `<head` or `<body`, in any case, followed by a delimiter.
    private static func startsHTMLTag(_ bytes: ByteView, at offset: Int) -> Bool {
        for tag: StaticString in ["<!doctype html", "<html", "<head", "<body"]
        where matchesIgnoringCase(bytes, tag, at: offset) {
            let after = bytes.u8(offset + tag.utf8CodeUnitCount)
            if after == nil || after == UInt8(ascii: ">") || after.map(isWhitespace) == true {
                return true
            }
        }
        return false
    }

    /// ASCII case-insensitive comparison with a lowercase pattern.
    private static func matchesIgnoringCase(_ bytes: ByteView, _ pattern: StaticString, at offset: Int) -> Bool {
        let length = pattern.utf8CodeUnitCount
        guard bytes.contains(length, at: offset) else { return false }
        let expected = pattern.utf8Start
        for index in 0..<length {
            var byte = bytes.buffer[offset + index]
            if byte >= UInt8(ascii: "A"), byte <= UInt8(ascii: "Z") { byte |= 0x20 }
            if byte != expected[index] { return false }
        }
        return true
    }

    /// Whether the first `end` bytes are valid UTF-8 with no control characters other than whitespace.
    /// A multi-byte sequence cut by `end` is allowed, since the window may split one.
    private static func isText(_ bytes: ByteView, upTo end: Int) -> Bool {
        var offset = 0
        while offset < end {
            let byte = bytes.buffer[offset]
            let length: Int
            switch byte {
            case 0x09, 0x0A, 0x0C, 0x0D, 0x20...0x7E: length = 1
            case 0xC2...0xDF: length = 2
            case 0xE0...0xEF: length = 3
            case 0xF0...0xF4: length = 4
            default: return false  // C0 controls, DEL, stray continuation bytes, invalid leads
            }
            for index in 1..<max(length, 1) {
                guard offset + index < end else { return true }
                if bytes.buffer[offset + index] & 0xC0 != 0x80 { return false }
            }
            offset += length
        }
        return true
    }
}
