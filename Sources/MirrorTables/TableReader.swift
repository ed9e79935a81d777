import Foundation
import MirrorCore
import MirrorModel

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
    /// What the served bytes must hash to (the `--verify-hash` column's value), or `nil`: no such column, or an empty
    /// value.
    public var expectedDigest: ExpectedDigest?
    /// The boxes to blur (the `--blur-col` column's value: none for an empty or missing value), why the value is not a
    /// list of boxes, or `nil` when the table has no box column.
    public var blurBoxes: Result<BlurBoxes, BlurBoxes.Malformed>?

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
    /// The column holding the digest the served bytes must have (`--verify-hash`), or `nil`.
    public var hash: String?
    /// The digest's algorithm (`--hash`). Default SHA-256.
    public var hashAlgorithm: ExpectedDigest.Algorithm = .sha256
    /// The column holding the boxes to blur (`--blur-col`: ``BlurBoxes``), or `nil`.
    public var blur: String?

    public init(url: String = "url", caption: String? = nil, keep: [String] = [], hash: String? = nil,
                hashAlgorithm: ExpectedDigest.Algorithm = .sha256, blur: String? = nil) {
        self.url = url
        self.caption = caption
        self.keep = keep
        self.hash = hash
        self.hashAlgorithm = hashAlgorithm
        self.blur = blur
    }
}

/// Reads a table of URLs row by row, as bytes, streaming: a 10-million-row file is never held whole, gzip or not, and
/// neither is a line of any length.
///
/// Text lists (one URL per line), CSV and TSV (with a header row) and JSONL (one object per line), split into rows by
/// ``RecordScanner`` before anything is decoded, so row N of the table is key N whatever its encoding. A field's bytes
/// are then read as text by `String(utf8OrWindows1252:)` (MirrorCore): UTF-8, each byte that is not part of valid UTF-8
/// read as Windows-1252 (a caption keeps every character); a URL keeps its bytes (`String(urlBytes:)`: one that is not
/// UTF-8 is sent percent-encoded as itself, `%E9`).
///
/// A row that gives no URL is returned with its ``TableRow/Problem`` and its place, never thrown: the run counts it and
/// goes on. That includes a row or line longer than ``Limits/record`` (1 MiB; read to its end without being held), a
/// URL longer than ``Limits/url`` (64 KiB), a JSONL line that is not UTF-8 (so not JSON) or nested deeper than
/// ``Limits/jsonDepth``. A table that cannot be split into rows from some point on — a quoted field still open at the
/// end of the table, or longer than ``Limits/record`` — throws ``TableError/openQuote(table:line:lastLine:limit:)``
/// naming the line where the quote opened, after the rows before it.
///
/// ```swift
/// let reader = try TableReader(path: "urls.csv.gz", columns: TableColumns(keep: ["width"]))
/// while let row = try reader.next() { … }
/// ```
public final class TableReader {
    /// How much of a table one row may hold.
    public struct Limits: Sendable, Hashable {
        /// The longest row (a CSV or TSV record, a line of a text list or JSONL), and the longest quoted field: 1 MiB.
        /// Far above any real row (LAION's longest captions are a few KB), and the most a row costs in memory.
        public var record = 1 << 20
        /// The longest URL: 64 KiB, eight times what Apache and nginx accept in a request line by default (8 KB; libcurl
        /// takes up to 8 MB): a longer "URL" is a mistake in the table, not an image.
        public var url = 64 << 10
        /// The deepest nesting of arrays and objects in a JSONL line: 512, the bound of Foundation's JSON parser on
        /// Linux (which accepts 512 and says only "not in the correct format" at 513), checked first so the row can
        /// say why.
        public var jsonDepth = 512

        public init() {}
    }

    /// The format being read.
    public let format: TableFormat
    /// The columns in use.
    public let columns: TableColumns
    /// The header's column names (CSV, TSV), or empty.
    public private(set) var header: [String] = []
    /// Whether the file was gzip.
    public let isGzip: Bool
    /// The bounds rows are read with.
    public let limits: Limits

    private let scanner: RecordScanner
    private var csvIndex: (url: Int, caption: Int?, keep: [Int], hash: Int?, blur: Int?) = (0, nil, [], nil, nil)
    private var position = 0
    private var finished = false

    /// The most bytes of one row the reader held at once (not counting the 256 KiB chunk being read): bounded by
    /// ``Limits/record`` whatever a line holds.
    var peakHeldBytes: Int { scanner.peakHeldBytes }

    /// Opens a table.
    /// - Parameters:
    ///   - path: A file, or `-` for standard input.
    ///   - format: The format, or `nil` to take it from the name (`-` and names without a known extension are text).
    ///   - columns: Which columns hold what (CSV, TSV, JSONL).
    ///   - limits: How much of the table one row may hold.
    /// - Throws: ``TableError`` when the file cannot be read, its header row cannot (an open quote in it), or a column
    ///   named in `columns` is not in its header.
    public init(path: String, format: TableFormat? = nil, columns: TableColumns = TableColumns(), limits: Limits = Limits()) throws(TableError) {
        let format = format ?? TableFormat(fileName: path) ?? .txt
        self.format = format
        self.columns = columns
        self.limits = limits
        let chunks = try ByteChunks(path: path)
        isGzip = chunks.isGzip
        let syntax: RecordScanner.Syntax = switch format {
        case .csv: .delimited(UInt8(ascii: ","))
        case .tsv: .delimited(UInt8(ascii: "\t"))
        case .txt, .jsonl: .lines
        }
        scanner = RecordScanner(chunks, syntax: syntax, recordLimit: limits.record, table: path == "-" ? "standard input" : path)
        if format == .csv || format == .tsv { try readHeader() }
    }

