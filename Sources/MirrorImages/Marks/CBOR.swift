/// One CBOR data item (RFC 8949), as ``CBORDecoder`` reads it from a C2PA assertion's `cbor` box.
///
/// Tags are skipped to their content (C2PA's assertions use none that change a value read here); half, single and
/// double floats are all ``float(_:)``.
public indirect enum CBORValue: Sendable, Hashable {
    /// A map's key and value, in the order written.
    public struct Entry: Sendable, Hashable {
        public var key: CBORValue
        public var value: CBORValue

        public init(key: CBORValue, value: CBORValue) {
            self.key = key
            self.value = value
        }
    }

    /// Major type 0.
    case unsigned(UInt64)
    /// Major type 1: the value is `-1 - n`.
    case negative(UInt64)
    /// Major type 2.
    case bytes([UInt8])
    /// Major type 3, valid UTF-8.
    case text(String)
    /// Major type 4.
    case array([CBORValue])
    /// Major type 5, in the order written (duplicate keys kept: a lookup takes the first).
    case map([Entry])
    /// Simple values 20 and 21.
    case bool(Bool)
    /// Simple value 22.
    case null
    /// Simple value 23.
    case undefined
    /// Any other simple value (0–19, 32–255).
    case simple(UInt8)
    /// A half, single or double precision float.
    case float(Double)

    /// The text, when this is a text string.
    public var text: String? {
        if case .text(let text) = self { return text }
        return nil
    }

    /// The items, when this is an array.
    public var items: [CBORValue]? {
        if case .array(let items) = self { return items }
        return nil
    }

    /// The entries, when this is a map.
    public var entries: [Entry]? {
        if case .map(let entries) = self { return entries }
        return nil
    }

    /// The value of the first entry whose key is the text `key`, when this is a map.
    public subscript(key: String) -> CBORValue? {
        guard case .map(let entries) = self else { return nil }
        return entries.first { $0.key == .text(key) }?.value
    }
}

/// Why ``CBORDecoder`` refused its input; each case says where (a byte offset into the input).
public enum CBORError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The input ends inside an item.
    case truncated(at: Int)
    /// Additional information 28–30, or 31 where no indefinite length is allowed.
    case reservedAdditionalInfo(Int, at: Int)
    /// A string, array or map claims more than the bytes left could hold.
    case lengthPastEnd(UInt64, remaining: Int, at: Int)
    /// Items nest deeper than ``CBORDecoder/maxDepth``.
    case tooDeep(limit: Int)
    /// More items than ``CBORDecoder/maxItems``.
    case tooManyItems(limit: Int)
    /// A break (`FF`) outside an indefinite-length item.
    case unexpectedBreak(at: Int)
    /// An indefinite-length string's chunk that is not a definite string of the same type.
    case invalidChunk(at: Int)
    /// A text string that is not UTF-8.
    case invalidUTF8(at: Int)
    /// A two-byte simple value below 32.
    case invalidSimple(at: Int)
    /// Bytes left after the one item.
    case trailingBytes(Int)

    public var description: String {
        switch self {
        case .truncated(let offset): "CBOR cut off at byte \(offset)"
        case .reservedAdditionalInfo(let info, let offset): "CBOR reserved additional information \(info) at byte \(offset)"
        case .lengthPastEnd(let length, let remaining, let offset):
            "CBOR length \(length) at byte \(offset) with \(remaining) bytes left"
        case .tooDeep(let limit): "CBOR nested deeper than \(limit)"
        case .tooManyItems(let limit): "CBOR of more than \(limit) items"
        case .unexpectedBreak(let offset): "CBOR break outside an indefinite item at byte \(offset)"
        case .invalidChunk(let offset): "CBOR indefinite string with a bad chunk at byte \(offset)"
        case .invalidUTF8(let offset): "CBOR text that is not UTF-8 at byte \(offset)"
        case .invalidSimple(let offset): "CBOR invalid simple value at byte \(offset)"
        case .trailingBytes(let count): "\(count) bytes after the CBOR item"
        }
    }
}

