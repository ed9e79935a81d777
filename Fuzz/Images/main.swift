// libFuzzer harness for ImageValidator: the header parsers of JPEG, PNG, GIF, WebP, BMP, TIFF and AVIF/HEIF.
//
// Not part of Package.swift: `scripts/fuzz/fuzz` compiles it with `-sanitize=fuzzer,address -parse-as-library`
// against MirrorImages built in `.build-fuzz`. The input is the whole downloaded body.
//
// Invariants checked besides "no trap, no memory error": an accepted image has positive dimensions within the
// pixel limit, and every rejection can be described (messages render bytes from the input). Validated again with
// `readsMarks` (the XMP and C2PA readers, which `Fuzz/Marks` feeds one at a time): the same acceptance and the same
// description but for `marks`, which only JPEG, PNG, GIF and WebP have, each of whose notes is one short line.
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
    // Reading marks never changes the verdict, and its notes render.
    let plain = try? ImageValidator().validate(bytes: bytes)
    let read = try? ImageValidator(readsMarks: true).validate(bytes: bytes)
    precondition((plain == nil) == (read == nil), "reading marks changed whether the image is accepted")
    if var read, let plain {
        if let marks = read.marks {
            precondition([.jpeg, .png, .gif, .webp].contains(read.format), "marks read from \(read.format)")
            for note in marks.notes {
                precondition(!note.isEmpty && note.count <= 201 && !note.contains("\n"), "a note that is not one short line")
            }
            _ = String(describing: marks)
        }
        read.marks = nil
        precondition(read == plain, "reading marks changed the image's description")
    }
    // The early sniff on the first bytes of a response must never trap either.
    _ = ImageValidator.sniff(Data(bytes.prefix(64)))
    return 0
}
