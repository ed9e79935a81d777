import CZlib

/// The levels and values of one data page: `count` entries, each with a repetition and a definition level (the arrays
/// are empty when the column's maximum level is 0), and a value for each entry whose definition level is the maximum.
struct DecodedPage {
    var repetition: [UInt8]
    var definition: [UInt8]
    var count: Int
    var values: ValueStore
}

/// Reads one column chunk's pages in order: its dictionary page, then data pages (v1 and v2), decompressed and decoded.
/// Index pages are skipped. Every size in a page header is checked against the bytes left in the chunk and the limits
/// before it is used.
struct ColumnChunkReader {
    private let plan: ColumnPlan
    private let codec: Codec
    private let limits: ParquetFile.Configuration
    private var cursor: ByteCursor
    private var dictionary: ValueStore?
    private var sawDataPage = false
    private var valuesRead: Int64 = 0
    private let valuesExpected: Int64

    init(bytes: [UInt8], plan: ColumnPlan, codec: Codec, valueCount: Int64, limits: ParquetFile.Configuration) {
        self.plan = plan
        self.codec = codec
        self.limits = limits
        self.cursor = ByteCursor(bytes, what: "the column chunk")
        self.valuesExpected = valueCount
    }

    /// The next data page, or nil once the chunk's values (its metadata's count) are all read.
    mutating func nextPage() throws(ParquetError) -> DecodedPage? {
        while valuesRead < valuesExpected {
            guard !cursor.isAtEnd else {
                throw .corrupt("the column chunk ends after \(valuesRead) of its \(valuesExpected) values")
            }
            let offset = cursor.position
            var reader = CompactReader(cursor)
            let header: PageHeader
            do throws(ParquetError) {
                header = try reader.readPageHeader()
            } catch {
                throw error.within("the page header at offset \(offset) of the column chunk")
            }
            cursor = reader.cursor
            let compressed = Int(header.compressedPageSize)
            let uncompressed = Int(header.uncompressedPageSize)
            guard compressed >= 0, uncompressed >= 0 else {
                throw .corrupt("the page at offset \(offset) of the column chunk has a negative size")
            }
            guard compressed <= cursor.remaining else {
                throw .corrupt("the page at offset \(offset) of the column chunk says \(compressed) bytes, the chunk has \(cursor.remaining) left")
            }
            guard compressed <= limits.maxPageSize, uncompressed <= limits.maxPageSize else {
                throw .overLimit("the page at offset \(offset) of the column chunk has \(max(compressed, uncompressed)) bytes, more than maxPageSize (\(limits.maxPageSize))")
            }
            let body = try cursor.take(compressed, for: "the page")
            if let crc = header.crc, crc != checksum(body) {
                throw .corrupt("the page at offset \(offset) of the column chunk fails its CRC-32 check")
            }
            do throws(ParquetError) {
                switch PageType(rawValue: header.type) {
                case .dictionaryPage?:
                    try readDictionary(header, body: body)
                case .dataPage?:
                    return try readDataPage(header, body: body)
                case .dataPageV2?:
                    return try readDataPageV2(header, body: body)
                case .indexPage?:
                    continue
                case nil:
                    throw .corrupt("page type \(header.type), which Parquet does not define")
                }
            } catch {
                throw error.within("the page at offset \(offset) of the column chunk")
            }
        }
        return nil
    }

    /// zlib's CRC-32 of the page's stored bytes.
    private func checksum(_ range: Range<Int>) -> UInt32 {
        cursor.bytes.withUnsafeBufferPointer { buffer in
            var crc: uLong = crc32(0, nil, 0)
            var start = range.lowerBound
            // crc32 takes a uInt length: pages are under maxPageSize, but stay exact for any size.
            while start < range.upperBound {
                let length = min(range.upperBound - start, Int(UInt32.max))
                crc = crc32(crc, buffer.baseAddress.map { $0 + start }, uInt(length))
                start += length
            }
            return UInt32(truncatingIfNeeded: crc)
        }
    }

    private func checkCount(_ count: Int32, _ what: String) throws(ParquetError) -> Int {
        guard count >= 0 else { throw .corrupt("\(what) has \(count) values") }
        guard Int(count) <= limits.maxValuesPerPage else {
            throw .overLimit("\(what) has \(count) values, more than maxValuesPerPage (\(limits.maxValuesPerPage))")
        }
        return Int(count)
    }

