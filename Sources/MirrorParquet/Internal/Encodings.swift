/// The encodings of Encodings.md, decoding from a `ByteCursor` into typed arrays. Every count is bounded by the caller
/// (a page's value count, itself under `maxValuesPerPage`) before anything is reserved, every byte read is checked, and
/// every decoded size is checked against what is left.

/// parquet.thrift's Encoding values.
enum Encoding {
    static let plain: Int32 = 0, plainDictionary: Int32 = 2, rle: Int32 = 3, bitPacked: Int32 = 4,
        deltaBinaryPacked: Int32 = 5, deltaLengthByteArray: Int32 = 6, deltaByteArray: Int32 = 7,
        rleDictionary: Int32 = 8, byteStreamSplit: Int32 = 9

    static func name(_ encoding: Int32) -> String {
        switch encoding {
        case plain: "PLAIN"
        case plainDictionary: "PLAIN_DICTIONARY"
        case rle: "RLE"
        case bitPacked: "BIT_PACKED"
        case deltaBinaryPacked: "DELTA_BINARY_PACKED"
        case deltaLengthByteArray: "DELTA_LENGTH_BYTE_ARRAY"
        case deltaByteArray: "DELTA_BYTE_ARRAY"
        case rleDictionary: "RLE_DICTIONARY"
        case byteStreamSplit: "BYTE_STREAM_SPLIT"
        case 10: "ALP"
        default: "\(encoding)"
        }
    }
}

/// The values of one page (or a dictionary), in the physical type's own form; converted to `ParquetValue` one at a time.
enum ValueStore: Sendable {
    case booleans([Bool])
    case int32s([Int32])
    case int64s([Int64])
    case floats([Float])
    case doubles([Double])
    /// INT96 (12 bytes) and FIXED_LEN_BYTE_ARRAY values, back to back.
    case fixed(width: Int, bytes: [UInt8])
    /// BYTE_ARRAY values: the ranges of `bytes` they occupy.
    case variable(bytes: [UInt8], ranges: [Range<Int>])
    /// Indices into a dictionary page's values, each checked below its count.
    indirect case dictionary(indices: [UInt32], values: ValueStore)

    var count: Int {
        switch self {
        case .booleans(let values): values.count
        case .int32s(let values): values.count
        case .int64s(let values): values.count
        case .floats(let values): values.count
        case .doubles(let values): values.count
        case .fixed(let width, let bytes): width > 0 ? bytes.count / width : 0
        case .variable(_, let ranges): ranges.count
        case .dictionary(let indices, _): indices.count
        }
    }
}

// MARK: - Bit packing

/// Unpacks `count` values of `bitWidth` bits (0 to 64), packed from the least significant bit of each byte, starting at
/// `start`; the caller has checked that `(count * bitWidth + 7) / 8` bytes are there.
@inline(__always)
func unpackBits(_ bytes: [UInt8], start: Int, count: Int, bitWidth: Int, _ body: (UInt64) -> Void) {
    guard bitWidth > 0 else {
        for _ in 0..<count { body(0) }
        return
    }
    var bit = start * 8
    for _ in 0..<count {
        var value: UInt64 = 0
        var gathered = 0
        while gathered < bitWidth {
            let byte = UInt64(bytes[bit >> 3])
            let offset = bit & 7
            let take = min(8 - offset, bitWidth - gathered)
            value |= ((byte >> UInt64(offset)) & ((1 << UInt64(take)) - 1)) << UInt64(gathered)
            gathered += take
            bit += take
        }
        body(value)
    }
}

/// The number of bits `maximum` needs: 0 for 0.
func bitWidth(of maximum: Int) -> Int {
    maximum <= 0 ? 0 : Int.bitWidth - maximum.leadingZeroBitCount
}

/// The bytes `count` values of `bitWidth` bits take, or nil past Int's range.
func packedByteCount(_ count: Int, bitWidth: Int) -> Int? {
    let (bits, overflow) = count.multipliedReportingOverflow(by: bitWidth)
    return overflow ? nil : bits / 8 + (bits % 8 == 0 ? 0 : 1)
}

