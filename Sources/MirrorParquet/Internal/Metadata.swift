/// The parts of parquet.thrift's structs this reader uses, decoded from the compact protocol. Fields it does not use
/// (statistics, key-value metadata, sorting columns, page encoding stats, bloom filter and page index offsets, size and
/// geospatial statistics) are skipped; a required field that is missing is `ParquetError.corrupt`.

enum PhysicalType: Int32, Sendable {
    case boolean = 0, int32 = 1, int64 = 2, int96 = 3, float = 4, double = 5, byteArray = 6, fixedLenByteArray = 7

    var name: String {
        switch self {
        case .boolean: "BOOLEAN"
        case .int32: "INT32"
        case .int64: "INT64"
        case .int96: "INT96"
        case .float: "FLOAT"
        case .double: "DOUBLE"
        case .byteArray: "BYTE_ARRAY"
        case .fixedLenByteArray: "FIXED_LEN_BYTE_ARRAY"
        }
    }
}

enum Repetition: Int32, Sendable {
    case required = 0, optional = 1, repeated = 2
}

/// parquet.thrift's ConvertedType values this reader interprets.
enum ConvertedType {
    static let utf8: Int32 = 0, map: Int32 = 1, mapKeyValue: Int32 = 2, list: Int32 = 3, enumeration: Int32 = 4,
        decimal: Int32 = 5, date: Int32 = 6, timeMillis: Int32 = 7, timeMicros: Int32 = 8, timestampMillis: Int32 = 9,
        timestampMicros: Int32 = 10, uint8: Int32 = 11, uint16: Int32 = 12, uint32: Int32 = 13, uint64: Int32 = 14,
        int8: Int32 = 15, int16: Int32 = 16, int32: Int32 = 17, int64: Int32 = 18, json: Int32 = 19, bson: Int32 = 20,
        interval: Int32 = 21
}

/// The LogicalType union.
enum LogicalAnnotation: Sendable, Hashable {
    case string, map, list, enumeration, date, json, bson, uuid, float16, unknown
    case decimal(scale: Int32, precision: Int32)
    case time(unit: ParquetType.TimeUnit, isAdjustedToUTC: Bool)
    case timestamp(unit: ParquetType.TimeUnit, isAdjustedToUTC: Bool)
    case integer(bitWidth: Int8, isSigned: Bool)
    /// A logical type this reader does not know (VARIANT, GEOMETRY, GEOGRAPHY, what later versions add), by field id.
    case other(Int16)
}

struct SchemaElement: Sendable {
    var type: PhysicalType?
    var typeLength: Int32?
    var repetition: Repetition?
    var name = ""
    var numChildren: Int32?
    var convertedType: Int32?
    var scale: Int32?
    var precision: Int32?
    var logicalType: LogicalAnnotation?
}

struct ColumnMetaData: Sendable {
    var type: PhysicalType
    var path: [String]
    var codec: Int32
    var numValues: Int64
    var totalCompressedSize: Int64
    var dataPageOffset: Int64
    var dictionaryPageOffset: Int64?
}

struct ColumnChunk: Sendable {
    var filePath: String?
    var metaData: ColumnMetaData?
    var isEncrypted = false
}

struct RowGroup: Sendable {
    var columns: [ColumnChunk]
    var numRows: Int64
}

struct FileMetaData: Sendable {
    var schema: [SchemaElement]
    var numRows: Int64
    var rowGroups: [RowGroup]
    var createdBy: String?
    var isEncrypted: Bool
}

enum PageType: Int32 {
    case dataPage = 0, indexPage = 1, dictionaryPage = 2, dataPageV2 = 3
}

struct DataPageHeader {
    var numValues: Int32
    var encoding: Int32
    var definitionLevelEncoding: Int32
    var repetitionLevelEncoding: Int32
}

struct DataPageHeaderV2 {
    var numValues: Int32
    var numNulls: Int32
    var numRows: Int32
    var encoding: Int32
    var definitionLevelsByteLength: Int32
    var repetitionLevelsByteLength: Int32
    var isCompressed: Bool
}

