import Foundation

/// A Parquet file opened for reading rows: its footer read and checked, its schema known, its rows read on demand one
/// row group at a time.
///
/// Opening reads the last 8 bytes and the footer, nothing else. Iterating `rows(columns:)` reads, for one row group at
/// a time, only the column chunks of the columns asked for (a positioned read each), decodes them page by page and
/// assembles rows; so memory holds one row group's chosen column chunks and one decoded page per column, whatever the
/// file's size. Every size and count the file states is bounded before it is used (`Configuration`), and a file that
/// cannot be read throws one `ParquetError` with a one-line reason; rows yielded before it are correct.
///
/// Reads Parquet's physical types, its codecs (UNCOMPRESSED, SNAPPY, GZIP, ZSTD, LZ4_RAW and the old LZ4, BROTLI), its
/// encodings (PLAIN, the dictionary encodings, RLE, DELTA_BINARY_PACKED, DELTA_LENGTH_BYTE_ARRAY, DELTA_BYTE_ARRAY,
/// BYTE_STREAM_SPLIT), data pages v1 and v2, and columns that are scalars or lists nested to any depth (3-level and the
/// older 2-level lists, bare repeated fields). Structs, maps, encryption, LZO and the deprecated BIT_PACKED levels are
/// named in the error when a column needs them.
///
/// A `ParquetFile` is immutable and `Sendable`; each `rows(columns:)` iterates independently.
///
/// ```swift
/// let reader = try ParquetFile(url: url)
/// print(reader.schema)  // URL: string, TEXT: string (nullable), WIDTH: int64 (nullable), …
/// for try await row in try reader.rows(columns: ["URL", "TEXT"]) {
///     print(row[0], row[1].stringValue ?? "")
/// }
/// ```
public final class ParquetFile: Sendable {
    /// The top-level columns, the row count and the writer.
    public let schema: ParquetSchema
    public let configuration: Configuration

    let source: any ParquetByteReading
    let metadata: FileMetaData
    let tree: SchemaTree
    /// Where the footer starts: column chunks end at or before it.
    let dataEnd: Int

    private static let magic: [UInt8] = Array("PAR1".utf8)
    private static let encryptedMagic: [UInt8] = Array("PARE".utf8)

    /// Opens the file at `url` and reads its footer.
    /// - Throws: `ParquetError` when it cannot be opened or is not a readable Parquet file.
    public convenience init(url: URL, configuration: Configuration = Configuration()) throws(ParquetError) {
        try self.init(source: ParquetFileBytes(url: url), configuration: configuration)
    }

    /// Reads a Parquet file held in memory.
    public convenience init(bytes: [UInt8], configuration: Configuration = Configuration()) throws(ParquetError) {
        try self.init(source: ParquetMemoryBytes(bytes), configuration: configuration)
    }

    /// Reads a Parquet file held in memory.
    public convenience init(data: Data, configuration: Configuration = Configuration()) throws(ParquetError) {
        try self.init(source: ParquetMemoryBytes([UInt8](data)), configuration: configuration)
    }

    /// Reads a Parquet file through `source` (a file, memory, or a store of your own).
    public init(source: any ParquetByteReading, configuration: Configuration = Configuration()) throws(ParquetError) {
        self.source = source
        self.configuration = configuration
        let size = source.size
        guard size >= 12 else {
            throw .notParquet("\(size) bytes, fewer than the 12 of the smallest Parquet file")
        }
        let tail = try Self.read(source, at: size - 8, count: 8)
        let trailer = Array(tail[4..<8])
        if trailer == Self.encryptedMagic {
            throw .unsupported("the footer is encrypted (PARE), which this reader does not read")
        }
        guard trailer == Self.magic else { throw .notParquet("it does not end with PAR1") }
        guard try Self.read(source, at: 0, count: 4) == Self.magic else { throw .notParquet("it does not start with PAR1") }
        let footerLength = Int(UInt32(tail[0]) | UInt32(tail[1]) << 8 | UInt32(tail[2]) << 16 | UInt32(tail[3]) << 24)
        guard footerLength <= size - 12 else {
            throw .notParquet("its footer length \(footerLength) is more than the \(size - 12) bytes the file has for it")
        }
        guard footerLength <= configuration.maxFooterSize else {
            throw .overLimit("a footer of \(footerLength) bytes, more than maxFooterSize (\(configuration.maxFooterSize))")
        }
        dataEnd = size - 8 - footerLength
        let footer = try Self.read(source, at: dataEnd, count: footerLength)
        var reader = CompactReader(ByteCursor(footer, what: "the footer"))
        metadata = try reader.readFileMetaData()
        guard !metadata.isEncrypted else {
            throw .unsupported("its columns are encrypted (plaintext footer with an encryption algorithm), which this reader does not read")
        }
        guard metadata.numRows >= 0 else { throw .corrupt("the footer says \(metadata.numRows) rows") }
        tree = try SchemaTree(metadata.schema)
        schema = ParquetSchema(columns: tree.columns, rowCount: metadata.numRows, rowGroupCount: metadata.rowGroups.count,
                               createdBy: metadata.createdBy)
    }