    private mutating func readDictionary(_ header: PageHeader, body: Range<Int>) throws(ParquetError) {
        guard let dictionaryHeader = header.dictionaryPage else { throw .corrupt("a dictionary page without its header") }
        guard dictionary == nil, !sawDataPage else { throw .corrupt("a dictionary page after the first page") }
        let count = try checkCount(dictionaryHeader.numValues, "a dictionary page")
        guard dictionaryHeader.encoding == Encoding.plain || dictionaryHeader.encoding == Encoding.plainDictionary else {
            throw .unsupported("a dictionary page in encoding \(Encoding.name(dictionaryHeader.encoding)), not read")
        }
        let page = try codec.decompress(cursor.bytes, start: body.lowerBound, count: body.count,
                                        size: Int(header.uncompressedPageSize))
        var values = ByteCursor(page, what: "the dictionary page")
        dictionary = try decodePlain(&values, physical: plan.leaf.physical, width: plan.leaf.width, count: count,
                                     what: "the dictionary page")
    }

    private mutating func readDataPage(_ header: PageHeader, body: Range<Int>) throws(ParquetError) -> DecodedPage {
        guard let dataHeader = header.dataPage else { throw .corrupt("a data page without its header") }
        let count = try checkCount(dataHeader.numValues, "a data page")
        let page = try codec.decompress(cursor.bytes, start: body.lowerBound, count: body.count,
                                        size: Int(header.uncompressedPageSize))
        var data = ByteCursor(page, what: "the data page")
        var repetition: [UInt8] = []
        var definition: [UInt8] = []
        if plan.maxRepetitionLevel > 0 {
            try checkLevelEncoding(dataHeader.repetitionLevelEncoding, "repetition")
            repetition = try levels(&data, prefixed: true, maximum: plan.maxRepetitionLevel, count: count, what: "repetition levels")
        }
        if plan.maxDefinitionLevel > 0 {
            try checkLevelEncoding(dataHeader.definitionLevelEncoding, "definition")
            definition = try levels(&data, prefixed: true, maximum: plan.maxDefinitionLevel, count: count, what: "definition levels")
        }
        let present = presentCount(definition, count: count)
        let values = try decodeValues(&data, encoding: dataHeader.encoding, count: present)
        sawDataPage = true
        valuesRead += Int64(count)
        return DecodedPage(repetition: repetition, definition: definition, count: count, values: values)
    }

    private mutating func readDataPageV2(_ header: PageHeader, body: Range<Int>) throws(ParquetError) -> DecodedPage {
        guard let dataHeader = header.dataPageV2 else { throw .corrupt("a data page v2 without its header") }
        let count = try checkCount(dataHeader.numValues, "a data page")
        let nulls = Int(dataHeader.numNulls)
        let repetitionLength = Int(dataHeader.repetitionLevelsByteLength)
        let definitionLength = Int(dataHeader.definitionLevelsByteLength)
        guard nulls >= 0, nulls <= count else { throw .corrupt("a data page v2 has \(nulls) nulls in \(count) values") }
        guard repetitionLength >= 0, definitionLength >= 0, repetitionLength + definitionLength <= body.count,
              repetitionLength + definitionLength <= Int(header.uncompressedPageSize) else {
            throw .corrupt("a data page v2 has \(repetitionLength) + \(definitionLength) bytes of levels in \(body.count)")
        }
        var repetition: [UInt8] = []
        var definition: [UInt8] = []
        if plan.maxRepetitionLevel > 0 {
            var section = ByteCursor(cursor.bytes, start: body.lowerBound, count: repetitionLength, what: "the repetition levels")
            repetition = try levels(&section, prefixed: false, maximum: plan.maxRepetitionLevel, count: count, what: "repetition levels")
        }
        if plan.maxDefinitionLevel > 0 {
            var section = ByteCursor(cursor.bytes, start: body.lowerBound + repetitionLength, count: definitionLength,
                                     what: "the definition levels")
            definition = try levels(&section, prefixed: false, maximum: plan.maxDefinitionLevel, count: count, what: "definition levels")
        }
        let present = presentCount(definition, count: count)
        guard present == count - nulls else {
            throw .corrupt("a data page v2 says \(nulls) nulls in \(count) values, its levels \(count - present)")
        }
        let start = body.lowerBound + repetitionLength + definitionLength
        let size = Int(header.uncompressedPageSize) - repetitionLength - definitionLength
        let valuesCodec = dataHeader.isCompressed ? codec : .uncompressed
        let page = try valuesCodec.decompress(cursor.bytes, start: start, count: body.upperBound - start, size: size)
        var data = ByteCursor(page, what: "the data page")
        let values = try decodeValues(&data, encoding: dataHeader.encoding, count: present)
        sawDataPage = true
        valuesRead += Int64(count)
        return DecodedPage(repetition: repetition, definition: definition, count: count, values: values)
    }

