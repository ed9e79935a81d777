/// The top-level columns of a Parquet file, each with the type its values read as.
public struct ParquetSchema: Sendable, Hashable, CustomStringConvertible {
    /// The file's top-level fields, in file order.
    public let columns: [ParquetColumn]
    /// Rows in the file, from its footer.
    public let rowCount: Int64
    /// Row groups in the file: the unit the reader reads at a time.
    public let rowGroupCount: Int
    /// The writer the footer names (`parquet-cpp-arrow version 17.0.0`, `DuckDB version v1.1.0`), if it does.
    public let createdBy: String?

    /// The column called `name`, the first if several are.
    public subscript(name: String) -> ParquetColumn? {
        columns.first { $0.name == name }
    }

    /// One line per column, after a line of counts.
    public var description: String {
        (["\(rowCount) rows in \(rowGroupCount) row groups"] + columns.map { "  " + $0.description }).joined(separator: "\n")
    }
}

/// A top-level column: its name, its type, and whether this reader reads it.
public struct ParquetColumn: Sendable, Hashable, CustomStringConvertible {
    public let name: String
    /// What its values read as; `.unsupported` for the nested types this reader does not read (structs, maps).
    public let type: ParquetType
    /// Whether a row's value may be `null`.
    public let isNullable: Bool

    /// Whether `rows(columns:)` can read it.
    public var isReadable: Bool { type.isReadable }

    /// `caption: string (nullable)`, `face_bboxes: list<list<double>>`.
    public var description: String {
        "\(name): \(type)" + (isNullable ? " (nullable)" : "")
    }
}

/// The type of a column's values: a scalar, a list of them (to any depth), or a type the reader does not read.
public indirect enum ParquetType: Sendable, Hashable, CustomStringConvertible {
    public enum TimeUnit: Sendable, Hashable {
        case milliseconds, microseconds, nanoseconds

        var name: String {
            switch self {
            case .milliseconds: "ms"
            case .microseconds: "us"
            case .nanoseconds: "ns"
            }
        }
    }

    case boolean
    /// INT32 and INT64, and their narrower or unsigned annotations.
    case integer(bitWidth: Int, isSigned: Bool)
    case float
    case double
    /// FIXED_LEN_BYTE_ARRAY(2) annotated FLOAT16; read as `double`.
    case float16
    /// UTF8/STRING and ENUM.
    case string
    case json
    case bytes
    case fixedBytes(length: Int)
    case uuid
    case decimal(precision: Int, scale: Int)
    case date
    case time(TimeUnit)
    /// INT96 is `.timestamp(.nanoseconds, isAdjustedToUTC: true)`.
    case timestamp(TimeUnit, isAdjustedToUTC: Bool)
    case list(ParquetType, elementIsNullable: Bool)
    /// A type named by why it is not read: `struct`, `map`, a list of structs.
    case unsupported(String)

    public var isReadable: Bool {
        switch self {
        case .unsupported: false
        case .list(let element, _): element.isReadable
        default: true
        }
    }

    public var description: String {
        switch self {
        case .boolean: "bool"
        case .integer(let width, let signed): (signed ? "int" : "uint") + String(width)
        case .float: "float"
        case .double: "double"
        case .float16: "float16"
        case .string: "string"
        case .json: "json"
        case .bytes: "bytes"
        case .fixedBytes(let length): "bytes[\(length)]"
        case .uuid: "uuid"
        case .decimal(let precision, let scale): "decimal(\(precision),\(scale))"
        case .date: "date"
        case .time(let unit): "time[\(unit.name)]"
        case .timestamp(let unit, let utc): "timestamp[\(unit.name)\(utc ? ", UTC" : "")]"
        case .list(let element, let nullable): "list<\(element)\(nullable ? "?" : "")>"
        case .unsupported(let reason): "\(reason) (not read)"
        }
    }
}
