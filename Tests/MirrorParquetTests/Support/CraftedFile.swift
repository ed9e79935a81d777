/// The Thrift compact protocol's writing side, for crafting footers and page headers in tests.
struct CompactWriter {
    enum Kind: UInt8 {
        case i32 = 5, i64 = 6, binary = 8, list = 9, map = 11, structure = 12
    }

    var bytes: [UInt8] = []
    private var lastIDs: [Int16] = [0]

    mutating func varint(_ value: UInt64) {
        var value = value
        while value >= 0x80 {
            bytes.append(UInt8(value & 0x7F) | 0x80)
            value >>= 7
        }
        bytes.append(UInt8(value))
    }

    mutating func zigzag(_ value: Int64) {
        varint(UInt64(bitPattern: (value << 1) ^ (value >> 63)))
    }

    mutating func field(_ id: Int16, _ kind: Kind) {
        let delta = Int(id) - Int(lastIDs[lastIDs.count - 1])
        if delta > 0, delta <= 15 {
            bytes.append(UInt8(delta) << 4 | kind.rawValue)
        } else {
            bytes.append(kind.rawValue)
            zigzag(Int64(id))
        }
        lastIDs[lastIDs.count - 1] = id
    }

    mutating func i32(_ id: Int16, _ value: Int32) {
        field(id, .i32)
        zigzag(Int64(value))
    }

    mutating func i64(_ id: Int16, _ value: Int64) {
        field(id, .i64)
        zigzag(value)
    }

    mutating func string(_ id: Int16, _ value: String) {
        field(id, .binary)
        varint(UInt64(value.utf8.count))
        bytes += Array(value.utf8)
    }

    /// A struct field; `body` writes its fields.
    mutating func structure(_ id: Int16, _ body: (inout CompactWriter) -> Void) {
        field(id, .structure)
        structBody(body)
    }

    /// A struct's fields and stop, where a struct value goes (a list element, the top level).
    mutating func structBody(_ body: (inout CompactWriter) -> Void) {
        lastIDs.append(0)
        body(&self)
        bytes.append(0)
        lastIDs.removeLast()
    }

    /// A list field's header.
    mutating func listHeader(_ id: Int16, element: Kind, count: Int) {
        field(id, .list)
        if count < 15 {
            bytes.append(UInt8(count) << 4 | element.rawValue)
        } else {
            bytes.append(0xF0 | element.rawValue)
            varint(UInt64(count))
        }
    }
}

/// A one-column Parquet file made by hand, uncompressed, one row group of one data page v1, with every part open to
/// change: what hostile and unusual files the real writers never make look like.
struct CraftedFile {
    var values: [Int32] = [1, 2, 3, 40_000, -5]
    /// Optional: definition levels (all 1) before the values.
    var isOptional = false
    var encoding: Int32 = 0
    var definitionLevelEncoding: Int32 = 3
    var codec: Int32 = 0
    var numValues: Int32?
    var uncompressedPageSize: Int32?
    var compressedPageSize: Int32?
    var chunkOffset: Int64?
    var chunkSize: Int64?
    var numChildren: Int32 = 1
    /// Written inside the FileMetaData, after its fields.
    var footerExtra: (inout CompactWriter) -> Void = { _ in }
    /// Written inside the column's SchemaElement.
    var schemaExtra: (inout CompactWriter) -> Void = { _ in }
    /// Written inside the ColumnMetaData.
    var columnExtra: (inout CompactWriter) -> Void = { _ in }
    /// Written inside the PageHeader.
    var pageHeaderExtra: (inout CompactWriter) -> Void = { _ in }
    /// Replaces the footer's length.
    var footerLength: UInt32?
    /// Compresses the page's bytes (for `codec`); its uncompressed size is still the original's.
    var compress: ([UInt8]) -> [UInt8] = { $0 }

    var bytes: [UInt8] {
        var body: [UInt8] = []
        if isOptional {
            var levels = CompactWriter()
            levels.varint(UInt64(values.count) << 1)
            levels.bytes.append(1)
            body += withUnsafeBytes(of: UInt32(levels.bytes.count).littleEndian, Array.init) + levels.bytes
        }
        for value in values { body += withUnsafeBytes(of: value.littleEndian, Array.init) }

        let stored = compress(body)
        var page = CompactWriter()
        page.structBody { header in
            header.i32(1, 0)
            header.i32(2, uncompressedPageSize ?? Int32(body.count))
            header.i32(3, compressedPageSize ?? Int32(stored.count))
            header.structure(5) { data in
                data.i32(1, numValues ?? Int32(values.count))
                data.i32(2, encoding)
                data.i32(3, definitionLevelEncoding)
                data.i32(4, 3)
            }
            pageHeaderExtra(&header)
        }
        let chunk = page.bytes + stored

        var footer = CompactWriter()
        footer.structBody { meta in
            meta.i32(1, 2)
            meta.listHeader(2, element: .structure, count: 2)
            meta.structBody { root in
                root.string(4, "schema")
                root.i32(5, numChildren)
            }
            meta.structBody { column in
                column.i32(1, 1)  // INT32
                column.i32(3, isOptional ? 1 : 0)
                column.string(4, "x")
                schemaExtra(&column)
            }
            meta.i64(3, Int64(values.count))
            meta.listHeader(4, element: .structure, count: 1)
            meta.structBody { group in
                group.listHeader(1, element: .structure, count: 1)
                group.structBody { columnChunk in
                    columnChunk.i64(2, 4)
                    columnChunk.structure(3) { column in
                        column.i32(1, 1)
                        column.listHeader(2, element: .i32, count: 1)
                        column.zigzag(0)
                        column.listHeader(3, element: .binary, count: 1)
                        column.varint(1)
                        column.bytes.append(UInt8(ascii: "x"))
                        column.i32(4, codec)
                        column.i64(5, Int64(values.count))
                        column.i64(6, Int64(chunk.count))
                        column.i64(7, chunkSize ?? Int64(chunk.count))
                        column.i64(9, chunkOffset ?? 4)
                        columnExtra(&column)
                    }
                }
                group.i64(2, Int64(chunk.count))
                group.i64(3, Int64(values.count))
            }
            footerExtra(&meta)
        }
        let length = footerLength ?? UInt32(footer.bytes.count)
        return Array("PAR1".utf8) + chunk + footer.bytes + withUnsafeBytes(of: length.littleEndian, Array.init)
            + Array("PAR1".utf8)
    }
}

/// An LZ4 block of literals only (the format's last sequence): valid, incompressible, made without a compressor.
func lz4LiteralBlock(_ bytes: [UInt8]) -> [UInt8] {
    var block: [UInt8] = [UInt8(min(bytes.count, 15)) << 4]
    if bytes.count >= 15 {
        var rest = bytes.count - 15
        while rest >= 255 {
            block.append(255)
            rest -= 255
        }
        block.append(UInt8(rest))
    }
    return block + bytes
}

func bigEndian(_ value: Int) -> [UInt8] {
    [UInt8(value >> 24 & 0xFF), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)]
}