struct DictionaryPageHeader {
    var numValues: Int32
    var encoding: Int32
}

struct PageHeader {
    var type: Int32
    var uncompressedPageSize: Int32
    var compressedPageSize: Int32
    /// CRC-32 (gzip's) of the page's bytes as stored, when the writer wrote one.
    var crc: UInt32?
    var dataPage: DataPageHeader?
    var dictionaryPage: DictionaryPageHeader?
    var dataPageV2: DataPageHeaderV2?
}

// MARK: - Decoding

private func missing(_ field: String, of structure: String) -> ParquetError {
    .corrupt("\(structure) lacks its required \(field)")
}

extension CompactReader {
    private mutating func physicalType(_ field: Field, of name: String) throws(ParquetError) -> PhysicalType {
        let raw = try readI32(field)
        guard let type = PhysicalType(rawValue: raw) else { throw .corrupt("\(name) has physical type \(raw), which Parquet does not define") }
        return type
    }

    /// A FileMetaData struct; the caller has not begun it.
    mutating func readFileMetaData() throws(ParquetError) -> FileMetaData {
        try beginStruct()
        var schema: [SchemaElement]?
        var numRows: Int64?
        var rowGroups: [RowGroup]?
        var createdBy: String?
        var isEncrypted = false
        while let field = try nextField() {
            switch field.id {
            case 1: _ = try readI32(field)
            case 2: schema = try readStructList(field, named: "the schema") { (reader: inout CompactReader) throws(ParquetError) in try reader.readSchemaElement() }
            case 3: numRows = try readI64(field)
            case 4: rowGroups = try readStructList(field, named: "the row groups") { (reader: inout CompactReader) throws(ParquetError) in try reader.readRowGroup() }
            case 6: createdBy = try readString(field)
            case 8:
                isEncrypted = true
                try skip(field)
            default: try skip(field)
            }
        }
        guard let schema else { throw missing("schema", of: "the footer") }
        guard let numRows else { throw missing("row count", of: "the footer") }
        guard let rowGroups else { throw missing("row groups", of: "the footer") }
        return FileMetaData(schema: schema, numRows: numRows, rowGroups: rowGroups, createdBy: createdBy, isEncrypted: isEncrypted)
    }

    /// A SchemaElement, begun.
    mutating func readSchemaElement() throws(ParquetError) -> SchemaElement {
        var element = SchemaElement()
        var hasName = false
        while let field = try nextField() {
            switch field.id {
            case 1: element.type = try physicalType(field, of: "a schema element")
            case 2: element.typeLength = try readI32(field)
            case 3:
                let raw = try readI32(field)
                guard let repetition = Repetition(rawValue: raw) else { throw .corrupt("a schema element has repetition \(raw)") }
                element.repetition = repetition
            case 4:
                element.name = try readString(field)
                hasName = true
            case 5: element.numChildren = try readI32(field)
            case 6: element.convertedType = try readI32(field)
            case 7: element.scale = try readI32(field)
            case 8: element.precision = try readI32(field)
            case 10:
                guard field.type == .structure else { try skip(field); continue }
                element.logicalType = try readLogicalType()
            default: try skip(field)
            }
        }
        guard hasName else { throw missing("name", of: "a schema element") }
        return element
    }