    private static func read(_ source: any ParquetByteReading, at offset: Int, count: Int) throws(ParquetError) -> [UInt8] {
        let bytes = try source.bytes(at: offset, count: count)
        guard bytes.count == count else {
            throw .unreadable("asked for \(count) bytes at offset \(offset), got \(bytes.count)")
        }
        return bytes
    }

    /// The rows of `columns` (top-level names, in the order wanted; nil: every column), as values in that order.
    ///
    /// - Throws: `ParquetError.noSuchColumn` for a name the file lacks, `ParquetError.unsupported` for a column this
    ///   reader does not read (a struct, a map); the rows' own errors are thrown by the iteration.
    public func rows(columns: [String]? = nil) throws(ParquetError) -> ParquetRows {
        let names = columns ?? schema.columns.map(\.name)
        var plans: [ColumnPlan] = []
        for name in names {
            guard let index = schema.columns.firstIndex(where: { $0.name == name }) else {
                throw .noSuchColumn(name, available: schema.columns.map(\.name))
            }
            plans.append(try tree.plans[index].get())
        }
        return ParquetRows(file: self, plans: plans)
    }

    /// Readers for `plans` over row group `index`: their column chunks checked against the schema and the file, then
    /// read (once per leaf).
    func openRowGroup(_ index: Int, plans: [ColumnPlan]) throws(ParquetError) -> (readers: [ColumnRowReader], rows: Int64) {
        let group = metadata.rowGroups[index]
        guard group.numRows >= 0 else { throw .corrupt("row group \(index) says \(group.numRows) rows") }
        guard group.columns.count == tree.leafPaths.count else {
            throw .corrupt("row group \(index) has \(group.columns.count) column chunks, the schema \(tree.leafPaths.count) leaf columns")
        }
        var chunks: [Int: [UInt8]] = [:]
        var readers: [ColumnRowReader] = []
        for plan in plans {
            let context = "column \(quoted(plan.name)), row group \(index)"
            let chunk = group.columns[plan.leafIndex]
            guard !chunk.isEncrypted else { throw .unsupported("\(context) is encrypted, which this reader does not read") }
            guard chunk.filePath == nil else {
                throw .unsupported("\(context) is in another file (\(quoted(chunk.filePath ?? ""))), which this reader does not read")
            }
            guard let meta = chunk.metaData else { throw .corrupt("\(context) has no metadata") }
            guard meta.path == tree.leafPaths[plan.leafIndex] else {
                throw .corrupt("\(context) has the path \(quoted(meta.path.joined(separator: "."))), the schema \(quoted(tree.leafPaths[plan.leafIndex].joined(separator: ".")))")
            }
            guard meta.type == plan.leaf.physical else {
                throw .corrupt("\(context) has type \(meta.type.name), the schema \(plan.leaf.physical.name)")
            }
            guard let codec = Codec(rawValue: meta.codec) else {
                throw .unsupported("\(context) uses compression codec \(meta.codec), which Parquet does not define")
            }
            guard meta.numValues >= 0 else { throw .corrupt("\(context) says \(meta.numValues) values") }
            let bytes: [UInt8]
            if let cached = chunks[plan.leafIndex] {
                bytes = cached
            } else if meta.numValues == 0 {
                // No values, no pages to read (pyarrow writes an empty chunk's data page offset as 0).
                bytes = []
            } else {
                bytes = try readChunk(meta, context: context)
                chunks[plan.leafIndex] = bytes
            }
            let reader = ColumnChunkReader(bytes: bytes, plan: plan, codec: codec, valueCount: meta.numValues,
                                           limits: configuration)
            readers.append(ColumnRowReader(chunk: reader, plan: plan, maximumEntriesPerRow: configuration.maxValuesPerPage))
        }
        return (readers, group.numRows)
    }

    /// A column chunk's bytes, its range checked against the file's data and the limit first.
    private func readChunk(_ meta: ColumnMetaData, context: String) throws(ParquetError) -> [UInt8] {
        var start = meta.dataPageOffset
        // Some writers store 0 for "no dictionary"; a dictionary page comes before the data pages.
        if let dictionary = meta.dictionaryPageOffset, dictionary > 0, dictionary < start { start = dictionary }
        let length = meta.totalCompressedSize
        guard start >= 4, length > 0, start <= Int64(dataEnd), length <= Int64(dataEnd) - start else {
            throw .corrupt("\(context): the column chunk at offset \(start) (\(length) bytes) runs past the end of the file's data (\(dataEnd) bytes)")
        }
        guard length <= Int64(configuration.maxColumnChunkSize) else {
            throw .overLimit("\(context): a column chunk of \(length) bytes, more than maxColumnChunkSize (\(configuration.maxColumnChunkSize))")
        }
        return try Self.read(source, at: Int(start), count: Int(length))
    }
}