/// A small, bounded CBOR (RFC 8949) decoder for C2PA assertions.
///
/// Written here because no CBOR package is available from this machine's package mirror, and MirrorImages takes no
/// dependency beyond Foundation in any case (it is fuzzed alone). It decodes definite and indefinite lengths, skips
/// tags to their content, and reads floats; it checks every length against the bytes left before it allocates, and
/// refuses, rather than traps on, anything else. Its bounds:
/// - ``maxDepth`` (32): C2PA's deepest assertion (an action's parameters' ingredients) nests under 10; the bound keeps
///   the recursion's stack small whatever the input.
/// - ``maxItems`` (100,000 per decode): an actions list of a thousand edits is a few thousand items; a hostile
///   assertion of single-byte items could otherwise build millions of values (each some 30 bytes) from a
///   16-MiB store.
/// - strings and counts: never more than the bytes left (an array's items each take a byte at least, a map's
///   entries two), so an item claiming 2^32 elements fails before any allocation.
public struct CBORDecoder {
    /// The deepest nesting of arrays, maps and tags accepted.
    public static let maxDepth = 32
    /// The most data items one decode reads.
    public static let maxItems = 100_000

    private let bytes: ByteView
    private var offset = 0
    private var itemCount = 0

    private init(_ bytes: ByteView) {
        self.bytes = bytes
    }

    /// Decodes exactly one data item filling `buffer`.
    public static func decode(_ buffer: UnsafeRawBufferPointer) throws(CBORError) -> CBORValue {
        var decoder = CBORDecoder(ByteView(buffer))
        let value = try decoder.item(depth: 0)
        let left = decoder.bytes.remaining(from: decoder.offset)
        guard left == 0 else { throw .trailingBytes(left) }
        return value
    }

    // MARK: - Items

    private mutating func item(depth: Int) throws(CBORError) -> CBORValue {
        guard depth <= Self.maxDepth else { throw .tooDeep(limit: Self.maxDepth) }
        itemCount += 1
        guard itemCount <= Self.maxItems else { throw .tooManyItems(limit: Self.maxItems) }
        let start = offset
        guard let initial = bytes.u8(offset) else { throw .truncated(at: offset) }
        offset += 1
        let major = initial >> 5
        let info = Int(initial & 0x1F)

        if info == 31 {
            switch major {
            case 2, 3: return try indefiniteString(major: major, at: start)
            case 4: return try indefiniteArray(depth: depth)
            case 5: return try indefiniteMap(depth: depth)
            case 7: throw .unexpectedBreak(at: start)
            default: throw .reservedAdditionalInfo(info, at: start)
            }
        }
        if major == 7 {
            return try simpleOrFloat(info: info, at: start)
        }
        let argument = try self.argument(info: info, at: start)
        switch major {
        case 0:
            return .unsigned(argument)
        case 1:
            return .negative(argument)
        case 2:
            return .bytes([UInt8](try definiteBytes(argument, at: start)))
        case 3:
            return .text(try text(try definiteBytes(argument, at: start), at: start))
        case 4:
            // Each item takes at least one byte.
            let count = try boundedCount(argument, perItem: 1, at: start)
            var items: [CBORValue] = []
            items.reserveCapacity(min(count, Self.maxItems - itemCount))
            for _ in 0..<count {
                items.append(try item(depth: depth + 1))
            }
            return .array(items)
        case 5:
            // Each entry takes at least two bytes.
            let count = try boundedCount(argument, perItem: 2, at: start)
            var entries: [CBORValue.Entry] = []
            entries.reserveCapacity(min(count, Self.maxItems - itemCount))
            for _ in 0..<count {
                let key = try item(depth: depth + 1)
                let value = try item(depth: depth + 1)
                entries.append(CBORValue.Entry(key: key, value: value))
            }
            return .map(entries)
        default:  // 6: a tag; its number is dropped and its content read in its place
            return try item(depth: depth + 1)
        }
    }

    /// The argument of a head whose additional information is `info` (0–27).
    private mutating func argument(info: Int, at start: Int) throws(CBORError) -> UInt64 {
        switch info {
        case 0..<24:
            return UInt64(info)
        case 24:
            guard let value = bytes.u8(offset) else { throw .truncated(at: offset) }
            offset += 1
            return UInt64(value)
        case 25:
            guard let value = bytes.u16be(offset) else { throw .truncated(at: offset) }
            offset += 2
            return UInt64(value)
        case 26:
            guard let value = bytes.u32be(offset) else { throw .truncated(at: offset) }
            offset += 4
            return UInt64(value)
        case 27:
            guard let value = bytes.u64be(offset) else { throw .truncated(at: offset) }
            offset += 8
            return value
        default:
            throw .reservedAdditionalInfo(info, at: start)
        }
    }

