import CSV
import Foundation
import MirrorCore
import MirrorFetch
import MirrorSearch
import MirrorStorage

/// One row of a table of URLs, bad or good.
public struct TableRow: Sendable, Hashable {
    /// The row's position among the table's data rows, from 0 (header, blank and comment lines not counted): its key.
    public var position: Int
    /// Where to find it: `row N` (CSV, TSV: the N-th data row) or `line N` (text, JSONL: the file's N-th line).
    public var place: String
    /// The image URL, or why the row has none.
    public var url: Result<URL, Problem>
    /// The caption column's value, or `nil`.
    public var caption: String?
    /// The `--keep-cols` columns, in the order they were named.
    public var columns: [KeptColumn]

    /// Why a row gives no URL.
    public struct Problem: Error, Sendable, Hashable, CustomStringConvertible {
        public var reason: String
        public var description: String { reason }
    }

    /// The row's key: its position, zero-padded to nine digits (`000000042`), the name of its WebDataset sample.
    public var key: String { Self.key(position) }

    /// The key of the row at `position`.
    public static func key(_ position: Int) -> String {
        zeroPadded(position, width: 9)
    }
}

/// Which columns of a table hold what.
public struct TableColumns: Sendable, Hashable {
    /// The URL column. Default `url`.
    public var url = "url"
    /// The caption column; `nil` (the default) takes `caption` when the table has it.
    public var caption: String?
    /// Columns carried into each record.
    public var keep: [String] = []

    public init(url: String = "url", caption: String? = nil, keep: [String] = []) {
        self.url = url
        self.caption = caption
        self.keep = keep
    }
}

/// Reads a table of URLs row by row, streaming: a 10-million-row file is never held whole, gzip or not.
///
/// Text lists (one URL per line), CSV and TSV (with a header row; CSV.swift parses them) and JSONL (one object per
/// line). A row that gives no URL (none in its column, not `http`/`https`, a line that is not JSON) is returned with
/// its ``TableRow/Problem`` and its place, never thrown: the run counts it and goes on. A CSV that stops parsing
/// (an unclosed quote) ends with one such row saying so.
///
/// ```swift
/// let reader = try TableReader(path: "urls.csv.gz", columns: TableColumns(keep: ["width"]))
/// while let row = try reader.next() { … }
/// ```
public final class TableReader {
    /// The format being read.
    public let format: TableFormat
    /// The columns in use.
    public let columns: TableColumns
    /// The header's column names (CSV, TSV), or empty.
    public private(set) var header: [String] = []
    /// Whether the file was gzip.
    public let isGzip: Bool

    private let chunks: ByteChunks
    private var csv: CSVReader?
    private var stream: ChunkInputStream?
    private var csvIndex: (url: Int, caption: Int?, keep: [Int]) = (0, nil, [])
    private var position = 0
    private var lineNumber = 0
    private var pending: [UInt8] = []
    private var pendingOffset = 0
    private var finished = false

    /// Opens a table.
    /// - Parameters:
    ///   - path: A file, or `-` for standard input.
    ///   - format: The format, or `nil` to take it from the name (`-` and names without a known extension are text).
    ///   - columns: Which columns hold what (CSV, TSV, JSONL).
    /// - Throws: ``TableError`` when the file cannot be read, or a column named in `columns` is not in its header.
    public init(path: String, format: TableFormat? = nil, columns: TableColumns = TableColumns()) throws(TableError) {
        self.format = format ?? TableFormat(fileName: path) ?? .txt
        self.columns = columns
        chunks = try ByteChunks(path: path)
        isGzip = chunks.isGzip
        if self.format == .csv || self.format == .tsv { try openCSV() }
    }

    private func openCSV() throws(TableError) {
        let reader: CSVReader
        let stream = ChunkInputStream(chunks)
        self.stream = stream
        do {
            reader = try CSVReader(
                stream: stream, codecType: UTF8.self, hasHeaderRow: true, trimFields: false,
                delimiter: format == .tsv ? "\t" : ","
            )
        } catch {
            throw .unreadable("it has no header row (\(error)); a \(format.rawValue) table starts with its column names")
        }
        let header = (reader.headerRow ?? []).map { $0.trimmingCharacters(in: .whitespaces) }
        self.header = header
        func index(_ name: String, option: String) throws(TableError) -> Int {
            guard let index = header.firstIndex(of: name) else {
                throw .missingColumn(option: option, name: name, columns: header)
            }
            return index
        }
        let url = try index(columns.url, option: "--url-col")
        var caption: Int?
        if let name = columns.caption {
            caption = try index(name, option: "--caption-col")
        } else {
            caption = header.firstIndex(of: "caption")
        }
        var keep: [Int] = []
        for name in columns.keep { keep.append(try index(name, option: "--keep-cols")) }
        csvIndex = (url, caption, keep)
        csv = reader
    }