    private func readHeader() throws(TableError) {
        guard try scanner.next() else {
            throw .unreadable("it has no header row; a \(format.rawValue) table starts with its column names")
        }
        guard !scanner.isOverLimit else {
            throw .unreadable("its header row is longer than \(Self.size(limits.record)); a \(format.rawValue) table starts with its column names")
        }
        // A table saved as UTF-16 (Excel's "Unicode text", PowerShell's default) has a NUL beside every ASCII byte: say so,
        // rather than list its column names with raw NUL and byte-order-mark bytes in them.
        let first = scanner.field(0)
        if first.starts(with: [0xFF, 0xFE]) || first.starts(with: [0xFE, 0xFF]) || (0..<scanner.fieldCount).contains(where: { scanner.field($0).contains(0) }) {
            throw .unreadable("it is UTF-16, and mirror reads UTF-8 tables: convert it first (iconv -f UTF-16 -t UTF-8 TABLE > TABLE.utf8)")
        }
        let header = (0..<scanner.fieldCount).map { String(utf8OrWindows1252: scanner.field($0)).trimmingCharacters(in: .whitespaces) }
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
        let hash = try columns.hash.map { name throws(TableError) in try index(name, option: "--verify-hash") }
        let blur = try columns.blur.map { name throws(TableError) in try index(name, option: "--blur-col") }
        csvIndex = (url, caption, keep, hash, blur)
    }

    /// The next row, or `nil` at the end of the table.
    /// - Throws: ``TableError/unreadable(_:)`` when reading fails (an I/O error, corrupt gzip data);
    ///   ``TableError/openQuote(table:line:lastLine:limit:)`` at a quoted field that never closes. Either ends the table:
    ///   the next call returns `nil`.
    public func next() throws(TableError) -> TableRow? {
        guard !finished else { return nil }
        do {
            while try scanner.next() {
                let row = switch format {
                case .csv, .tsv: delimitedRow()
                case .txt: textRow()
                case .jsonl: jsonRow()
                }
                if let row { return row }
            }
        } catch {
            finished = true
            throw error
        }
        finished = true
        return nil
    }

    // MARK: CSV, TSV

    private func delimitedRow() -> TableRow? {
        guard !scanner.isOverLimit else {
            return makeRow(url: .failure(.init(reason: "the row is longer than \(Self.size(limits.record)) (it starts on line \(scanner.recordLine))")))
        }
        let count = scanner.fieldCount
        if count == 1, scanner.field(0).isEmpty { return nil }  // a blank line
        func field(_ index: Int) -> ArraySlice<UInt8>? { index < count ? scanner.field(index) : nil }
        let url = parseURL(field(csvIndex.url).map(String.init(urlBytes:))?.trimmingSpaces() ?? "")
        let caption = csvIndex.caption.flatMap(field).map(String.init(utf8OrWindows1252:))
        let kept = zip(columns.keep, csvIndex.keep).map { name, index in
            KeptColumn(name: name, json: field(index).map { Self.json(String(utf8OrWindows1252: $0)) } ?? "null")
        }
        var row = makeRow(url: url, caption: caption, columns: kept)
        row.expectedDigest = csvIndex.hash.flatMap(field).flatMap { digest(String(utf8OrWindows1252: $0)) }
        row.blurBoxes = csvIndex.blur.map { index in boxes(field(index) ?? []) }
        return row
    }

    // MARK: Text, JSONL

    /// The current line's bytes without a trailing CR.
    private func lineBytes() -> ArraySlice<UInt8> {
        let bytes = scanner.field(0)
        return bytes.last == UInt8(ascii: "\r") ? bytes.dropLast() : bytes
    }

    private func textRow() -> TableRow? {
        guard !scanner.isOverLimit else {
            return makeRow(url: .failure(.init(reason: "the line is longer than \(Self.size(limits.record))")))
        }
        let trimmed = String(urlBytes: lineBytes()).trimmingSpaces()
        if trimmed.isEmpty || trimmed.hasPrefix("#") { return nil }
        let first = String(trimmed.split(whereSeparator: { $0 == " " || $0 == "\t" }).first ?? "")
        return makeRow(url: parseURL(first))
    }

