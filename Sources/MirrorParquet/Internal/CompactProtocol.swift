/// The Thrift compact protocol, as far as Parquet's footer and page headers use it: structs read field by field,
/// unknown fields (nested structs, lists, sets and maps among them) skipped by their wire type, nesting bounded.
///
/// A struct is read as
/// ```swift
/// try reader.beginStruct()
/// while let field = try reader.nextField() {
///     switch field.id {
///     case 1: version = try reader.readI32(field)
///     default: try reader.skip(field)
///     }
/// }
/// ```
/// `nextField` returns nil at the struct's stop field and closes it. A known field with another wire type than the
/// format's is an error, not a guess.
struct CompactReader {
    enum WireType: UInt8 {
        case boolTrue = 1, boolFalse = 2, i8 = 3, i16 = 4, i32 = 5, i64 = 6, double = 7, binary = 8, list = 9, set = 10,
            map = 11, structure = 12, uuid = 13
    }

    struct Field {
        let id: Int16
        let type: WireType
    }

    /// Structs (and containers, when skipped) nested deeper than this are refused. Parquet's deepest is 5 (FileMetaData,
    /// RowGroup, ColumnChunk, ColumnMetaData, Statistics; a LogicalType's TimeUnit); 64 leaves room for what future
    /// versions add and keeps a hostile footer's recursion far from the stack's end.
    static let maximumDepth = 64

    var cursor: ByteCursor
    /// The last field id of each struct being read, innermost last.
    private var lastFieldIDs: [Int16] = []

    init(_ cursor: ByteCursor) {
        self.cursor = cursor
    }

    private func corrupt(_ message: String) -> ParquetError {
        .corrupt("\(cursor.what): \(message) at offset \(cursor.position)")
    }

    // MARK: - Structs

    mutating func beginStruct() throws(ParquetError) {
        guard lastFieldIDs.count < Self.maximumDepth else { throw corrupt("structs nested over \(Self.maximumDepth) deep") }
        lastFieldIDs.append(0)
    }

    mutating func nextField() throws(ParquetError) -> Field? {
        let header = try cursor.readByte(for: "a field header")
        if header == 0 {
            _ = lastFieldIDs.popLast()
            return nil
        }
        guard let type = WireType(rawValue: header & 0x0F) else { throw corrupt("unknown field type \(header & 0x0F)") }
        let delta = header >> 4
        let id: Int16
        if delta == 0 {
            let wide = try cursor.readZigzag(for: "a field id")
            guard let narrow = Int16(exactly: wide) else { throw corrupt("field id \(wide) out of range") }
            id = narrow
        } else {
            let (sum, overflow) = (lastFieldIDs.last ?? 0).addingReportingOverflow(Int16(delta))
            guard !overflow else { throw corrupt("field id past 32767") }
            id = sum
        }
        if !lastFieldIDs.isEmpty { lastFieldIDs[lastFieldIDs.count - 1] = id }
        return Field(id: id, type: type)
    }

    /// Fails unless `field` has the wire type the format gives it.
    private func expect(_ field: Field, _ types: WireType..., named name: String) throws(ParquetError) {
        guard types.contains(field.type) else {
            throw corrupt("field \(field.id) (\(name)) has wire type \(field.type.rawValue), not \(types[0].rawValue)")
        }
    }

    // MARK: - Values

    mutating func readBool(_ field: Field) throws(ParquetError) -> Bool {
        try expect(field, .boolTrue, .boolFalse, named: "a bool")
        return field.type == .boolTrue
    }

    mutating func readI8(_ field: Field) throws(ParquetError) -> Int8 {
        try expect(field, .i8, named: "an i8")
        return Int8(bitPattern: try cursor.readByte(for: "an i8"))
    }

    mutating func readI32(_ field: Field) throws(ParquetError) -> Int32 {
        try expect(field, .i32, .i16, .i8, named: "an i32")
        if field.type == .i8 { return Int32(Int8(bitPattern: try cursor.readByte(for: "an i8"))) }
        let wide = try cursor.readZigzag(for: "an i32")
        guard let value = Int32(exactly: wide) else { throw corrupt("i32 field \(field.id) holds \(wide)") }
        return value
    }

    mutating func readI64(_ field: Field) throws(ParquetError) -> Int64 {
        try expect(field, .i64, .i32, .i16, named: "an i64")
        return try cursor.readZigzag(for: "an i64")
    }

    mutating func readBinary(_ field: Field) throws(ParquetError) -> [UInt8] {
        try expect(field, .binary, named: "a binary")
        return try readBinaryValue()
    }

    mutating func readString(_ field: Field) throws(ParquetError) -> String {
        String(decoding: try readBinary(field), as: UTF8.self)
    }