// MARK: - RLE / bit-packing hybrid

/// Decodes `count` values of the RLE/bit-packing hybrid of `bitWidth` bits, each at most `maximum`, appending them
/// to `output`. The cursor ends after the last run read; a bit-packed run cut short after the values needed is accepted.
func decodeHybrid<T: FixedWidthInteger>(
    _ cursor: inout ByteCursor, bitWidth: Int, count: Int, maximum: UInt64, into output: inout [T], what: String
) throws(ParquetError) {
    guard (0...64).contains(bitWidth) else { throw .corrupt("\(what) has bit width \(bitWidth)") }
    let target = output.count + count
    output.reserveCapacity(target)
    let valueBytes = (bitWidth + 7) / 8
    while output.count < target {
        let header = try cursor.readVarint(for: "\(what)'s run header")
        let needed = target - output.count
        if header & 1 == 0 {
            let run = header >> 1
            let value = try cursor.readLittleEndian(valueBytes, for: "\(what)'s repeated value")
            guard value <= maximum else { throw .corrupt("\(what) holds \(value), above \(maximum)") }
            let repeats = run >= UInt64(needed) ? needed : Int(run)
            let element = T(truncatingIfNeeded: value)
            for _ in 0..<repeats { output.append(element) }
        } else {
            // A run of groups × 8 values in groups × bitWidth bytes. When the values needed end inside it, only their
            // bytes are read (a writer may cut the last run short); otherwise the run is whole.
            let groups = header >> 1
            let take = groups >= UInt64((needed + 7) / 8) ? needed : Int(groups) * 8
            guard let bytes = packedByteCount(take, bitWidth: bitWidth) else {
                throw .corrupt("\(what) has a bit-packed run past any size")
            }
            try cursor.require(bytes, for: "\(what)'s bit-packed run")
            var invalid: UInt64?
            unpackBits(cursor.bytes, start: cursor.position, count: take, bitWidth: bitWidth) { value in
                if value > maximum { invalid = value }
                output.append(T(truncatingIfNeeded: value))
            }
            if let invalid { throw .corrupt("\(what) holds \(invalid), above \(maximum)") }
            try cursor.skip(bytes, for: "\(what)'s bit-packed run")
        }
    }
}

// MARK: - Delta encodings

/// DELTA_BINARY_PACKED: exactly `count` values (the header must say so), with `maximumBitWidth` 32 for INT32 and 64 for
/// INT64. Arithmetic wraps, as the specification asks; INT32 values are the low 32 bits.
func decodeDeltaBinaryPacked(
    _ cursor: inout ByteCursor, count: Int, maximumBitWidth: Int, what: String
) throws(ParquetError) -> [Int64] {
    let blockSize = try cursor.readVarint(for: "\(what)'s block size")
    let miniblockCount = try cursor.readVarint(for: "\(what)'s miniblock count")
    let total = try cursor.readVarint(for: "\(what)'s value count")
    let first = try cursor.readZigzag(for: "\(what)'s first value")
    // Block sizes are multiples of 128 (Arrow and parquet-mr write 128); 1 << 20 bounds the miniblock a hostile header
    // can describe, far above any writer's.
    guard blockSize > 0, blockSize % 128 == 0, blockSize <= 1 << 20, miniblockCount > 0, blockSize % miniblockCount == 0,
          (blockSize / miniblockCount) % 32 == 0 else {
        throw .corrupt("\(what) has block size \(blockSize) in \(miniblockCount) miniblocks")
    }
    guard total == UInt64(count) else { throw .corrupt("\(what) holds \(total) values where the page has \(count)") }
    var values: [Int64] = []
    guard count > 0 else { return values }
    values.reserveCapacity(count)
    values.append(first)
    var last = UInt64(bitPattern: first)
    let perMiniblock = Int(blockSize / miniblockCount)
    let miniblocks = Int(miniblockCount)
    while values.count < count {
        let minDelta = UInt64(bitPattern: try cursor.readZigzag(for: "\(what)'s minimum delta"))
        let widths = try cursor.take(miniblocks, for: "\(what)'s miniblock bit widths")
        for index in widths {
            guard values.count < count else { break }
            let width = Int(cursor.bytes[index])
            guard width <= maximumBitWidth else {
                throw .corrupt("\(what) has a miniblock of \(width)-bit deltas, over \(maximumBitWidth)")
            }
            let wanted = min(perMiniblock, count - values.count)
            let needed = (wanted * width + 7) / 8
            try cursor.require(needed, for: "\(what)'s miniblock")
            unpackBits(cursor.bytes, start: cursor.position, count: wanted, bitWidth: width) { delta in
                last = last &+ minDelta &+ delta
                values.append(Int64(bitPattern: last))
            }
            // Miniblocks are padded to their full size; the last one's padding may be missing at the end of a page.
            try cursor.skip(min(perMiniblock * width / 8, cursor.remaining), for: "\(what)'s miniblock")
        }
    }
    return values
}