    /// The LogicalType union (a struct with one field set); the caller has read its field header.
    private mutating func readLogicalType() throws(ParquetError) -> LogicalAnnotation? {
        try beginStruct()
        var result: LogicalAnnotation?
        while let field = try nextField() {
            guard field.type == .structure else {
                try skip(field)
                continue
            }
            switch field.id {
            case 1: result = .string
            case 2: result = .map
            case 3: result = .list
            case 4: result = .enumeration
            case 6: result = .date
            case 11: result = .unknown
            case 12: result = .json
            case 13: result = .bson
            case 14: result = .uuid
            case 15: result = .float16
            case 5:
                try beginStruct()
                var scale: Int32?
                var precision: Int32?
                while let inner = try nextField() {
                    switch inner.id {
                    case 1: scale = try readI32(inner)
                    case 2: precision = try readI32(inner)
                    default: try skip(inner)
                    }
                }
                guard let scale, let precision else { throw missing("scale and precision", of: "a DECIMAL logical type") }
                result = .decimal(scale: scale, precision: precision)
                continue
            case 7, 8:
                try beginStruct()
                var utc: Bool?
                var unit: ParquetType.TimeUnit?
                while let inner = try nextField() {
                    switch inner.id {
                    case 1: utc = try readBool(inner)
                    case 2:
                        guard inner.type == .structure else { try skip(inner); continue }
                        unit = try readTimeUnit()
                    default: try skip(inner)
                    }
                }
                guard let utc, let unit else { throw missing("unit", of: "a TIME or TIMESTAMP logical type") }
                result = field.id == 7 ? .time(unit: unit, isAdjustedToUTC: utc) : .timestamp(unit: unit, isAdjustedToUTC: utc)
                continue
            case 10:
                try beginStruct()
                var width: Int8?
                var signed: Bool?
                while let inner = try nextField() {
                    switch inner.id {
                    case 1: width = try readI8(inner)
                    case 2: signed = try readBool(inner)
                    default: try skip(inner)
                    }
                }
                guard let width, let signed else { throw missing("bit width and sign", of: "an INTEGER logical type") }
                result = .integer(bitWidth: width, isSigned: signed)
                continue
            default: result = .other(field.id)
            }
            try skip(field)
        }
        return result
    }

    /// The TimeUnit union; its field header read.
    private mutating func readTimeUnit() throws(ParquetError) -> ParquetType.TimeUnit? {
        try beginStruct()
        var unit: ParquetType.TimeUnit?
        while let field = try nextField() {
            switch field.id {
            case 1: unit = .milliseconds
            case 2: unit = .microseconds
            case 3: unit = .nanoseconds
            default: break
            }
            try skip(field)
        }
        return unit
    }

    /// A RowGroup, begun.
    mutating func readRowGroup() throws(ParquetError) -> RowGroup {
        var columns: [ColumnChunk]?
        var numRows: Int64?
        while let field = try nextField() {
            switch field.id {
            case 1: columns = try readStructList(field, named: "a row group's columns") { (reader: inout CompactReader) throws(ParquetError) in try reader.readColumnChunk() }
            case 3: numRows = try readI64(field)
            default: try skip(field)
            }
        }
        guard let columns else { throw missing("columns", of: "a row group") }
        guard let numRows else { throw missing("row count", of: "a row group") }
        return RowGroup(columns: columns, numRows: numRows)
    }

    /// A ColumnChunk, begun.
    mutating func readColumnChunk() throws(ParquetError) -> ColumnChunk {
        var chunk = ColumnChunk()
        while let field = try nextField() {
            switch field.id {
            case 1: chunk.filePath = try readString(field)
            case 3:
                guard field.type == .structure else { throw .corrupt("a column chunk's metadata is not a struct") }
                chunk.metaData = try readColumnMetaData()
            case 8, 9:
                chunk.isEncrypted = true
                try skip(field)
            default: try skip(field)
            }
        }
        return chunk
    }

    /// A ColumnMetaData; its field header read.
    private mutating func readColumnMetaData() throws(ParquetError) -> ColumnMetaData {
        try beginStruct()
        var type: PhysicalType?
        var path: [String]?
        var codec: Int32?
        var numValues: Int64?
        var totalCompressedSize: Int64?
        var dataPageOffset: Int64?
        var dictionaryPageOffset: Int64?
        while let field = try nextField() {
            switch field.id {
            case 1: type = try physicalType(field, of: "a column chunk")
            case 3: path = try readStringList(field, named: "a column's path")
            case 4: codec = try readI32(field)
            case 5: numValues = try readI64(field)
            case 7: totalCompressedSize = try readI64(field)
            case 9: dataPageOffset = try readI64(field)
            case 11: dictionaryPageOffset = try readI64(field)
            default: try skip(field)
            }
        }
        guard let type, let path, let codec, let numValues, let totalCompressedSize, let dataPageOffset else {
            throw missing("type, path, codec, value count, size or data page offset", of: "a column chunk's metadata")
        }
        return ColumnMetaData(type: type, path: path, codec: codec, numValues: numValues,
                              totalCompressedSize: totalCompressedSize, dataPageOffset: dataPageOffset,
                              dictionaryPageOffset: dictionaryPageOffset)
    }

