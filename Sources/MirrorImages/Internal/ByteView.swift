import Foundation

/// A bounds-checked, read-only view of a contiguous byte buffer.
///
/// Every read takes an absolute offset and returns `nil` when any byte it needs lies outside the buffer, so
/// parsers can never read out of bounds or trap on hostile input; offsets and lengths are compared against
/// `count - offset` rather than added, so no arithmetic here can overflow. The view does not own its memory:
/// it is only valid inside the `withUnsafeBytes` closure that produced it, which is why it is not `Sendable`.
struct ByteView {
    let buffer: UnsafeRawBufferPointer

    init(_ buffer: UnsafeRawBufferPointer) {
        self.buffer = buffer
    }

    var count: Int { buffer.count }

    /// Whether `length` bytes starting at `offset` lie inside the buffer.
    @inline(__always)
    func contains(_ length: Int, at offset: Int) -> Bool {
        offset >= 0 && length >= 0 && offset <= buffer.count && length <= buffer.count - offset
    }

    /// The number of bytes from `offset` to the end (0 when `offset` is past the end).
    @inline(__always)
    func remaining(from offset: Int) -> Int {
        offset >= 0 && offset < buffer.count ? buffer.count - offset : 0
    }

    @inline(__always)
    func u8(_ offset: Int) -> UInt8? {
        guard offset >= 0, offset < buffer.count else { return nil }
        return buffer[offset]
    }

    @inline(__always)
    func u16be(_ offset: Int) -> UInt16? {
        guard contains(2, at: offset) else { return nil }
        return UInt16(buffer[offset]) << 8 | UInt16(buffer[offset + 1])
    }

    @inline(__always)
    func u16le(_ offset: Int) -> UInt16? {
        guard contains(2, at: offset) else { return nil }
        return UInt16(buffer[offset + 1]) << 8 | UInt16(buffer[offset])
    }

    @inline(__always)
    func u24le(_ offset: Int) -> UInt32? {
        guard contains(3, at: offset) else { return nil }
        return UInt32(buffer[offset + 2]) << 16 | UInt32(buffer[offset + 1]) << 8 | UInt32(buffer[offset])
    }

    @inline(__always)
    func u32be(_ offset: Int) -> UInt32? {
        guard contains(4, at: offset) else { return nil }
        return UInt32(buffer[offset]) << 24 | UInt32(buffer[offset + 1]) << 16
            | UInt32(buffer[offset + 2]) << 8 | UInt32(buffer[offset + 3])
    }

    @inline(__always)
    func u32le(_ offset: Int) -> UInt32? {
        guard contains(4, at: offset) else { return nil }
        return UInt32(buffer[offset + 3]) << 24 | UInt32(buffer[offset + 2]) << 16
            | UInt32(buffer[offset + 1]) << 8 | UInt32(buffer[offset])
    }

    @inline(__always)
    func u64be(_ offset: Int) -> UInt64? {
        guard let high = u32be(offset), let low = u32be(offset + 4) else { return nil }
        return UInt64(high) << 32 | UInt64(low)
    }

    @inline(__always)
    func u16(_ offset: Int, bigEndian: Bool) -> UInt16? {
        bigEndian ? u16be(offset) : u16le(offset)
    }

    @inline(__always)
    func u32(_ offset: Int, bigEndian: Bool) -> UInt32? {
        bigEndian ? u32be(offset) : u32le(offset)
    }

    /// Whether the bytes at `offset` equal `bytes`.
    func matches(_ bytes: StaticString, at offset: Int) -> Bool {
        let length = bytes.utf8CodeUnitCount
        guard contains(length, at: offset) else { return false }
        let expected = bytes.utf8Start
        for index in 0..<length where buffer[offset + index] != expected[index] {
            return false
        }
        return true
    }

    /// Whether the bytes at `offset` equal `bytes`, ASCII letters compared without case.
    func matchesIgnoringCase(_ bytes: [UInt8], at offset: Int) -> Bool {
        guard contains(bytes.count, at: offset) else { return false }
        for (index, expected) in bytes.enumerated() {
            let actual = buffer[offset + index]
            guard actual == expected || (actual | 0x20 == expected | 0x20 && (0x61...0x7A).contains(actual | 0x20)) else {
                return false
            }
        }
        return true
    }

    /// Whether the `count` bytes at `first` equal the `count` bytes at `second`.
    func bytesEqual(_ first: Int, _ second: Int, count: Int) -> Bool {
        guard contains(count, at: first), contains(count, at: second), let base = buffer.baseAddress else { return false }
        return memcmp(base + first, base + second, count) == 0
    }

