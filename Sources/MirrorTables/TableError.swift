
/// Why a table cannot be read at all, or from some row on (a bad row is not an error: it is counted and reported, and
/// the run goes on).
public enum TableError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The file cannot be opened or read, or its gzip data is corrupt.
    case unreadable(String)
    /// A column named on the command line is not in the table's header.
    case missingColumn(option: String, name: String, columns: [String])
    /// A quoted field that never closes: still open at the end of the table (`limit` nil), or longer than `limit` bytes.
    /// The table cannot be split into rows from `line` on (everything after the quote would be one field), so reading
    /// stops there; the rows before it were read.
    /// - Parameters:
    ///   - table: The table's path as given, or "standard input".
    ///   - line: The line the quote opened on.
    ///   - lastLine: The line reading stopped on (the table's last line, or where the field passed `limit`).
    case openQuote(table: String, line: Int, lastLine: Int, limit: Int?)
    /// A Parquet file that cannot be read from some row on (or at all): not Parquet, corrupt, or using a feature the
    /// reader does not read, which `reason` names. The rows before it were read.
    case parquet(table: String, reason: String)

    /// Whether the table's own bytes are malformed (exit 65, `EX_DATAERR`), rather than the file unreadable or the
    /// command line wrong.
    public var isMalformed: Bool {
        switch self {
        case .openQuote, .parquet: true
        default: false
        }
    }

    public var description: String {
        switch self {
        case let .unreadable(reason):
            return "cannot read the table: \(reason)"
        case let .missingColumn(option, name, columns):
            // Names as printable text: a control character or a byte-order mark shown escaped, never written raw.
            let listed = columns.prefix(20).map { name in
                name.unicodeScalars.map { $0.properties.generalCategory == .control || $0 == "\u{FEFF}" ? "\\u{\(String($0.value, radix: 16))}" : String($0) }.joined()
            }.joined(separator: ", ")
            return "the table has no column \"\(name)\"; name its column with \(option) (its columns: \(listed))"
        case let .openQuote(table, line, lastLine, limit):
            let what = if let limit {
                "runs past \(TableReader.size(limit)) without closing (still open on line \(lastLine))"
            } else {
                "is still open at the end of the table (line \(lastLine))"
            }
            return "\(table): a quoted field opened on line \(line) \(what); close the quote or fix the row"
        case let .parquet(table, reason):
            return "\(table): cannot read it as Parquet: \(reason)"
        }
    }
}
