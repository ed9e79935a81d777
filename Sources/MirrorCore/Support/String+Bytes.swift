/// How bytes from a table (or a URL's path) become text: UTF-8 where they are UTF-8, and a single-byte reading of the
/// bytes that are not, so that no byte is lost or replaced and no decoding error can end a field or a row.
///
/// Tables from spreadsheets and old exports are often Windows-1252 (`é` as the one byte 0xE9), and some mix it into
/// UTF-8 (one column pasted from elsewhere). Each run that is valid UTF-8 is read as UTF-8; each byte that is not part of
/// one is read as Windows-1252, as the WHATWG Encoding Standard (what browsers use) maps it: 0xA0–0xFF are Latin-1,
/// 0x80–0x9F the typographic characters (`€`, `“`, `”`, `–`, …), and the five bytes it leaves undefined their C1
/// control (0x81 → U+0081). Foundation's `.windowsCP1252` on Linux answers `nil` for any of those five, for a whole
/// field, and cannot read a field that mixes the two.
///
/// A URL is different: its bytes are what the server named the file, so they are sent as they are. Valid UTF-8 stays
/// text for `URL(string:)`, which percent-encodes non-ASCII as its UTF-8 bytes (`é` → `%C3%A9`), and spaces and controls
/// too; a byte that is not part of valid UTF-8 is percent-encoded as itself (0xE9 → `%E9`), as curl and browsers send
/// it, never replaced by U+FFFD (which reached the server as `%EF%BF%BD`: a 404 for a file that exists).
extension String {
    /// `bytes` as text: UTF-8, each byte that is not part of valid UTF-8 read as Windows-1252.
    package init(utf8OrWindows1252 bytes: ArraySlice<UInt8>) {
        self = Self.decoding(bytes) { byte, scalars in scalars.append(Self.windows1252(byte)) }
    }

    /// A URL's `bytes` as text: UTF-8 as it is, each byte that is not part of valid UTF-8 percent-encoded as itself.
    package init(urlBytes bytes: ArraySlice<UInt8>) {
        self = Self.decoding(bytes) { byte, scalars in
            scalars.append("%")
            scalars.append(Self.hexDigits[Int(byte >> 4)])
            scalars.append(Self.hexDigits[Int(byte & 0x0F)])
        }
    }

    /// The offset from the start of `bytes` of their first byte that is not part of valid UTF-8, or `nil` when they are
    /// all UTF-8.
    package static func firstInvalidUTF8(in bytes: ArraySlice<UInt8>) -> Int? {
        var parser = Unicode.UTF8.ForwardParser()
        var iterator = bytes.makeIterator()
        var offset = 0
        while true {
            switch parser.parseScalar(from: &iterator) {
            case let .valid(encoded): offset += encoded.count
            case .error: return offset
            case .emptyInput: return nil
            }
        }
    }

    /// Reads `bytes` as UTF-8, handing each byte that is not part of valid UTF-8 to `invalid`.
    private static func decoding(_ bytes: ArraySlice<UInt8>, invalid: (UInt8, inout String.UnicodeScalarView) -> Void) -> String {
        if let text = String(validating: bytes, as: UTF8.self) { return text }
        var scalars = String.UnicodeScalarView()
        var parser = Unicode.UTF8.ForwardParser()
        var iterator = bytes.makeIterator()
        var index = bytes.startIndex
        while true {
            switch parser.parseScalar(from: &iterator) {
            case let .valid(encoded):
                scalars.append(Unicode.UTF8.decode(encoded))
                index += encoded.count
            case let .error(length):
                for byte in bytes[index..<(index + length)] { invalid(byte, &scalars) }
                index += length
            case .emptyInput:
                return String(scalars)
            }
        }
    }

    private static let hexDigits: [Unicode.Scalar] = Array("0123456789ABCDEF".unicodeScalars)

    /// Windows-1252's 0x80–0x9F (the WHATWG index; its five undefined bytes are their C1 controls).
    private static let windows1252High: [UInt32] = [
        0x20AC, 0x0081, 0x201A, 0x0192, 0x201E, 0x2026, 0x2020, 0x2021, 0x02C6, 0x2030, 0x0160, 0x2039, 0x0152, 0x008D, 0x017D, 0x008F,
        0x0090, 0x2018, 0x2019, 0x201C, 0x201D, 0x2022, 0x2013, 0x2014, 0x02DC, 0x2122, 0x0161, 0x203A, 0x0153, 0x009D, 0x017E, 0x0178,
    ]

    /// The character Windows-1252 gives `byte`.
    static func windows1252(_ byte: UInt8) -> Unicode.Scalar {
        if (0x80...0x9F).contains(byte) { return Unicode.Scalar(windows1252High[Int(byte - 0x80)])! }
        return Unicode.Scalar(byte)  // ASCII and Latin-1
    }
}
