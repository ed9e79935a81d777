import Foundation
import MirrorParquet
import Testing

/// A file of `Tests/MirrorKitTests/Fixtures/parquet/`, written by a real writer (scripts/fixtures/make_parquet_fixtures.py), with
/// what pyarrow reads from it. Found from this source file's path: the fixtures are shared with MirrorKit's tests and
/// not copied into this target.
struct Fixture: CustomTestStringConvertible, Sendable {
    static let directory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("MirrorKitTests/Fixtures/parquet")

    let name: String

    var testDescription: String { name }
    var url: URL { Self.directory.appendingPathComponent(name + ".parquet") }

    private func sibling(_ suffix: String) -> URL { Self.directory.appendingPathComponent(name + suffix) }

    /// Every fixture with a `.parquet` file.
    static var all: [Fixture] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        return names.filter { $0.hasSuffix(".parquet") }.map { Fixture(name: String($0.dropLast(8))) }.sorted { $0.name < $1.name }
    }

    /// The fixtures pyarrow reads, with their expected rows.
    static var readable: [Fixture] { all.filter { FileManager.default.fileExists(atPath: $0.sibling(".expected.jsonl").path) } }
    /// The fixtures the reader must refuse, with a fragment of the message.
    static var refused: [Fixture] { all.filter { FileManager.default.fileExists(atPath: $0.sibling(".error").path) } }

    func bytes() throws -> [UInt8] { [UInt8](try Data(contentsOf: url)) }

    /// The columns to read and the rows pyarrow read.
    func expected() throws -> (columns: [String], rows: [[Expected]]) {
        let text = try String(contentsOf: sibling(".expected.jsonl"), encoding: .utf8)
        let lines = text.split(separator: "\n", omittingEmptySubsequences: true)
        struct Header: Decodable { let columns: [String] }
        let decoder = JSONDecoder()
        let header = try decoder.decode(Header.self, from: Data(try #require(lines.first).utf8))
        let rows = try lines.dropFirst().map { try decoder.decode([Expected].self, from: Data($0.utf8)) }
        return (header.columns, rows)
    }

    var errorFragment: String? { try? String(contentsOf: sibling(".error"), encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines) }

    var unsupportedColumns: [String] {
        ((try? String(contentsOf: sibling(".unsupported"), encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
    }
}

/// A value of an expected file, decoded as JSON keeps it (integers exactly, up to UInt64).
enum Expected: Decodable, Equatable, CustomStringConvertible {
    case null, bool(Bool), int(Int64), uint(UInt64), double(Double), string(String)
    indirect case list([Expected])

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Int64.self) {
            self = .int(value)
        } else if let value = try? container.decode(UInt64.self) {
            self = .uint(value)
        } else if let value = try? container.decode(Double.self) {
            self = .double(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else {
            self = .list(try container.decode([Expected].self))
        }
    }

    var description: String {
        switch self {
        case .null: "null"
        case .bool(let value): "\(value)"
        case .int(let value): "\(value)"
        case .uint(let value): "\(value)"
        case .double(let value): "\(value)"
        case .string(let value): "\"\(value)\""
        case .list(let items): "[" + items.map(\.description).joined(separator: ",") + "]"
        }
    }

    /// Whether `value` is what pyarrow read: numbers exactly, bytes as base64, non-finite doubles as their names.
    func matches(_ value: ParquetValue) -> Bool {
        switch (self, value) {
        case (.null, .null): return true
        case (.bool(let a), .bool(let b)): return a == b
        case (.int(let a), .int(let b)): return a == b
        case (.int(let a), .uint(let b)): return a >= 0 && UInt64(a) == b
        case (.uint(let a), .uint(let b)): return a == b
        case (.int(let a), .double(let b)): return Double(exactly: a) == b
        case (.double(let a), .double(let b)): return a == b && a.sign == b.sign
        case (.string(let a), .string(let b)): return a == b
        case (.string(let a), .bytes(let b)): return a == Data(b).base64EncodedString()
        case (.string(let a), .double(let b)):
            return (a == "NaN" && b.isNaN) || (a == "Infinity" && b == .infinity) || (a == "-Infinity" && b == -.infinity)
        case (.list(let a), .list(let b)): return a.count == b.count && zip(a, b).allSatisfy { $0.matches($1) }
        default: return false
        }
    }
}

/// A byte source that counts what is read through it.
final class CountingBytes: ParquetByteReading, @unchecked Sendable {
    private let base: ParquetMemoryBytes
    private let lock = NSLock()
    private var counted = 0
    private var ranges: [Range<Int>] = []

    init(_ bytes: [UInt8]) { base = ParquetMemoryBytes(bytes) }

    var size: Int { base.size }
    var bytesRead: Int { lock.withLock { counted } }
    var rangesRead: [Range<Int>] { lock.withLock { ranges } }

    func bytes(at offset: Int, count: Int) throws(ParquetError) -> [UInt8] {
        lock.withLock {
            counted += count
            ranges.append(offset..<(offset + count))
        }
        return try base.bytes(at: offset, count: count)
    }
}

/// Reads every row of `columns` (nil: all), or the error that stopped it.
func readAll(_ file: ParquetFile, columns: [String]? = nil) -> (rows: [[ParquetValue]], error: ParquetError?) {
    var rows: [[ParquetValue]] = []
    do throws(ParquetError) {
        var iterator = try file.rows(columns: columns).makeIterator()
        while let row = try iterator.next() { rows.append(row) }
        return (rows, nil)
    } catch {
        return (rows, error)
    }
}
