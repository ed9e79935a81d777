// libFuzzer harness for MirrorParquet: the footer's Thrift, the schema's lists, page headers, the codecs, the
// encodings and the reassembly of rows, from bytes in memory.
//
// Not part of Package.swift: `scripts/fuzz/fuzz parquet` compiles it with `-sanitize=fuzzer,address -parse-as-library`
// against MirrorParquet built in `.build-fuzz` (and the Debian decompressors, not instrumented). The input is a whole
// file; the seeds are the real writers' files of Tests/MirrorKitTests/Fixtures/parquet.
//
// Two modes. An input that starts with `PAR1` is a whole file. Any other is one column chunk's bytes (page headers
// and pages) behind two bytes that choose the column (a scalar of each physical type, optional or not, a string, a
// decimal, a list of lists, a bare repeated field) and the codec; the harness wraps it in a file with a footer for
// that column, so that mutations spend themselves on pages and encodings rather than on the footer's Thrift (a whole
// file runs at ~100 executions a second, a chunk at thousands).
//
// Invariants checked besides "no trap, no memory error, no leak of the limits": every row has one value per column
// asked for and renders as JSON; a column the schema calls unreadable is refused when asked for alone; every error
// describes itself in one line. The limits are smaller than the defaults so that an input stays inside libFuzzer's
// memory limit whatever sizes it states.
import MirrorParquet

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzParquetFile(_ start: UnsafeRawPointer?, _ count: Int) -> CInt {
    let input = [UInt8](UnsafeRawBufferPointer(start: count > 0 ? start : nil, count: count))
    let bytes = input.starts(with: Array("PAR1".utf8)) ? input : wrapChunk(input)
    let configuration = ParquetFile.Configuration {
        $0.maxFooterSize = 1 << 20
        $0.maxPageSize = 8 << 20
        $0.maxValuesPerPage = 1 << 16
        $0.maxColumnChunkSize = 1 << 20
    }
    do throws(ParquetError) {
        let file = try ParquetFile(bytes: bytes, configuration: configuration)
        _ = file.schema.description
        let readable = file.schema.columns.filter(\.isReadable).map(\.name)
        for column in file.schema.columns where !column.isReadable {
            do throws(ParquetError) {
                _ = try file.rows(columns: [column.name])
                preconditionFailure("column \(column.name) is unreadable, yet rows(columns:) took it")
            } catch {
                check(error)
            }
        }
        guard !readable.isEmpty else { return 0 }
        var iterator = try file.rows(columns: readable).makeIterator()
        var rows = 0
        while rows < 5_000, let row = try iterator.next() {
            precondition(row.count == readable.count, "a row of \(row.count) values for \(readable.count) columns")
            for value in row { _ = value.jsonText }
            rows += 1
        }
    } catch {
        check(error)
    }
    return 0
}

private func check(_ error: ParquetError) {
    let text = error.description
    precondition(!text.isEmpty && !text.contains("\n") && !text.contains("\r"), "an error that is not one line: \(text)")
}

// MARK: - Chunk mode

/// The Thrift compact protocol's writing side, as much as a footer needs.
private struct CompactWriter {
    var bytes: [UInt8] = []
    private var lastIDs: [Int] = [0]

    mutating func varint(_ value: UInt64) {
        var value = value
        while value >= 0x80 {
            bytes.append(UInt8(value & 0x7F) | 0x80)
            value >>= 7
        }
        bytes.append(UInt8(value))
    }

    mutating func field(_ id: Int, _ type: UInt8) {
        bytes.append(UInt8(id - lastIDs[lastIDs.count - 1]) << 4 | type)  // ids rise by 1 to 15 here
        lastIDs[lastIDs.count - 1] = id
    }

    mutating func i32(_ id: Int, _ value: Int64) {
        field(id, 5)
        varint(UInt64(bitPattern: (value << 1) ^ (value >> 63)))
    }

    mutating func i64(_ id: Int, _ value: Int64) {
        field(id, 6)
        varint(UInt64(bitPattern: (value << 1) ^ (value >> 63)))
    }

    mutating func string(_ id: Int, _ value: String) {
        field(id, 8)
        varint(UInt64(value.utf8.count))
        bytes += Array(value.utf8)
    }

    mutating func structure(_ body: (inout CompactWriter) -> Void) {
        lastIDs.append(0)
        body(&self)
        bytes.append(0)
        lastIDs.removeLast()
    }

    mutating func structField(_ id: Int, _ body: (inout CompactWriter) -> Void) {
        field(id, 12)
        structure(body)
    }

    mutating func listHeader(_ id: Int, type: UInt8, count: Int) {
        field(id, 9)
        bytes.append(UInt8(count) << 4 | type)  // fewer than 15 here
    }
}

