// libFuzzer harness for the small parsers of untrusted text: URL tables (text, CSV, TSV, JSONL, gzip), file naming, name templates, cache keys,
// Retry-After values, error-body messages and a row's boxes to blur (`--blur-col`).
//
// Not part of Package.swift: `scripts/fuzz/fuzz` compiles it with `-sanitize=fuzzer,address -parse-as-library`
// against MirrorKit (and MirrorTransport, for `RetryAfter`) built in `.build-fuzz` with testing enabled.
//
// The first byte picks the function (mod 6; 255 alone: a box column's value); the rest is its input: a table's raw bytes, or for the others the bytes
// decoded as UTF-8 (invalid bytes repaired). Besides "no trap", file names are checked against the promises in
// `FileNaming`'s documentation, and tables against `TableReader`'s: rows in order, a bounded buffer, no byte replaced.
import Foundation
import MirrorImages
@testable import MirrorKit
@testable import MirrorCore
@testable import MirrorFetch
@testable import MirrorSearch
@testable import MirrorStorage
import MirrorTransport

/// Traps unless `name` keeps `FileNaming`'s promises.
func checkFileName(_ name: String, limit: Int, _ input: String) {
    precondition(!name.isEmpty, "empty name for \(input.debugDescription)")
    precondition(name != "." && name != "..", "name \(name.debugDescription) is a relative path")
    precondition(!name.hasPrefix("."), "hidden name \(name.debugDescription)")
    precondition(!name.contains("/") && !name.contains("\\"), "separator in \(name.debugDescription)")
    precondition(!name.utf8.contains(0), "NUL in \(name.debugDescription)")
    precondition(name.utf8.count <= limit, "name of \(name.utf8.count) bytes (limit \(limit)): \(name.debugDescription)")
    for scalar in name.unicodeScalars {
        switch scalar.properties.generalCategory {
        case .control, .format, .lineSeparator, .paragraphSeparator:
            preconditionFailure("control or format character U+\(String(scalar.value, radix: 16)) in \(name.debugDescription)")
        default:
            break
        }
    }
}

/// Traps unless `boxes` keeps `BlurBoxes`' bounds.
func checkBoxes(_ boxes: BlurBoxes) {
    precondition(boxes.boxes.count <= BlurBoxes.maximumCount, "\(boxes.boxes.count) boxes")
    for box in boxes.boxes {
        for value in [box.x0, box.y0, box.x1, box.y1] { precondition((0...1).contains(value), "a corner at \(value)") }
    }
}

let formats: [ImageFormat] = [.jpeg, .png, .gif, .webp, .bmp, .tiff, .avif, .heif]

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzText(_ start: UnsafeRawPointer?, _ count: Int) -> CInt {
    guard count > 0, let start else { return 0 }
    let bytes = UnsafeRawBufferPointer(start: start, count: count)
    let selector = bytes[0]
    let data = Data(bytes.dropFirst())
    let text = String(decoding: data, as: UTF8.self)
    let format = formats[Int(selector >> 3) % formats.count]

    if selector == 0xFF {
        // A box column's value: at most 1,000 boxes, each corner within the image, or a reason.
        do throws(BlurBoxes.Malformed) {
            checkBoxes(try BlurBoxes(parsing: data))
        } catch {
            precondition(!error.reason.isEmpty, "a value refused without a reason")
        }
        return 0
    }
    switch selector % 6 {
    case 0:
        // A table of URLs, raw bytes (gzip when they start like it) in each format (bits 3–4 of the selector), with the
        // real bounds or (bit 5) tiny ones, so that a 4 KB input reaches the over-long row, URL, quoted field and nesting:
        // rows in order, only http(s) URLs, the buffer within the bound, places counting up, and no byte replaced by
        // U+FFFD (a caption holds one only if the table did).
        let tableFormat = TableFormat.allCases[Int(selector >> 3) % TableFormat.allCases.count]
        var limits = TableReader.Limits()
        if selector & 0x20 != 0 { (limits.record, limits.url, limits.jsonDepth) = (64, 32, 4) }
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("mirror-fuzz-table-\(getpid())")
        try? data.write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let replacement = Data([0xEF, 0xBF, 0xBD])
        let hadReplacement = data.range(of: replacement) != nil
        // JSONL rows give a digest and boxes too (fields need no header).
        let columns = tableFormat == .jsonl ? TableColumns(hash: "sha256", blur: "boxes") : TableColumns()
        if let reader = try? TableReader(path: file.path, format: tableFormat, columns: columns, limits: limits) {
            var position = 0
            var lastLine = 0
            while let row = try? reader.next() {
                precondition(row.position == position, "row \(row.position) after \(position - 1)")
                position += 1
                if case let .success(url) = row.url {
                    precondition(["http", "https"].contains(url.scheme?.lowercased() ?? ""), "accepted \(url)")
                }
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
                _ = row.key
                if case let .success(boxes)? = row.blurBoxes { checkBoxes(boxes) }
                // The buffer's capacity: the bound, and what malloc rounds a block up to (a page at most).
                precondition(reader.peakHeldBytes <= limits.record + 4096, "held \(reader.peakHeldBytes) bytes of a row")
            }
        }
    case 1:
        let name = FileNaming.sanitize(text)
        checkFileName(name, limit: FileNaming.maximumLength, text)
        checkFileName(FileNaming.fileName(stem: text, format: format), limit: FileNaming.maximumLength, text)
        if let url = URL(string: text) { _ = FileNaming.stem(of: url) }
    case 2:
        // pattern NUL provider NUL id NUL title
        let parts = text.split(separator: "\0", maxSplits: 3, omittingEmptySubsequences: false).map(String.init)
        let pattern = parts[0]
        if (try? NameTemplate.validate(pattern)) != nil {
            let name = NameTemplate(pattern).render(
                provider: parts.count > 1 ? parts[1] : "openverse",
                id: parts.count > 2 ? parts[2] : "id",
                title: parts.count > 3 ? parts[3] : nil,
                index: Int(selector),
                sha256: String(repeating: "ab", count: 32),
                format: format
            )
            checkFileName(name, limit: FileNaming.maximumLength, text)
        }
    case 3:
        if let url = URL(string: text) {
            let key = CacheKey(url: url, droppingQueryItems: ["Fuzz"])
            precondition(key.fileName.utf8.count == 64, "cache file name \(key.fileName)")
            // Normalizing twice changes nothing more.
            if let again = URL(string: key.normalizedURL), key.namespace == nil, !key.normalizedURL.hasPrefix("[") {
                _ = CacheKey(url: again)
            }
        }
    case 4:
        let now = Date(timeIntervalSince1970: 1_700_000_000)
        if let wait = RetryAfter.parse(text, now: now) { precondition(wait >= .zero, "negative wait \(wait)") }
        if let wait = RetryAfter.delay(text, date: text, now: now) { precondition(wait >= .zero, "negative wait \(wait)") }
        _ = ProviderFailure.delayMentioned(in: text)
        if let wait = APIResponse(status: 429, headers: ["Retry-After": text, "Date": text], body: Data()).retryAfterHint {
            precondition(wait > .zero, "non-positive hint \(wait)")
        }
    default:
        let secrets = ["fuzz-secret-0123456789"]
        let detail = ProviderFailure.detail(from: data, secrets: secrets)
        precondition(!detail.contains(secrets[0]), "secret leaked into \(detail.debugDescription)")
        _ = ProviderJSON.parse(data)?.string
    }
    return 0
}