/// DELTA_LENGTH_BYTE_ARRAY: `count` lengths, then the bytes; returns the values' ranges in the cursor's bytes.
func decodeDeltaLengthByteArray(
    _ cursor: inout ByteCursor, count: Int, what: String
) throws(ParquetError) -> [Range<Int>] {
    let lengths = try decodeDeltaBinaryPacked(&cursor, count: count, maximumBitWidth: 32, what: "\(what)'s lengths")
    var ranges: [Range<Int>] = []
    ranges.reserveCapacity(count)
    for length in lengths {
        guard length >= 0, length <= Int32.max else { throw .corrupt("\(what) has a value of length \(length)") }
        ranges.append(try cursor.take(Int(length), for: "\(what)'s value"))
    }
    return ranges
}

/// DELTA_BYTE_ARRAY: prefix lengths, then suffixes as DELTA_LENGTH_BYTE_ARRAY; each value the previous one's prefix and
/// its suffix. The values are built in a new buffer of at most `maximumBytes`.
func decodeDeltaByteArray(
    _ cursor: inout ByteCursor, count: Int, maximumBytes: Int, what: String
) throws(ParquetError) -> (bytes: [UInt8], ranges: [Range<Int>]) {
    let prefixes = try decodeDeltaBinaryPacked(&cursor, count: count, maximumBitWidth: 32, what: "\(what)'s prefix lengths")
    let suffixes = try decodeDeltaLengthByteArray(&cursor, count: count, what: "\(what)'s suffixes")
    var bytes: [UInt8] = []
    var ranges: [Range<Int>] = []
    ranges.reserveCapacity(count)
    var previous = 0..<0
    for (prefix, suffix) in zip(prefixes, suffixes) {
        guard prefix >= 0, prefix <= Int64(previous.count) else {
            throw .corrupt("\(what) has a prefix of \(prefix) bytes after a value of \(previous.count)")
        }
        let length = Int(prefix) + suffix.count
        guard length <= maximumBytes - bytes.count else {
            throw .overLimit("\(what) decodes to more than \(maximumBytes) bytes (maxPageSize)")
        }
        let start = bytes.count
        // Index by index: appending a slice of `bytes` to itself would copy the whole buffer every time.
        for index in previous.lowerBound..<(previous.lowerBound + Int(prefix)) { bytes.append(bytes[index]) }
        bytes.append(contentsOf: cursor.bytes[suffix])
        previous = start..<bytes.count
        ranges.append(previous)
    }
    return (bytes, ranges)
}

// MARK: - Plain and byte stream split

