import MirrorStorage
import MirrorFetch
import MirrorSearch

/// Why a table cannot be read at all (a bad row is not an error: it is counted and reported, and the run goes on).
public enum TableError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The file cannot be opened or read, or its gzip data is corrupt.
    case unreadable(String)
    /// A column named on the command line is not in the table's header.
    case missingColumn(option: String, name: String, columns: [String])
    /// The format cannot be told from the name and was not given.
    case unknownFormat(String)

    public var description: String {
        switch self {
        case let .unreadable(reason):
            return "cannot read the table: \(reason)"
        case let .missingColumn(option, name, columns):
            let listed = columns.prefix(20).joined(separator: ", ")
            return "the table has no column \"\(name)\"; name its column with \(option) (its columns: \(listed))"
        case let .unknownFormat(name):
            return "cannot tell the format of \(name); give --input-format txt|csv|tsv|jsonl"
        }
    }
}
