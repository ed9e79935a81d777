import Foundation
import MirrorModel
import MirrorParquet

/// Reads a table's rows one at a time: a text table (``TableReader``), a Parquet file (``ParquetTableReader``), or a
/// folder of them (``TableFolderReader``). Used from one thread at a time.
public protocol TableRowReading: AnyObject {
    /// Which columns hold what.
    var columns: TableColumns { get }
    /// The next row, or `nil` after the last.
    /// - Throws: ``TableError`` when the table cannot be read from this row on (the rows before it were correct).
    func next() throws(TableError) -> TableRow?
}

extension TableReader: TableRowReading {}

extension TableReader {
    /// Opens what `path` names: standard input (`-`), a folder of tables (read in name order, keys continuing across
    /// files), a Parquet file (by its `.parquet` name or its `PAR1` magic), or a text table.
    /// - Throws: ``TableError`` when it cannot be opened, or a column named in `columns` is not in it.
    public static func open(path: String, format: TableFormat? = nil, columns: TableColumns = TableColumns()) throws(TableError) -> any TableRowReading {
        guard path != "-" else { return try TableReader(path: path, format: format, columns: columns) }
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue {
            return try TableFolderReader(path: path, format: format, columns: columns)
        }
        if format == nil, ParquetTableReader.isParquet(path: path) {
            return try ParquetTableReader(path: path, columns: columns)
        }
        return try TableReader(path: path, format: format, columns: columns)
    }
}

/// A Parquet file's rows as a table's: the URL, caption and `--keep-cols` columns read by name, and only those
/// (``MirrorParquet/ParquetFile`` reads one row group's chosen column chunks at a time, so memory is flat whatever the
/// file's size). A URL or caption that is not a string is read as its JSON text; a kept column keeps its JSON (a
/// `list<list<double>>` such as DataComp's `face_bboxes` is `[[0.1,0.2,0.3,0.4]]`). A file that cannot be read — not
/// Parquet, corrupt, or using a feature this reader does not read — is ``TableError/parquet(table:reason:)``, naming
/// the file and the reason (exit 65).
public final class ParquetTableReader: TableRowReading {
    /// The columns in use.
    public let columns: TableColumns
    /// The file's top-level column names.
    public let header: [String]
    private let table: String
    private var rows: ParquetRows.Iterator
    private let captionIndex: Int?
    private let hashIndex: Int?
    private let blurIndex: Int?
    private var position: Int
    private let limits = TableReader.Limits()

    /// Whether `path` is a Parquet file: its name ends in `.parquet`, or it starts with `PAR1`.
    public static func isParquet(path: String) -> Bool {
        if path.lowercased().hasSuffix(".parquet") { return true }
        guard let handle = FileHandle(forReadingAtPath: path) else { return false }
        defer { try? handle.close() }
        return (try? handle.read(upToCount: 4)) == Data("PAR1".utf8)
    }

    /// Opens `path`; its rows' keys start at `firstPosition` (a folder's later files continue the numbering).
    public init(path: String, columns: TableColumns = TableColumns(), firstPosition: Int = 0) throws(TableError) {
        self.columns = columns
        table = path
        position = firstPosition
        let file: ParquetFile
        do {
            file = try ParquetFile(url: URL(fileURLWithPath: path))
        } catch {
            throw .parquet(table: path, reason: error.description)
        }
        header = file.schema.columns.map(\.name)
        let named = [("--url-col", columns.url)] + columns.keep.map { ("--keep-cols", $0) }
            + [("--verify-hash", columns.hash), ("--blur-col", columns.blur)].compactMap { option, name in name.map { (option, $0) } }
        for (option, name) in named where !header.contains(name) {
            throw .missingColumn(option: option, name: name, columns: header)
        }
        if let caption = columns.caption, !header.contains(caption) {
            throw .missingColumn(option: "--caption-col", name: caption, columns: header)
        }
        let caption = columns.caption ?? (header.contains("caption") ? "caption" : nil)
        var wanted = [columns.url]
        if let caption {
            captionIndex = wanted.count
            wanted.append(caption)
        } else {
            captionIndex = nil
        }
        wanted += columns.keep
        if let hash = columns.hash {
            hashIndex = wanted.count
            wanted.append(hash)
        } else {
            hashIndex = nil
        }
        if let blur = columns.blur {
            blurIndex = wanted.count
            wanted.append(blur)
        } else {
            blurIndex = nil
        }
        do {
            rows = try file.rows(columns: wanted).makeIterator()
        } catch {
            throw .parquet(table: path, reason: error.description)
        }
    }

