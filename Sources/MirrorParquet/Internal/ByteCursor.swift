/// A bounds-checked reading position in a byte array: every read checks what is left first and throws
/// `ParquetError.corrupt` naming `what` it was reading when the bytes run out, so that no input can index past the end.
///
/// The cursor reads `bytes[start..<end]`; `position` only moves forward, and never past `end`.
struct ByteCursor {
    let bytes: [UInt8]
    private(set) var position: Int
    let end: Int
    /// What the bytes are, for messages ("the footer", "the page header").
    let what: String

    init(_ bytes: [UInt8], what: String) {
        self.bytes = bytes
        self.position = 0
        self.end = bytes.count
        self.what = what
    }

    /// A cursor over `count` bytes from `start` of `bytes`; the caller has checked the range.
    init(_ bytes: [UInt8], start: Int, count: Int, what: String) {
        self.bytes = bytes
        self.position = max(0, min(start, bytes.count))
        self.end = max(self.position, min(bytes.count, start &+ count))
        self.what = what
    }

    var remaining: Int { end - position }
    var isAtEnd: Bool { position >= end }

    func ranOut(_ needed: Int, _ reading: String) -> ParquetError {
        .corrupt("\(what) ends early: \(reading) needs \(needed) bytes at offset \(position), \(remaining) left")
    }

    /// Checks that `count` bytes are left, without moving.
    func require(_ count: Int, for reading: String) throws(ParquetError) {
        guard count >= 0, count <= remaining else { throw ranOut(count, reading) }
    }

    mutating func readByte(for reading: String = "a byte") throws(ParquetError) -> UInt8 {
        guard position < end else { throw ranOut(1, reading) }
        defer { position += 1 }
        return bytes[position]
    }

    /// The next `count` bytes, as the range of `bytes` they occupy.
    mutating func take(_ count: Int, for reading: String) throws(ParquetError) -> Range<Int> {
        try require(count, for: reading)
        defer { position += count }
        return position..<(position + count)
    }

    mutating func skip(_ count: Int, for reading: String) throws(ParquetError) {
        try require(count, for: reading)
        position += count
    }

    /// A little-endian unsigned integer of `width` bytes (1 to 8).
    mutating func readLittleEndian(_ width: Int, for reading: String) throws(ParquetError) -> UInt64 {
        let range = try take(width, for: reading)
        var value: UInt64 = 0
        for (shift, index) in range.enumerated() where shift < 8 {
            value |= UInt64(bytes[index]) << (8 * UInt64(shift))
        }
        return value
    }

    mutating func readUInt32(for reading: String) throws(ParquetError) -> UInt32 {
        UInt32(truncatingIfNeeded: try readLittleEndian(4, for: reading))
    }

    /// An unsigned LEB128 of at most 10 bytes whose value fits 64 bits.
    mutating func readVarint(for reading: String) throws(ParquetError) -> UInt64 {
        var value: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            let byte = try readByte(for: reading)
            if shift == 63, byte > 1 {
                throw .corrupt("\(what): \(reading) is a varint over 64 bits at offset \(position - 1)")
            }
            value |= UInt64(byte & 0x7F) << shift
            if byte & 0x80 == 0 { return value }
            shift += 7
            if shift > 63 { throw .corrupt("\(what): \(reading) is a varint over 10 bytes at offset \(position)") }
        }
    }

    /// A zigzag-encoded signed LEB128 (Thrift's i16, i32 and i64; the delta encoding's signed values).
    mutating func readZigzag(for reading: String) throws(ParquetError) -> Int64 {
        let raw = try readVarint(for: reading)
        return Int64(bitPattern: (raw >> 1) ^ (0 &- (raw & 1)))
    }

    /// A copy of the next `count` bytes.
    mutating func readBytes(_ count: Int, for reading: String) throws(ParquetError) -> [UInt8] {
        Array(bytes[try take(count, for: reading)])
    }
}