    /// The next row, or `nil` at the end of the table.
    /// - Throws: ``TableError/unreadable(_:)`` when reading fails (an I/O error, corrupt gzip data).
    public func next() throws(TableError) -> TableRow? {
        guard !finished else { return nil }
        switch format {
        case .csv, .tsv: return try nextCSVRow()
        case .txt, .jsonl:
            while let line = try nextLine() {
                lineNumber += 1
                if let row = try row(fromLine: line) { return row }
            }
            finished = true
            return nil
        }
    }

    // MARK: CSV, TSV

    private func nextCSVRow() throws(TableError) -> TableRow? {
        guard let csv else { return nil }
        guard let fields = csv.next() else {
            finished = true
            if let error = stream?.streamError as? TableError { throw error }
            if let error = csv.error {
                // CSV.swift stops at the first field it cannot parse: report it once, as the row it stopped at.
                return makeRow(url: .failure(.init(reason: "the \(format.rawValue) does not parse from here on (\(error)); the rest of the table is skipped")))
            }
            return nil
        }
        if fields.count == 1, fields[0].isEmpty { return try nextCSVRow() }  // a blank line
        func field(_ index: Int) -> String? { index < fields.count ? fields[index] : nil }
        let raw = field(csvIndex.url)?.trimmingSpaces() ?? ""
        let caption = csvIndex.caption.flatMap(field)
        let kept = zip(columns.keep, csvIndex.keep).map { name, index in
            KeptColumn(name: name, json: field(index).map(Self.json) ?? "null")
        }
        return makeRow(url: Self.parseURL(raw), caption: caption, columns: kept)
    }

    // MARK: Text, JSONL

    private func row(fromLine bytes: ArraySlice<UInt8>) throws(TableError) -> TableRow? {
        var line = String(decoding: bytes, as: UTF8.self)
        if line.hasSuffix("\r") { line.removeLast() }
        let trimmed = line.trimmingSpaces()
        if trimmed.isEmpty { return nil }
        if format == .txt {
            if trimmed.hasPrefix("#") { return nil }
            let first = String(trimmed.split(whereSeparator: { $0 == " " || $0 == "\t" }).first ?? "")
            return makeRow(url: Self.parseURL(first))
        }
        guard let object = (try? JSONSerialization.jsonObject(with: Data(trimmed.utf8))) as? [String: Any] else {
            return makeRow(url: .failure(.init(reason: "not a JSON object: \(trimmed.prefix(80))")))
        }
        let url: Result<URL, TableRow.Problem>
        switch object[columns.url] {
        case let text as String: url = Self.parseURL(text.trimmingSpaces())
        case nil, is NSNull: url = .failure(.init(reason: "no \"\(columns.url)\" field"))
        default: url = .failure(.init(reason: "\"\(columns.url)\" is not a string"))
        }
        let caption = (object[columns.caption ?? "caption"]).flatMap(Self.text)
        let kept = columns.keep.map { name in KeptColumn(name: name, json: object[name].map(Self.json) ?? "null") }
        return makeRow(url: url, caption: caption, columns: kept)
    }

    /// The next line's bytes (without its newline), or `nil` at the end.
    private func nextLine() throws(TableError) -> ArraySlice<UInt8>? {
        var carried: [UInt8] = []
        while true {
            if pendingOffset < pending.count {
                if let newline = pending[pendingOffset...].firstIndex(of: 0x0A) {
                    let slice = pending[pendingOffset..<newline]
                    pendingOffset = newline + 1
                    if carried.isEmpty { return slice }
                    carried.append(contentsOf: slice)
                    return carried[...]
                }
                carried.append(contentsOf: pending[pendingOffset...])
            }
            guard let chunk = try chunks.next() else {
                pending = []
                pendingOffset = 0
                return carried.isEmpty ? nil : carried[...]
            }
            pending = chunk
            pendingOffset = 0
        }
    }

    // MARK: Rows

    private func makeRow(url: Result<URL, TableRow.Problem>, caption: String? = nil, columns: [KeptColumn] = []) -> TableRow {
        defer { position += 1 }
        let place = format.hasColumns && format != .jsonl ? "row \(position + 1)" : "line \(lineNumber)"
        return TableRow(position: position, place: place, url: url, caption: caption, columns: columns)
    }

    private static func parseURL(_ text: String) -> Result<URL, TableRow.Problem> {
        guard !text.isEmpty else { return .failure(.init(reason: "no URL")) }
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
              let host = url.host, !host.isEmpty else {
            return .failure(.init(reason: "not an http(s) URL: \(text.prefix(200))"))
        }
        return .success(url)
    }

    private static func text(_ value: Any) -> String? {
        switch value {
        case let text as String: return text
        case is NSNull: return nil
        case let number as NSNumber: return number.stringValue
        default: return nil
        }
    }

    private static func json(_ value: Any) -> String {
        if value is NSNull { return "null" }
        guard let data = try? JSONSerialization.data(withJSONObject: value, options: [.fragmentsAllowed, .withoutEscapingSlashes, .sortedKeys]) else {
            return "null"
        }
        return String(decoding: data, as: UTF8.self)
    }
}
