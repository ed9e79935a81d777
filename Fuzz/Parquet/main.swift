// libFuzzer harness for MirrorParquet: the footer's Thrift, the schema's lists, page headers, the codecs, the
// encodings and the reassembly of rows, from bytes in memory.
//
// Not part of Package.swift: `scripts/fuzz parquet` compiles it with `-sanitize=fuzzer,address -parse-as-library`
// against MirrorParquet built in `.build-fuzz` (and the Debian decompressors, not instrumented). The input is a whole
// file; the seeds are the real writers' files of Tests/MirrorKitTests/Fixtures/parquet.
//
// Invariants checked besides "no trap, no memory error, no leak of the limits": every row has one value per column
// asked for and renders as JSON; a column the schema calls unreadable is refused when asked for alone; every error
// describes itself in one line. The limits are smaller than the defaults so that an input stays inside libFuzzer's
// memory limit whatever sizes it states.
import MirrorParquet

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzParquetFile(_ start: UnsafeRawPointer?, _ count: Int) -> CInt {
    let bytes = [UInt8](UnsafeRawBufferPointer(start: count > 0 ? start : nil, count: count))
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