    private func jsonRow() -> TableRow? {
        guard !scanner.isOverLimit else {
            return makeRow(url: .failure(.init(reason: "the line is longer than \(Self.size(limits.record))")))
        }
        let bytes = lineBytes()
        guard let line = String(validating: bytes, as: UTF8.self) else {
            let offset = String.firstInvalidUTF8(in: bytes) ?? 0
            let byte = bytes[bytes.startIndex + offset]
            return makeRow(url: .failure(.init(reason: "not UTF-8, so not JSON (byte 0x\(String(byte, radix: 16, uppercase: true)) at column \(offset + 1))")))
        }
        let trimmed = line.trimmingSpaces()
        if trimmed.isEmpty { return nil }
        guard !Self.nesting(of: trimmed.utf8, exceeds: limits.jsonDepth) else {
            return makeRow(url: .failure(.init(reason: "JSON nested deeper than \(limits.jsonDepth) arrays and objects")))
        }
        guard let object = (try? JSONSerialization.jsonObject(with: Data(trimmed.utf8))) as? [String: Any] else {
            return makeRow(url: .failure(.init(reason: "not a JSON object: \(trimmed.prefix(80))")))
        }
        let url: Result<URL, TableRow.Problem>
        switch object[columns.url] {
        case let text as String: url = parseURL(text.trimmingSpaces())
        case nil, is NSNull: url = .failure(.init(reason: "no \"\(columns.url)\" field"))
        default: url = .failure(.init(reason: "\"\(columns.url)\" is not a string"))
        }
        let caption = (object[columns.caption ?? "caption"]).flatMap(Self.text)
        let kept = columns.keep.map { name in KeptColumn(name: name, json: object[name].map(Self.json) ?? "null") }
        var row = makeRow(url: url, caption: caption, columns: kept)
        row.expectedDigest = columns.hash.flatMap { object[$0] }.flatMap(Self.text).flatMap(digest)
        row.blurBoxes = columns.blur.map { name in
            switch object[name] {
            case nil, is NSNull: .success(BlurBoxes())
            case let text as String: boxes(ArraySlice(text.utf8))
            case let value?: boxes(ArraySlice(Self.json(value).utf8))  // an array as JSON gives it, read as text gives it
            }
        }
        return row
    }

    /// The digest a value gives, with the run's algorithm (`nil` for an empty value).
    private func digest(_ value: String) -> ExpectedDigest? {
        ExpectedDigest(algorithm: columns.hashAlgorithm, value: value)
    }

    /// The boxes a value gives, or why it gives none.
    private func boxes(_ value: ArraySlice<UInt8>) -> Result<BlurBoxes, BlurBoxes.Malformed> {
        Result { () throws(BlurBoxes.Malformed) in try BlurBoxes(parsing: value) }
    }

    /// Whether JSON `text` nests arrays and objects deeper than `limit` (brackets inside strings not counted).
    static func nesting(of text: String.UTF8View, exceeds limit: Int) -> Bool {
        var depth = 0
        var inString = false
        var escaped = false
        for byte in text {
            if inString {
                if escaped {
                    escaped = false
                } else if byte == UInt8(ascii: "\\") {
                    escaped = true
                } else if byte == UInt8(ascii: "\"") {
                    inString = false
                }
                continue
            }
            switch byte {
            case UInt8(ascii: "\""): inString = true
            case UInt8(ascii: "["), UInt8(ascii: "{"):
                depth += 1
                if depth > limit { return true }
            case UInt8(ascii: "]"), UInt8(ascii: "}"): depth -= 1
            default: break
            }
        }
        return false
    }

    // MARK: Rows

    private func makeRow(url: Result<URL, TableRow.Problem>, caption: String? = nil, columns: [KeptColumn] = []) -> TableRow {
        defer { position += 1 }
        let place = format.hasColumns && format != .jsonl ? "row \(position + 1)" : "line \(scanner.recordLine)"
        return TableRow(position: position, place: place, url: url, caption: caption, columns: columns)
    }

    private func parseURL(_ text: String) -> Result<URL, TableRow.Problem> {
        Self.parseURL(text, limits: limits)
    }

    /// A field's URL, or why it is none: empty, longer than `limits.url`, or not http(s) with a host.
    static func parseURL(_ text: String, limits: Limits) -> Result<URL, TableRow.Problem> {
        guard !text.isEmpty else { return .failure(.init(reason: "no URL")) }
        let length = text.utf8.count
        guard length <= limits.url else {
            return .failure(.init(reason: "the URL is longer than \(Self.size(limits.url)) (\(Self.grouped(length)) bytes)"))
        }
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
              let host = url.host, !host.isEmpty else {
            return .failure(.init(reason: "not an http(s) URL: \(text.prefix(200))"))
        }
        return .success(url)
    }

    /// `1 MiB`, `64 KiB`, or `N bytes`.
    static func size(_ bytes: Int) -> String {
        if bytes >= 1 << 20, bytes % (1 << 20) == 0 { return "\(bytes >> 20) MiB" }
        if bytes >= 1 << 10, bytes % (1 << 10) == 0 { return "\(bytes >> 10) KiB" }
        return "\(bytes) bytes"
    }

    /// `102,415`.
    private static func grouped(_ number: Int) -> String {
        var digits = String(number)
        var index = digits.endIndex
        while digits.distance(from: digits.startIndex, to: index) > 3 {
            index = digits.index(index, offsetBy: -3)
            digits.insert(",", at: index)
        }
        return digits
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
