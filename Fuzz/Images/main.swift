// libFuzzer harness for ImageValidator: the header parsers of JPEG, PNG, GIF, WebP, BMP, TIFF and AVIF/HEIF.
//
// Not part of Package.swift: `scripts/fuzz` compiles it with `-sanitize=fuzzer,address -parse-as-library`
// against MirrorImages built in `.build-fuzz`. The input is the whole downloaded body.
//
// Invariants checked besides "no trap, no memory error": an accepted image has positive dimensions within the
// pixel limit, and every rejection can be described (messages render bytes from the input).
import Foundation
import MirrorImages

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzImageValidator(_ start: UnsafeRawPointer?, _ count: Int) -> CInt {
    let bytes = UnsafeRawBufferPointer(start: count > 0 ? start : nil, count: count)
    // A small limit as well as the default one, so the pixel-limit branches are reached with small headers.
    for validator in [ImageValidator(), ImageValidator(pixelLimit: 4_096)] {
        do {
            let info = try validator.validate(bytes: bytes)
            precondition(info.width > 0 && info.height > 0, "accepted an image with no pixels: \(info)")
            precondition(info.width.multipliedReportingOverflow(by: info.height).partialValue <= validator.pixelLimit,
                         "accepted \(info.width)x\(info.height) over the limit \(validator.pixelLimit)")
            _ = String(describing: info)
        } catch {
            _ = error.description
        }
    }
    // The early sniff on the first bytes of a response must never trap either.
    _ = ImageValidator.sniff(Data(bytes.prefix(64)))
    return 0
}
