// libFuzzer harness for URL tables: text, CSV, TSV and JSONL (gzip when the bytes start like it) through
// `TableReader`, Parquet through `ParquetTableReader`, and a row's boxes to blur (`--blur-col`).
//
// Not part of Package.swift: `scripts/fuzz/fuzz` compiles it with `-sanitize=fuzzer,address -parse-as-library` against
// MirrorTables' closure (MirrorCore, MirrorModel, MirrorParquet, zlib and the Parquet codecs) built in `.build-fuzz`
// with testing enabled — no network, storage or search in it, so CI builds it and fuzzes it for real.
//
// The first byte picks the reader: 255 alone, a box column's value; bit 6, the rest as a Parquet file read for its
// `url`, `caption`, `sha256` and `boxes` columns; else bits 3–4 the text format (txt, csv, tsv, jsonl) and bit 5 tiny
// bounds. Besides "no trap", rows are checked against `TableReader`'s promises: in order, only http(s) URLs, places
// counting up, the buffer within its bound, and no byte replaced by U+FFFD.
import Foundation
@testable import MirrorModel
@testable import MirrorTables

/// Traps unless `boxes` keeps `BlurBoxes`' bounds.
func checkBoxes(_ boxes: BlurBoxes) {
    precondition(boxes.boxes.count <= BlurBoxes.maximumCount, "\(boxes.boxes.count) boxes")
    for box in boxes.boxes {
        for value in [box.x0, box.y0, box.x1, box.y1] { precondition((0...1).contains(value), "a corner at \(value)") }
    }
}

/// Traps unless `reader`'s rows keep the promises every table reader makes: in order, only http(s) URLs, boxes bounded;
/// and what `check` asks of each row (its number, counted from 1).
func checkRows<Reader: TableRowReading>(_ reader: Reader, _ check: (TableRow, Int) -> Void = { _, _ in }) {
    var position = 0
    while let row = try? reader.next() {
        precondition(row.position == position, "row \(row.position) after \(position - 1)")
        position += 1
        if case let .success(url) = row.url {
            precondition(["http", "https"].contains(url.scheme?.lowercased() ?? ""), "accepted \(url)")
        }
        _ = row.key
        if case let .success(boxes)? = row.blurBoxes { checkBoxes(boxes) }
        check(row, position)
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzTables(_ start: UnsafeRawPointer?, _ count: Int) -> CInt {
    guard count > 0, let start else { return 0 }
    let bytes = UnsafeRawBufferPointer(start: start, count: count)
    let selector = bytes[0]
    let data = Data(bytes.dropFirst())

    if selector == 0xFF {
        // A box column's value: at most 1,000 boxes, each corner within the image, or a reason.
        do throws(BlurBoxes.Malformed) {
            checkBoxes(try BlurBoxes(parsing: data))
        } catch {
            precondition(!error.reason.isEmpty, "a value refused without a reason")
        }
        return 0
    }
    let file = FileManager.default.temporaryDirectory.appendingPathComponent("mirror-fuzz-table-\(getpid())")
    try? data.write(to: file)
    defer { try? FileManager.default.removeItem(at: file) }
    if selector & 0x40 != 0 {
        let columns = TableColumns(caption: "caption", hash: "sha256", blur: "boxes")
        if let reader = try? ParquetTableReader(path: file.path, columns: columns) { checkRows(reader) }
        return 0
    }
    // A table of URLs, raw bytes (gzip when they start like it) in each format (bits 3–4 of the selector), with the
    // real bounds or (bit 5) tiny ones, so that a 4 KB input reaches the over-long row, URL, quoted field and nesting:
    // rows in order, only http(s) URLs, the buffer within the bound, places counting up, and no byte replaced by
    // U+FFFD (a caption holds one only if the table did).
    let tableFormat = TableFormat.allCases[Int(selector >> 3) % TableFormat.allCases.count]
    var limits = TableReader.Limits()
    if selector & 0x20 != 0 { (limits.record, limits.url, limits.jsonDepth) = (64, 32, 4) }
    let replacement = Data([0xEF, 0xBF, 0xBD])
    let hadReplacement = data.range(of: replacement) != nil
    // JSONL rows give a digest and boxes too (fields need no header).
    let columns = tableFormat == .jsonl ? TableColumns(hash: "sha256", blur: "boxes") : TableColumns()
    if let reader = try? TableReader(path: file.path, format: tableFormat, columns: columns, limits: limits) {
        var lastLine = 0
        checkRows(reader) { row, position in
            if tableFormat == .csv || tableFormat == .tsv {
                precondition(row.place == "row \(position)", "\(row.place) for row \(position)")
            } else {
                let line = Int(row.place.dropFirst("line ".count)) ?? 0
                precondition(row.place.hasPrefix("line ") && line > lastLine, "\(row.place) after line \(lastLine)")
                lastLine = line
            }
            if !hadReplacement, let caption = row.caption {
                precondition(!caption.unicodeScalars.contains("\u{FFFD}"), "a byte replaced in \(caption.debugDescription)")
            }
            // The buffer's capacity: the bound, and what malloc rounds a block up to (a page at most).
            precondition(reader.peakHeldBytes <= limits.record + 4096, "held \(reader.peakHeldBytes) bytes of a row")
        }
    }
    return 0
}