    private func checkLevelEncoding(_ encoding: Int32, _ kind: String) throws(ParquetError) {
        guard encoding == Encoding.rle else {
            throw .unsupported("\(kind) levels in encoding \(Encoding.name(encoding))"
                + (encoding == Encoding.bitPacked ? " (deprecated)" : "") + ", not read")
        }
    }

    /// Entries whose definition level is the maximum: those with a value.
    private func presentCount(_ definition: [UInt8], count: Int) -> Int {
        guard plan.maxDefinitionLevel > 0 else { return count }
        let maximum = UInt8(truncatingIfNeeded: plan.maxDefinitionLevel)
        var present = 0
        for level in definition where level == maximum { present += 1 }
        return present
    }

    /// `count` levels of the RLE/bit-packing hybrid, after a 4-byte length in v1 pages.
    private func levels(
        _ data: inout ByteCursor, prefixed: Bool, maximum: Int, count: Int, what: String
    ) throws(ParquetError) -> [UInt8] {
        var section = data
        if prefixed {
            let length = Int(try data.readUInt32(for: "the length of the \(what)"))
            let range = try data.take(length, for: "the \(what)")
            section = ByteCursor(data.bytes, start: range.lowerBound, count: range.count, what: "the \(what)")
        }
        var levels: [UInt8] = []
        try decodeHybrid(&section, bitWidth: bitWidth(of: maximum), count: count, maximum: UInt64(maximum),
                         into: &levels, what: "the \(what)")
        return levels
    }

    private func decodeValues(_ data: inout ByteCursor, encoding: Int32, count: Int) throws(ParquetError) -> ValueStore {
        let physical = plan.leaf.physical
        let width = plan.leaf.width
        func wrong() -> ParquetError {
            .corrupt("values of type \(physical.name) in encoding \(Encoding.name(encoding))")
        }
        switch encoding {
        case Encoding.plain:
            return try decodePlain(&data, physical: physical, width: width, count: count, what: "the values")
        case Encoding.plainDictionary, Encoding.rleDictionary:
            guard let dictionary else { throw .corrupt("a dictionary-encoded page without a dictionary page") }
            var indices: [UInt32] = []
            if count > 0 {
                let bitWidth = Int(try data.readByte(for: "the dictionary indices' bit width"))
                guard bitWidth <= 32 else { throw .corrupt("dictionary indices of \(bitWidth) bits") }
                guard dictionary.count > 0 else { throw .corrupt("indices into an empty dictionary") }
                try decodeHybrid(&data, bitWidth: bitWidth, count: count, maximum: UInt64(dictionary.count - 1),
                                 into: &indices, what: "the dictionary indices")
            }
            return .dictionary(indices: indices, values: dictionary)
        case Encoding.rle:
            guard physical == .boolean else { throw wrong() }
            let length = Int(try data.readUInt32(for: "the length of the booleans"))
            let range = try data.take(length, for: "the booleans")
            var section = ByteCursor(data.bytes, start: range.lowerBound, count: range.count, what: "the booleans")
            var bits: [UInt8] = []
            try decodeHybrid(&section, bitWidth: 1, count: count, maximum: 1, into: &bits, what: "the booleans")
            return .booleans(bits.map { $0 != 0 })
        case Encoding.deltaBinaryPacked:
            switch physical {
            case .int32:
                let values = try decodeDeltaBinaryPacked(&data, count: count, maximumBitWidth: 32, what: "the values")
                return .int32s(values.map { Int32(truncatingIfNeeded: $0) })
            case .int64:
                return .int64s(try decodeDeltaBinaryPacked(&data, count: count, maximumBitWidth: 64, what: "the values"))
            default:
                throw wrong()
            }
        case Encoding.deltaLengthByteArray:
            guard physical == .byteArray else { throw wrong() }
            return .variable(bytes: data.bytes, ranges: try decodeDeltaLengthByteArray(&data, count: count, what: "the values"))
        case Encoding.deltaByteArray:
            guard physical == .byteArray || physical == .fixedLenByteArray else { throw wrong() }
            let (bytes, ranges) = try decodeDeltaByteArray(&data, count: count, maximumBytes: limits.maxPageSize,
                                                          what: "the values")
            if physical == .fixedLenByteArray, let bad = ranges.first(where: { $0.count != width }) {
                throw .corrupt("a FIXED_LEN_BYTE_ARRAY(\(width)) value of \(bad.count) bytes")
            }
            return .variable(bytes: bytes, ranges: ranges)
        case Encoding.byteStreamSplit:
            return try decodeByteStreamSplit(&data, physical: physical, width: width, count: count, what: "the values")
        case Encoding.bitPacked:
            throw .unsupported("page uses encoding BIT_PACKED (deprecated), not read")
        default:
            throw .unsupported("page uses encoding \(Encoding.name(encoding)), not read")
        }
    }
}