    /// A PageHeader, not begun.
    mutating func readPageHeader() throws(ParquetError) -> PageHeader {
        try beginStruct()
        var type: Int32?
        var uncompressed: Int32?
        var compressed: Int32?
        var header = PageHeader(type: 0, uncompressedPageSize: 0, compressedPageSize: 0)
        while let field = try nextField() {
            switch field.id {
            case 1: type = try readI32(field)
            case 2: uncompressed = try readI32(field)
            case 3: compressed = try readI32(field)
            case 4: header.crc = UInt32(bitPattern: try readI32(field))
            case 5:
                guard field.type == .structure else { throw .corrupt("a page header's data page header is not a struct") }
                header.dataPage = try readDataPageHeader()
            case 7:
                guard field.type == .structure else { throw .corrupt("a page header's dictionary page header is not a struct") }
                header.dictionaryPage = try readDictionaryPageHeader()
            case 8:
                guard field.type == .structure else { throw .corrupt("a page header's data page v2 header is not a struct") }
                header.dataPageV2 = try readDataPageHeaderV2()
            default: try skip(field)
            }
        }
        guard let type, let uncompressed, let compressed else { throw missing("type and sizes", of: "a page header") }
        header.type = type
        header.uncompressedPageSize = uncompressed
        header.compressedPageSize = compressed
        return header
    }

    private mutating func readDataPageHeader() throws(ParquetError) -> DataPageHeader {
        try beginStruct()
        var values: [Int32?] = [nil, nil, nil, nil]
        while let field = try nextField() {
            switch field.id {
            case 1...4: values[Int(field.id) - 1] = try readI32(field)
            default: try skip(field)
            }
        }
        guard let count = values[0], let encoding = values[1], let definition = values[2], let repetition = values[3] else {
            throw missing("value count and encodings", of: "a data page header")
        }
        return DataPageHeader(numValues: count, encoding: encoding, definitionLevelEncoding: definition,
                              repetitionLevelEncoding: repetition)
    }

    private mutating func readDataPageHeaderV2() throws(ParquetError) -> DataPageHeaderV2 {
        try beginStruct()
        var values: [Int32?] = [nil, nil, nil, nil, nil, nil]
        var isCompressed = true
        while let field = try nextField() {
            switch field.id {
            case 1...6: values[Int(field.id) - 1] = try readI32(field)
            case 7: isCompressed = try readBool(field)
            default: try skip(field)
            }
        }
        guard let count = values[0], let nulls = values[1], let rows = values[2], let encoding = values[3],
              let definition = values[4], let repetition = values[5] else {
            throw missing("counts, encoding and level lengths", of: "a data page v2 header")
        }
        return DataPageHeaderV2(numValues: count, numNulls: nulls, numRows: rows, encoding: encoding,
                                definitionLevelsByteLength: definition, repetitionLevelsByteLength: repetition,
                                isCompressed: isCompressed)
    }

    private mutating func readDictionaryPageHeader() throws(ParquetError) -> DictionaryPageHeader {
        try beginStruct()
        var count: Int32?
        var encoding: Int32?
        while let field = try nextField() {
            switch field.id {
            case 1: count = try readI32(field)
            case 2: encoding = try readI32(field)
            default: try skip(field)
            }
        }
        guard let count, let encoding else { throw missing("value count and encoding", of: "a dictionary page header") }
        return DictionaryPageHeader(numValues: count, encoding: encoding)
    }
}