    public func next() throws(TableError) -> TableRow? {
        let values: [ParquetValue]
        do {
            guard let row = try rows.next() else { return nil }
            values = row
        } catch {
            throw .parquet(table: table, reason: error.description)
        }
        defer { position += 1 }
        let url: Result<URL, TableRow.Problem> = switch values[0] {
        case .null: .failure(.init(reason: "no URL"))
        case let .string(text): TableReader.parseURL(text.trimmingSpaces(), limits: limits)
        case let .bytes(bytes): TableReader.parseURL(String(urlBytes: bytes[...]).trimmingSpaces(), limits: limits)
        default: .failure(.init(reason: "the URL column holds \(values[0].jsonText.prefix(80)), not text"))
        }
        let caption: String? = captionIndex.flatMap { index in
            switch values[index] {
            case .null: nil
            case let .string(text): text
            case let .bytes(bytes): String(utf8OrWindows1252: bytes[...])
            default: values[index].jsonText
            }
        }
        let offset = (captionIndex ?? 0) + 1
        let kept = columns.keep.enumerated().map { KeptColumn(name: $1, json: values[offset + $0].jsonText) }
        var row = TableRow(position: position, place: "row \(position + 1)", url: url, caption: caption, columns: kept)
        if let hashIndex {
            let text: String? = switch values[hashIndex] {
            case let .string(text): text
            case let .bytes(bytes): bytes.map { String(format: "%02x", $0) }.joined()  // a digest stored as raw bytes
            default: nil
            }
            row.expectedDigest = text.flatMap { ExpectedDigest(algorithm: columns.hashAlgorithm, value: $0) }
        }
        if let blurIndex {
            let value = values[blurIndex]
            let text: [UInt8] = switch value {
            case .null: []
            case let .string(text): Array(text.utf8)
            default: Array(value.jsonText.utf8)
            }
            row.blurBoxes = Result { () throws(BlurBoxes.Malformed) in try BlurBoxes(parsing: text[...]) }
        }
        return row
    }
}

/// A folder of tables read as one: its table files (Parquet, CSV, TSV, JSONL and text lists, gzip or not; hidden files
/// and others skipped) in name order, each row's key continuing from the file before, so that a rerun over the same
/// folder gives every row the key it had. A row's place names its file.
public final class TableFolderReader: TableRowReading {
    /// The files read, in order.
    public let files: [String]
    private let format: TableFormat?
    public let columns: TableColumns
    private var current: (any TableRowReading)?
    private var currentName = ""
    private var nextFile = 0
    private var position = 0

    /// Opens the folder and the first of its tables (so that a missing column is said before anything runs).
    public init(path: String, format: TableFormat? = nil, columns: TableColumns = TableColumns()) throws(TableError) {
        self.format = format
        self.columns = columns
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: path)
        } catch {
            throw .unreadable("cannot list the folder \(path): \(error.localizedDescription)")
        }
        let folder = URL(fileURLWithPath: path, isDirectory: true)
        files = names.filter { name in
            !name.hasPrefix(".") && (name.lowercased().hasSuffix(".parquet") || TableFormat(fileName: name) != nil)
        }.sorted().map { folder.appendingPathComponent($0).path }
        guard !files.isEmpty else {
            throw .unreadable("the folder \(path) holds no table (.parquet, .csv, .tsv, .jsonl or .txt, gzip or not)")
        }
        try openNext()
    }

    private func openNext() throws(TableError) {
        let path = files[nextFile]
        nextFile += 1
        currentName = URL(fileURLWithPath: path).lastPathComponent
        if ParquetTableReader.isParquet(path: path) {
            current = try ParquetTableReader(path: path, columns: columns)
        } else {
            current = try TableReader(path: path, format: format ?? TableFormat(fileName: path), columns: columns)
        }
    }

    public func next() throws(TableError) -> TableRow? {
        while let reader = current {
            if var row = try reader.next() {
                row.position = position
                row.place = "\(currentName) \(row.place)"
                position += 1
                return row
            }
            current = nil
            if nextFile < files.count { try openNext() }
        }
        return nil
    }
}