    /// Whether every byte from `offset` to the end is padding some servers and tools append after an
    /// image's end marker: NUL, space, tab, CR or LF. True when `offset` is at or past the end.
    func isPadding(from offset: Int) -> Bool {
        guard offset < buffer.count else { return true }
        for index in max(offset, 0)..<buffer.count {
            switch buffer[index] {
            case 0x00, 0x20, 0x09, 0x0A, 0x0D: continue
            default: return false
            }
        }
        return true
    }

    /// The index of the first `byte` at or after `offset`, or `nil`. Uses `memchr`, which is vectorised.
    func firstIndex(of byte: UInt8, from offset: Int) -> Int? {
        guard offset >= 0, offset < buffer.count, let base = buffer.baseAddress else { return nil }
        guard let found = memchr(base + offset, Int32(byte), buffer.count - offset) else { return nil }
        return UnsafeRawPointer(found) - base
    }

    /// The index of the first `byte` in `range` (clamped to the buffer), or `nil`; `memchr` bounded to the range, so
    /// a search inside one box or packet never reads, or costs, past it.
    func firstIndex(of byte: UInt8, in range: Range<Int>) -> Int? {
        let lower = max(range.lowerBound, 0)
        let upper = min(range.upperBound, buffer.count)
        guard lower < upper, let base = buffer.baseAddress else { return nil }
        guard let found = memchr(base + lower, Int32(byte), upper - lower) else { return nil }
        return UnsafeRawPointer(found) - base
    }

    /// Whether `needle` occurs in `range` (clamped to the buffer).
    ///
    /// glibc's `memmem` is not visible to Swift (it is a GNU extension its module map leaves out), so this is
    /// `memchr` for the needle's last upper-case letter — rarer in XML than its lower-case ones — and a comparison
    /// around each hit: linear in the range, with at most one comparison of the needle per byte.
    func contains(_ needle: StaticString, in range: Range<Int>) -> Bool {
        let length = needle.utf8CodeUnitCount
        let lower = max(range.lowerBound, 0)
        let upper = min(range.upperBound, buffer.count)
        guard length > 0, upper - lower >= length else { return false }
        let needleBytes = UnsafeBufferPointer(start: needle.utf8Start, count: length)
        let anchor = needleBytes.lastIndex { (0x41...0x5A).contains($0) } ?? 0
        var from = lower + anchor
        while let hit = firstIndex(of: needleBytes[anchor], in: from..<upper - (length - 1 - anchor)) {
            let start = hit - anchor
            if matches(needle, at: start) { return true }
            from = hit + 1
        }
        return false
    }

    /// Lowercase, space-separated hex of up to `limit` bytes from the start, for messages.
    func hexPrefix(_ limit: Int = 16) -> String {
        let digits: [Character] = Array("0123456789abcdef")
        var text = ""
        for index in 0..<min(limit, buffer.count) {
            if index > 0 { text.append(" ") }
            text.append(digits[Int(buffer[index] >> 4)])
            text.append(digits[Int(buffer[index] & 0x0F)])
        }
        return text
    }

    /// A four-character code at `offset` rendered for messages (`'mdat'`), with unprintable bytes as `?`.
    func fourCCText(at offset: Int) -> String {
        var text = ""
        for index in offset..<offset + 4 {
            guard let byte = u8(index) else { break }
            text.append(byte >= 0x20 && byte < 0x7F ? Character(Unicode.Scalar(byte)) : "?")
        }
        return "'" + text + "'"
    }
}

/// A big-endian four-character code (`"IHDR"` → `0x49484452`), for comparing chunk and box types as integers.
@inline(__always)
func fourCC(_ code: StaticString) -> UInt32 {
    precondition(code.utf8CodeUnitCount == 4, "a four-character code has four characters")
    let bytes = code.utf8Start
    return UInt32(bytes[0]) << 24 | UInt32(bytes[1]) << 16 | UInt32(bytes[2]) << 8 | UInt32(bytes[3])
}

/// Throws if the dimensions are zero or exceed `limit` pixels; the check every parser makes as soon as it
/// has read a header, before walking the rest of the file.
func checkDimensions(
    _ format: ImageFormat, width: Int, height: Int, limit: Int
) throws(ImageRejection) {
    guard width > 0 else { throw .malformed(format, width == 0 ? "zero width" : "negative width \(width)") }
    guard height > 0 else { throw .malformed(format, height == 0 ? "zero height" : "negative height \(height)") }
    let (pixels, overflow) = width.multipliedReportingOverflow(by: height)
    if overflow || pixels > limit {
        throw .tooManyPixels(width: width, height: height, limit: limit)
    }
}
