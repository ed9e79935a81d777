/// Reads a JPEG's frame header and walks its segments to the EOI marker.
///
/// The walk follows segment lengths, skips the entropy-coded data after each SOS by looking for the next
/// marker that is neither a stuffed `FF 00` nor a restart marker, and accepts fill bytes (runs of `FF`)
/// before any marker. A complete JPEG has a frame header and at least one scan. The first SOFn segment (C0–CF except DHT C4, JPG C8 and DAC CC) gives the size;
/// thumbnails inside APP1 are never mistaken for it because APP segments are skipped by length.
///
/// Tolerances, each chosen to match what decoders accept: stray non-`FF` bytes between segments are
/// skipped (libjpeg warns about "extraneous bytes" and decodes); after EOI only padding (NUL, space, tab,
/// CR, LF) or a second JPEG (the appended images of MPF, used by cameras for previews and by phones for
/// depth and gain maps) may follow. Anything else after EOI is rejected as malformed, so a JPEG with an
/// HTML page glued to its end never passes.
///
/// When `payloads` collects, the APP1 segments holding XMP (`http://ns.adobe.com/xap/1.0/\0`) and extended XMP
/// (`http://ns.adobe.com/xmp/extension/\0`) and the APP11 segments holding JUMBF (`JP`) are noted as the walk passes
/// them; only the first image's, up to its EOI (an appended MPF image's metadata is its own).
enum JPEGParser {
    static func parse(
        _ bytes: ByteView, pixelLimit: Int, payloads: inout MarkPayloads
    ) throws(ImageRejection) -> ImageInfo {
        var width = 0
        var height = 0
        var sawFrame = false
        var sawScan = false
        var offset = 2  // after SOI

        while true {
            // Find the next marker: skip anything up to an FF, then any run of FF fill bytes.
            guard let markerStart = bytes.firstIndex(of: 0xFF, from: offset) else {
                throw .truncated(.jpeg, sawFrame ? "no EOI marker" : "no SOF marker before the end")
            }
            var index = markerStart + 1
            while let byte = bytes.u8(index), byte == 0xFF { index += 1 }
            guard let marker = bytes.u8(index) else {
                throw .truncated(.jpeg, sawFrame ? "no EOI marker" : "no SOF marker before the end")
            }
            offset = index + 1  // first byte after the marker code

            switch marker {
            case 0x00:
                // A stuffed zero outside a scan: stray data, skip it.
                continue
            case 0xD9:  // EOI
                guard sawFrame else { throw .malformed(.jpeg, "no SOF marker before EOI") }
                guard sawScan else { throw .malformed(.jpeg, "no scan (SOS) before EOI") }
                if bytes.isPadding(from: offset) || isAppendedJPEG(bytes, at: offset) {
                    return ImageInfo(format: .jpeg, width: width, height: height)
                }
                throw .malformed(.jpeg, "\(bytes.count - offset) bytes of trailing data after EOI")
            case 0x01, 0xD0...0xD8:
                // TEM, RSTn and a repeated SOI stand alone, without a length.
                continue
            default:
                break
            }

            guard let length16 = bytes.u16be(offset) else {
                throw .truncated(.jpeg, "segment \(markerName(marker)) cut off in its length")
            }
            let length = Int(length16)
            guard length >= 2 else {
                throw .malformed(.jpeg, "segment \(markerName(marker)) has length \(length)")
            }
            guard bytes.contains(length, at: offset) else {
                throw .truncated(.jpeg, "segment \(markerName(marker)) needs \(length) bytes, \(bytes.remaining(from: offset)) left")
            }
            let segmentEnd = offset + length
            if payloads.isCollecting, marker == 0xE1 || marker == 0xEB {
                notePayload(bytes, marker: marker, data: offset + 2..<segmentEnd, in: &payloads)
            }

            if isStartOfFrame(marker), !sawFrame {
                guard length >= 8, let h = bytes.u16be(offset + 3), let w = bytes.u16be(offset + 5) else {
                    throw .malformed(.jpeg, "SOF segment too short (\(length) bytes)")
                }
                width = Int(w)
                height = Int(h)
                try checkDimensions(.jpeg, width: width, height: height, limit: pixelLimit)
                sawFrame = true
            } else if marker == 0xDA {  // SOS
                guard sawFrame else { throw .malformed(.jpeg, "scan (SOS) before any SOF marker") }
                offset = try endOfEntropyCodedData(bytes, from: segmentEnd)
                sawScan = true
                continue
            }
            offset = segmentEnd
        }
    }

    /// Notes an APP1 or APP11 segment's data when it holds XMP, extended XMP or JUMBF; other uses of the markers
    /// (EXIF, other APP11 payloads) are passed over.
    private static func notePayload(_ bytes: ByteView, marker: UInt8, data: Range<Int>, in payloads: inout MarkPayloads) {
        if marker == 0xEB {
            if bytes.matches("JP", at: data.lowerBound) { payloads.add(.app11, data) }
        } else if bytes.matches("http://ns.adobe.com/xap/1.0/\0", at: data.lowerBound) {
            payloads.add(.xmp(.jpegAPP1), data.lowerBound + 29..<data.upperBound)
        } else if bytes.matches("http://ns.adobe.com/xmp/extension/\0", at: data.lowerBound) {
            payloads.add(.extendedXMP, data.lowerBound + 35..<data.upperBound)
        }
    }

    /// SOF0–SOF15 except DHT (C4), JPG (C8) and DAC (CC), which share the range.
    static func isStartOfFrame(_ marker: UInt8) -> Bool {
        (0xC0...0xCF).contains(marker) && marker != 0xC4 && marker != 0xC8 && marker != 0xCC
    }

    /// The offset of the `FF` that starts the first marker after a scan's entropy-coded data: the first
    /// `FF` followed by neither `00` (a stuffed byte) nor `D0`–`D7` (a restart marker) nor another `FF`.
    private static func endOfEntropyCodedData(_ bytes: ByteView, from start: Int) throws(ImageRejection) -> Int {
        var offset = start
        while true {
            guard let ff = bytes.firstIndex(of: 0xFF, from: offset) else {
                throw .truncated(.jpeg, "no EOI marker")
            }
            guard let next = bytes.u8(ff + 1) else { throw .truncated(.jpeg, "no EOI marker") }
            switch next {
            case 0x00, 0xD0...0xD7:
                offset = ff + 2
            default:
                // A real marker, possibly after fill bytes (FF FF …), which the main loop skips.
                return ff
            }
        }
    }

    /// Whether a second JPEG (SOI followed by another marker) starts at `offset`, as MPF images append.
    private static func isAppendedJPEG(_ bytes: ByteView, at offset: Int) -> Bool {
        bytes.u8(offset) == 0xFF && bytes.u8(offset + 1) == 0xD8 && bytes.u8(offset + 2) == 0xFF
    }

    private static func markerName(_ marker: UInt8) -> String {
        let digits: [Character] = Array("0123456789ABCDEF")
        return "FF" + String(digits[Int(marker >> 4)]) + String(digits[Int(marker & 0x0F)])
    }
}
