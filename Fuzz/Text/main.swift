// libFuzzer harness for the small parsers of untrusted text: file naming, name templates, cache keys, Retry-After values
// and error-body messages. (URL tables and a row's boxes: Fuzz/Tables.)
//
// Not part of Package.swift: `scripts/fuzz/fuzz` compiles it with `-sanitize=fuzzer,address -parse-as-library`
// against MirrorKit (and MirrorTransport, for `RetryAfter`) built in `.build-fuzz` with testing enabled.
//
// The first byte picks the function (mod 6; 0 does nothing: tables are Fuzz/Tables'); the rest is its input, the
// bytes decoded as UTF-8 (invalid bytes repaired). Besides "no trap", file names are checked against the promises in
// `FileNaming`'s documentation.
import Foundation
import MirrorImages
@testable import MirrorKit
@testable import MirrorCore
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

let formats: [ImageFormat] = [.jpeg, .png, .gif, .webp, .bmp, .tiff, .avif, .heif]

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzText(_ start: UnsafeRawPointer?, _ count: Int) -> CInt {
    guard count > 0, let start else { return 0 }
    let bytes = UnsafeRawBufferPointer(start: start, count: count)
    let selector = bytes[0]
    let data = Data(bytes.dropFirst())
    let text = String(decoding: data, as: UTF8.self)
    let format = formats[Int(selector >> 3) % formats.count]

    switch selector % 6 {
    case 0:
        break  // tables and a row's boxes: Fuzz/Tables
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
