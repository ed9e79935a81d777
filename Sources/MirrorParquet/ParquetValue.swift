import Foundation

/// One value of a row: what a Parquet column's value reads as, its logical type applied.
///
/// - `bool`: BOOLEAN.
/// - `int`: signed integers of 8 to 64 bits (INT32, INT64, INT_8…INT_64).
/// - `uint`: unsigned integers (UINT_8…UINT_64, INTEGER(unsigned)).
/// - `double`: FLOAT (widened exactly), DOUBLE, FLOAT16.
/// - `string`: UTF8/STRING, ENUM and JSON bytes (valid UTF-8, else the reader throws); and the types a string renders
///   best: timestamps (ISO 8601, UTC, `Z`, with the unit's 3, 6 or 9 fractional digits; INT96 too), DATE
///   (`YYYY-MM-DD`), TIME (`HH:MM:SS.fff…`), DECIMAL (plain digits with the scale's fraction), UUID.
/// - `bytes`: BYTE_ARRAY and FIXED_LEN_BYTE_ARRAY without a text annotation (and BSON, INTERVAL).
/// - `list`: a LIST column (or a bare repeated field), nested to any depth; its elements may be `null`.
/// - `null`: an absent value (a null at any level of a list).
///
/// `jsonText` renders a value as compact JSON, so that a `list<list<double>>` column such as DataComp's `face_bboxes`
/// comes out as `[[0.1,0.2,0.3,0.4]]`:
/// ```swift
/// for try await row in try reader.rows(columns: ["url", "face_bboxes"]) {
///     print(row[0].stringValue ?? "", row[1].jsonText)
/// }
/// ```
public indirect enum ParquetValue: Sendable, Hashable, CustomStringConvertible {
    case null
    case bool(Bool)
    case int(Int64)
    case uint(UInt64)
    case double(Double)
    case string(String)
    case bytes([UInt8])
    case list([ParquetValue])

    public var isNull: Bool { self == .null }

    /// The string, for a `string` value.
    public var stringValue: String? {
        if case .string(let text) = self { return text }
        return nil
    }

    /// The integer, for an `int` value or a `uint` value that fits.
    public var int64Value: Int64? {
        switch self {
        case .int(let value): value
        case .uint(let value): Int64(exactly: value)
        default: nil
        }
    }

    /// The number, for `int`, `uint` and `double` values.
    public var doubleValue: Double? {
        switch self {
        case .int(let value): Double(value)
        case .uint(let value): Double(value)
        case .double(let value): value
        default: nil
        }
    }

    /// Compact JSON: `null`, `true`/`false`, integers as digits, doubles in their shortest exact form (`0.1`, `1e-05`;
    /// NaN and infinities, which JSON has no words for, as `null`), strings escaped as RFC 8259 requires (quote,
    /// backslash and control characters; everything else as UTF-8), bytes as a base64 string, lists as arrays.
    public var jsonText: String {
        var text = ""
        appendJSON(to: &text)
        return text
    }

    /// The JSON text, but a string alone is itself, unquoted: what a caption or URL column reads as.
    public var description: String {
        if case .string(let text) = self { return text }
        return jsonText
    }

    private func appendJSON(to text: inout String) {
        switch self {
        case .null: text += "null"
        case .bool(let value): text += value ? "true" : "false"
        case .int(let value): text += String(value)
        case .uint(let value): text += String(value)
        case .double(let value): text += value.isFinite ? "\(value)" : "null"
        case .string(let value): Self.appendQuoted(value, to: &text)
        case .bytes(let value): Self.appendQuoted(Data(value).base64EncodedString(), to: &text)
        case .list(let items):
            text += "["
            for (index, item) in items.enumerated() {
                if index > 0 { text += "," }
                item.appendJSON(to: &text)
            }
            text += "]"
        }
    }

    private static func appendQuoted(_ value: String, to text: inout String) {
        text += "\""
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": text += "\\\""
            case "\\": text += "\\\\"
            case "\n": text += "\\n"
            case "\r": text += "\\r"
            case "\t": text += "\\t"
            case "\u{08}": text += "\\b"
            case "\u{0C}": text += "\\f"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                text += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: text.unicodeScalars.append(scalar)
            }
        }
        text += "\""
    }
}