    /// `count` as an Int, once the bytes left could hold that many items of `perItem` bytes.
    private func boundedCount(_ count: UInt64, perItem: Int, at start: Int) throws(CBORError) -> Int {
        let remaining = bytes.remaining(from: offset)
        guard count <= UInt64(remaining / perItem) else {
            throw .lengthPastEnd(count, remaining: remaining, at: start)
        }
        return Int(count)
    }

    /// The next `length` bytes, once they are there (a view into the input, valid during the decode).
    private mutating func definiteBytes(_ length: UInt64, at start: Int) throws(CBORError) -> UnsafeRawBufferPointer {
        let remaining = bytes.remaining(from: offset)
        guard length <= UInt64(remaining) else { throw .lengthPastEnd(length, remaining: remaining, at: start) }
        let count = Int(length)
        let chunk = UnsafeRawBufferPointer(rebasing: bytes.buffer[offset..<offset + count])
        offset += count
        return chunk
    }

    private func text(_ utf8: some Collection<UInt8>, at start: Int) throws(CBORError) -> String {
        guard let text = String(validating: utf8, as: UTF8.self) else { throw .invalidUTF8(at: start) }
        return text
    }

    // MARK: - Indefinite lengths

    /// Whether the next byte is a break, consuming it if so.
    private mutating func takeBreak() throws(CBORError) -> Bool {
        guard let next = bytes.u8(offset) else { throw .truncated(at: offset) }
        if next == 0xFF {
            offset += 1
            return true
        }
        return false
    }

    private mutating func indefiniteString(major: UInt8, at start: Int) throws(CBORError) -> CBORValue {
        var joined: [UInt8] = []
        while try !takeBreak() {
            let chunkStart = offset
            itemCount += 1
            guard itemCount <= Self.maxItems else { throw .tooManyItems(limit: Self.maxItems) }
            guard let initial = bytes.u8(offset), initial >> 5 == major, initial & 0x1F != 31 else {
                throw .invalidChunk(at: chunkStart)
            }
            offset += 1
            let length = try argument(info: Int(initial & 0x1F), at: chunkStart)
            joined += try definiteBytes(length, at: chunkStart)
        }
        return major == 2 ? .bytes(joined) : .text(try text(joined, at: start))
    }

    private mutating func indefiniteArray(depth: Int) throws(CBORError) -> CBORValue {
        var items: [CBORValue] = []
        while try !takeBreak() {
            items.append(try item(depth: depth + 1))
        }
        return .array(items)
    }

    private mutating func indefiniteMap(depth: Int) throws(CBORError) -> CBORValue {
        var entries: [CBORValue.Entry] = []
        while try !takeBreak() {
            let key = try item(depth: depth + 1)
            let value = try item(depth: depth + 1)
            entries.append(CBORValue.Entry(key: key, value: value))
        }
        return .map(entries)
    }

    // MARK: - Major type 7

    private mutating func simpleOrFloat(info: Int, at start: Int) throws(CBORError) -> CBORValue {
        switch info {
        case 20: return .bool(false)
        case 21: return .bool(true)
        case 22: return .null
        case 23: return .undefined
        case 0..<20: return .simple(UInt8(info))
        case 24:
            guard let value = bytes.u8(offset) else { throw .truncated(at: offset) }
            offset += 1
            guard value >= 32 else { throw .invalidSimple(at: start) }
            return .simple(value)
        case 25:
            guard let bits = bytes.u16be(offset) else { throw .truncated(at: offset) }
            offset += 2
            return .float(Self.halfFloat(bits))
        case 26:
            guard let bits = bytes.u32be(offset) else { throw .truncated(at: offset) }
            offset += 4
            return .float(Double(Float(bitPattern: bits)))
        case 27:
            guard let bits = bytes.u64be(offset) else { throw .truncated(at: offset) }
            offset += 8
            return .float(Double(bitPattern: bits))
        default:
            throw .reservedAdditionalInfo(info, at: start)
        }
    }

    /// An IEEE 754 half-precision float (RFC 8949, appendix D).
    static func halfFloat(_ bits: UInt16) -> Double {
        let exponent = Int(bits >> 10 & 0x1F)
        let mantissa = Double(bits & 0x3FF)
        let magnitude: Double
        switch exponent {
        case 0: magnitude = Double(sign: .plus, exponent: -24, significand: mantissa)
        case 31: magnitude = mantissa == 0 ? .infinity : .nan
        default: magnitude = Double(sign: .plus, exponent: exponent - 25, significand: mantissa + 1024)
        }
        return bits & 0x8000 != 0 ? -magnitude : magnitude
    }
}