/// PLAIN values of `physical` (FIXED_LEN_BYTE_ARRAY of `width` bytes).
func decodePlain(
    _ cursor: inout ByteCursor, physical: PhysicalType, width: Int, count: Int, what: String
) throws(ParquetError) -> ValueStore {
    func fixedBytes(_ size: Int) throws(ParquetError) -> Range<Int> {
        let (total, overflow) = count.multipliedReportingOverflow(by: size)
        guard !overflow else { throw .corrupt("\(what): \(count) values of \(size) bytes") }
        return try cursor.take(total, for: "\(count) \(physical.name) values")
    }
    switch physical {
    case .boolean:
        let range = try cursor.take((count + 7) / 8, for: "\(count) BOOLEAN values")
        var values: [Bool] = []
        values.reserveCapacity(count)
        unpackBits(cursor.bytes, start: range.lowerBound, count: count, bitWidth: 1) { values.append($0 != 0) }
        return .booleans(values)
    case .int32:
        let range = try fixedBytes(4)
        return .int32s(littleEndianWords(cursor.bytes, range, width: 4).map { Int32(truncatingIfNeeded: $0) })
    case .int64:
        let range = try fixedBytes(8)
        return .int64s(littleEndianWords(cursor.bytes, range, width: 8).map { Int64(bitPattern: $0) })
    case .float:
        let range = try fixedBytes(4)
        return .floats(littleEndianWords(cursor.bytes, range, width: 4).map { Float(bitPattern: UInt32(truncatingIfNeeded: $0)) })
    case .double:
        let range = try fixedBytes(8)
        return .doubles(littleEndianWords(cursor.bytes, range, width: 8).map { Double(bitPattern: $0) })
    case .int96:
        return .fixed(width: 12, bytes: Array(cursor.bytes[try fixedBytes(12)]))
    case .fixedLenByteArray:
        return .fixed(width: width, bytes: Array(cursor.bytes[try fixedBytes(width)]))
    case .byteArray:
        var ranges: [Range<Int>] = []
        ranges.reserveCapacity(min(count, cursor.remaining / 4))
        for _ in 0..<count {
            let length = try cursor.readUInt32(for: "a BYTE_ARRAY length")
            guard length <= UInt32(cursor.remaining) else { throw cursor.ranOut(Int(length), "a BYTE_ARRAY value") }
            ranges.append(try cursor.take(Int(length), for: "a BYTE_ARRAY value"))
        }
        return .variable(bytes: cursor.bytes, ranges: ranges)
    }
}

/// The little-endian words of `width` bytes in `range` (whose length is a multiple of `width`).
private func littleEndianWords(_ bytes: [UInt8], _ range: Range<Int>, width: Int) -> [UInt64] {
    var words: [UInt64] = []
    words.reserveCapacity(range.count / width)
    var index = range.lowerBound
    while index + width <= range.upperBound {
        var word: UInt64 = 0
        for byte in 0..<width { word |= UInt64(bytes[index + byte]) << UInt64(8 * byte) }
        words.append(word)
        index += width
    }
    return words
}

/// BYTE_STREAM_SPLIT: `count` values of `size` bytes scattered into `size` streams; gathers them back and decodes the
/// result as PLAIN.
func decodeByteStreamSplit(
    _ cursor: inout ByteCursor, physical: PhysicalType, width: Int, count: Int, what: String
) throws(ParquetError) -> ValueStore {
    let size: Int
    switch physical {
    case .int32, .float: size = 4
    case .int64, .double: size = 8
    case .fixedLenByteArray: size = width
    default: throw .corrupt("\(what) uses BYTE_STREAM_SPLIT on \(physical.name)")
    }
    let (total, overflow) = count.multipliedReportingOverflow(by: size)
    guard !overflow else { throw .corrupt("\(what): \(count) values of \(size) bytes") }
    let range = try cursor.take(total, for: "\(count) split values")
    var gathered = [UInt8](repeating: 0, count: total)
    for stream in 0..<size {
        let base = range.lowerBound + stream * count
        for value in 0..<count { gathered[value * size + stream] = cursor.bytes[base + value] }
    }
    var plain = ByteCursor(gathered, what: what)
    return try decodePlain(&plain, physical: physical, width: width, count: count, what: what)
}