/// A schema element: name, physical type (nil for a group), repetition, children, converted type, type length, scale
/// and precision.
private typealias Element = (name: String, type: Int64?, repetition: Int64, children: Int64, converted: Int64?,
                             length: Int64?, scale: Int64?)

/// The columns chunk mode chooses from, each as its schema elements below the root and its leaf's path: 0 INT32,
/// 1 optional STRING, 2 optional list<list<double>> (3-level), 3 optional BOOLEAN, 4 INT64 TIMESTAMP_MICROS, 5 optional
/// FIXED_LEN_BYTE_ARRAY(16) DECIMAL(38,10), 6 optional INT96, 7 repeated INT32, 8 optional FLOAT, 9 BYTE_ARRAY,
/// 10 optional INT64, 11 optional DOUBLE, 12 optional INT32 (scripts/fuzz/fuzz_parquet_seeds.py picks them by file).
private let columns: [(elements: [Element], path: [String])] = [
    ([("x", 1, 0, 0, nil, nil, nil)], ["x"]),
    ([("x", 6, 1, 0, 0, nil, nil)], ["x"]),
    ([("x", nil, 1, 1, 3, nil, nil), ("list", nil, 2, 1, nil, nil, nil), ("element", nil, 1, 1, 3, nil, nil),
      ("list", nil, 2, 1, nil, nil, nil), ("element", 5, 1, 0, nil, nil, nil)], ["x", "list", "element", "list", "element"]),
    ([("x", 0, 1, 0, nil, nil, nil)], ["x"]),
    ([("x", 2, 0, 0, 10, nil, nil)], ["x"]),
    ([("x", 7, 1, 0, 5, 16, 10)], ["x"]),
    ([("x", 3, 1, 0, nil, nil, nil)], ["x"]),
    ([("x", 1, 2, 0, nil, nil, nil)], ["x"]),
    ([("x", 4, 1, 0, nil, nil, nil)], ["x"]),
    ([("x", 6, 0, 0, nil, nil, nil)], ["x"]),
    ([("x", 2, 1, 0, nil, nil, nil)], ["x"]),
    ([("x", 5, 1, 0, nil, nil, nil)], ["x"]),
    ([("x", 1, 1, 0, nil, nil, nil)], ["x"]),
]

/// `[column selector] [codec] chunk…` as a Parquet file of one row group of that column, the chunk its only bytes.
private func wrapChunk(_ input: [UInt8]) -> [UInt8] {
    let column = columns[Int(input.first ?? 0) % columns.count]
    let codec = Int64(input.dropFirst().first ?? 0) % 8
    let chunk = Array(input.dropFirst(2))
    let rows: Int64 = 1 << 20  // more than any chunk here holds: the chunk's end ends the reading
    var footer = CompactWriter()
    footer.structure { meta in
        meta.i32(1, 2)
        meta.listHeader(2, type: 12, count: 1 + column.elements.count)
        meta.structure { root in
            root.string(4, "schema")
            root.i32(5, 1)
        }
        for element in column.elements {
            meta.structure { writer in
                if let type = element.type { writer.i32(1, type) }
                if let length = element.length { writer.i32(2, length) }
                writer.i32(3, element.repetition)
                writer.string(4, element.name)
                if element.children > 0 { writer.i32(5, element.children) }
                if let converted = element.converted { writer.i32(6, converted) }
                if let scale = element.scale {
                    writer.i32(7, scale)
                    writer.i32(8, 38)
                }
            }
        }
        meta.i64(3, rows)
        meta.listHeader(4, type: 12, count: 1)
        meta.structure { group in
            group.listHeader(1, type: 12, count: 1)
            group.structure { chunkWriter in
                chunkWriter.i64(2, 4)
                chunkWriter.structField(3) { writer in
                    writer.i32(1, column.elements.last?.type ?? 1)
                    writer.listHeader(2, type: 5, count: 0)
                    writer.listHeader(3, type: 8, count: column.path.count)
                    for name in column.path {
                        writer.varint(UInt64(name.utf8.count))
                        writer.bytes += Array(name.utf8)
                    }
                    writer.i32(4, codec)
                    writer.i64(5, rows)
                    writer.i64(6, Int64(chunk.count))
                    writer.i64(7, Int64(max(chunk.count, 1)))
                    writer.i64(9, 4)
                }
            }
            group.i64(2, Int64(chunk.count))
            group.i64(3, rows)
        }
    }
    let length = UInt32(footer.bytes.count)
    return Array("PAR1".utf8) + chunk + (chunk.isEmpty ? [0] : []) + footer.bytes
        + [UInt8(length & 0xFF), UInt8(length >> 8 & 0xFF), UInt8(length >> 16 & 0xFF), UInt8(length >> 24)]
        + Array("PAR1".utf8)
}