    private mutating func readBinaryValue() throws(ParquetError) -> [UInt8] {
        let length = try cursor.readVarint(for: "a binary's length")
        guard length <= UInt64(cursor.remaining) else { throw cursor.ranOut(Int(clamping: length), "a binary") }
        return try cursor.readBytes(Int(length), for: "a binary")
    }

    /// A list's (or set's) element type and size, the size bounded by the bytes left (every element takes one at least).
    mutating func readListHeader(_ field: Field) throws(ParquetError) -> (elementType: UInt8, count: Int) {
        try expect(field, .list, .set, named: "a list")
        return try readListHeaderValue()
    }

    private mutating func readListHeaderValue() throws(ParquetError) -> (elementType: UInt8, count: Int) {
        let header = try cursor.readByte(for: "a list header")
        var count = UInt64(header >> 4)
        if count == 15 { count = try cursor.readVarint(for: "a list's size") }
        guard count <= UInt64(cursor.remaining) else {
            throw corrupt("a list of \(count) elements in \(cursor.remaining) bytes")
        }
        return (header & 0x0F, Int(count))
    }

    /// Reads a list of structs, calling `element` with the reader positioned at each struct's first field header (the
    /// struct already begun).
    mutating func readStructList<Element>(
        _ field: Field, named name: String, _ element: (inout CompactReader) throws(ParquetError) -> Element
    ) throws(ParquetError) -> [Element] {
        let (type, count) = try readListHeader(field)
        guard count == 0 || type == WireType.structure.rawValue else {
            throw corrupt("\(name) is a list of type \(type), not of structs")
        }
        var elements: [Element] = []
        elements.reserveCapacity(count)
        for _ in 0..<count {
            try beginStruct()
            elements.append(try element(&self))
        }
        return elements
    }

    mutating func readI32List(_ field: Field, named name: String) throws(ParquetError) -> [Int32] {
        let (type, count) = try readListHeader(field)
        guard count == 0 || type == WireType.i32.rawValue else { throw corrupt("\(name) is a list of type \(type)") }
        var values: [Int32] = []
        values.reserveCapacity(count)
        for _ in 0..<count {
            let wide = try cursor.readZigzag(for: name)
            guard let value = Int32(exactly: wide) else { throw corrupt("\(name) holds \(wide)") }
            values.append(value)
        }
        return values
    }

    mutating func readStringList(_ field: Field, named name: String) throws(ParquetError) -> [String] {
        let (type, count) = try readListHeader(field)
        guard count == 0 || type == WireType.binary.rawValue else { throw corrupt("\(name) is a list of type \(type)") }
        var values: [String] = []
        values.reserveCapacity(count)
        for _ in 0..<count { values.append(String(decoding: try readBinaryValue(), as: UTF8.self)) }
        return values
    }

    // MARK: - Skipping

    /// Skips the value of a field this reader does not use.
    mutating func skip(_ field: Field) throws(ParquetError) {
        try skipValue(field.type.rawValue, depth: lastFieldIDs.count, inContainer: false)
    }

    private mutating func skipValue(_ type: UInt8, depth: Int, inContainer: Bool) throws(ParquetError) {
        guard depth < Self.maximumDepth else { throw corrupt("values nested over \(Self.maximumDepth) deep") }
        guard let wire = WireType(rawValue: type) else { throw corrupt("unknown value type \(type)") }
        switch wire {
        case .boolTrue, .boolFalse:
            // A field's bool is its header; a container's is one byte.
            if inContainer { try cursor.skip(1, for: "a bool") }
        case .i8: try cursor.skip(1, for: "an i8")
        case .i16, .i32, .i64: _ = try cursor.readVarint(for: "an integer")
        case .double: try cursor.skip(8, for: "a double")
        case .uuid: try cursor.skip(16, for: "a uuid")
        case .binary:
            let length = try cursor.readVarint(for: "a binary's length")
            guard length <= UInt64(cursor.remaining) else { throw cursor.ranOut(Int(clamping: length), "a binary") }
            try cursor.skip(Int(length), for: "a binary")
        case .list, .set:
            let (elementType, count) = try readListHeaderValue()
            for _ in 0..<count { try skipValue(elementType, depth: depth + 1, inContainer: true) }
        case .map:
            let count = try cursor.readVarint(for: "a map's size")
            guard count > 0 else { return }
            guard count <= UInt64(cursor.remaining / 2) else { throw corrupt("a map of \(count) entries in \(cursor.remaining) bytes") }
            let types = try cursor.readByte(for: "a map's types")
            for _ in 0..<Int(count) {
                try skipValue(types >> 4, depth: depth + 1, inContainer: true)
                try skipValue(types & 0x0F, depth: depth + 1, inContainer: true)
            }
        case .structure:
            try beginStruct()
            while let field = try nextField() {
                try skipValue(field.type.rawValue, depth: depth + 1, inContainer: false)
            }
        }
    }
}
