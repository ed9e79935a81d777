// libFuzzer harness for the resize path (the CCodecs target): TurboJPEG, libpng, libwebp, giflib and libvips reading
// hostile bytes, and the C between them (the header walks and memory estimates, EXIF orientation, DCT scales, the
// planes path, GIF frames on the screen, the fit's geometry, stb's resample, the blur of `--blur-col`, the encoders).
//
// Not part of Package.swift: `scripts/fuzz/fuzz` builds CCodecs with `-fsanitize=fuzzer-no-link,address` and compiles this
// with `-sanitize=fuzzer,address -parse-as-library` (the Debian libraries are not instrumented; their allocations
// still count against libFuzzer's malloc and RSS limits).
//
// Input: [flags] [size, 2 bytes] then the body. Flags: bits 0-1 the fit (keep-ratio, centre-crop, pad, none), bits 2-3
// the output (JPEG, PNG, WebP; 3 keeps the served format), bit 4 only-if-bigger, bit 5 skips the validator (production
// decodes only what verifies; the decoders are fuzzed past it too), bit 6 computes the PDQ hash of `--dedup near`
// (`pdq.c`: each format's luma decode at its own scale — a JPEG straight to grey, a WebP's luma plane, a GIF's screen
// as luma —, the memory checked against the limit first, the grid turned as EXIF says, the trimmed centres) instead of
// the transform. Size: 1-512, so enlarging is reached. Bit 7 adds a byte after the size, and boxes after it, before the
// body: its value mod 6 is the fit (every one, shorter-side and fixed included), bit 3 a white pad (else a colour), and
// bits 4-7 the number of boxes to blur (0-15), each of 4 bytes, a coordinate (byte − 32) / 191 (a little outside the
// image on both sides), so the blur's geometry, kernels and memory are reached with the resize's.
//
// Invariants checked besides "no trap, no memory error, no allocation past the memory limit": a success has an output
// of positive size within the fit's box, and a failure says why. The memory limit (160 MB) is below libFuzzer's
// -malloc_limit_mb and -rss_limit_mb (512), so a decoder that allocated past what the estimate admitted is reported.
import CCodecs
import Foundation
import MirrorImages

let memoryLimit = 160 << 20

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzCodecs(_ start: UnsafeRawPointer?, _ count: Int) -> CInt {
    guard count > 3, let start else { return 0 }
    let bytes = start.assumingMemoryBound(to: UInt8.self)
    var fit = mirror_codecs_fit(rawValue: UInt32(bytes[0] & 3))
    let onlyIfBigger = bytes[0] & 0x10 != 0
    let skipsValidator = bytes[0] & 0x20 != 0
    let size = Int32((Int(bytes[1]) << 8 | Int(bytes[2])) % 512) + 1
    var header = 3
    var padColor: UInt32 = 0x123456
    var boxes: [mirror_codecs_box] = []
    if bytes[0] & 0x80 != 0 {
        guard count > 4 else { return 0 }
        let extra = bytes[3]
        fit = mirror_codecs_fit(rawValue: UInt32(extra % 6))
        if extra & 0x08 != 0 { padColor = 0xFFFFFF }
        let boxCount = Int(extra >> 4)
        guard count > 4 + 4 * boxCount else { return 0 }
        let coordinate = { (index: Int) in (Float(bytes[index]) - 32) / 191 }
        for box in 0..<boxCount {
            let at = 4 + 4 * box
            boxes.append(mirror_codecs_box(x0: coordinate(at), y0: coordinate(at + 1), x1: coordinate(at + 2), y1: coordinate(at + 3)))
        }
        header = 4 + 4 * boxCount
    }
    let body = UnsafeRawBufferPointer(start: bytes + header, count: count - header)
    let format: ImageFormat
    if skipsValidator {
        guard let sniffed = ImageValidator.sniff(Data(body.prefix(64))) else { return 0 }
        format = sniffed
    } else {
        guard let info = try? ImageValidator().validate(bytes: body) else { return 0 }
        format = info.format
    }
    let codes: [ImageFormat: mirror_codecs_format] = [
        .jpeg: MIRROR_CODECS_JPEG, .png: MIRROR_CODECS_PNG, .webp: MIRROR_CODECS_WEBP, .gif: MIRROR_CODECS_GIF,
        .bmp: MIRROR_CODECS_BMP, .tiff: MIRROR_CODECS_TIFF, .heif: MIRROR_CODECS_HEIF, .avif: MIRROR_CODECS_AVIF,
    ]
    guard let input = codes[format] else { return 0 }
    if bytes[0] & 0x40 != 0 {
        var bytesNeeded = 0
        var message = [CChar](repeating: 0, count: 256)
        let estimated = mirror_codecs_pdq_estimate(body.bindMemory(to: UInt8.self).baseAddress, body.count, input, &bytesNeeded, &message, message.count)
        var hash = mirror_codecs_pdq()
        let status = mirror_codecs_pdq_hash(body.bindMemory(to: UInt8.self).baseAddress, body.count, input, memoryLimit, &hash)
        if estimated == MIRROR_CODECS_OK { precondition(bytesNeeded > 0, "an estimate of nothing") }
        if status == MIRROR_CODECS_OK { precondition(estimated == MIRROR_CODECS_OK && bytesNeeded <= memoryLimit, "a hash past its estimate's limit") }
        if status == MIRROR_CODECS_OK {
            precondition((0...100).contains(hash.quality) && hash.width > 0 && hash.height > 0, "a hash of \(hash.width)x\(hash.height), quality \(hash.quality)")
        } else {
            precondition(hash.message.0 != 0, "a failure without a reason")
        }
        return 0
    }
    let outputs = [MIRROR_CODECS_JPEG, MIRROR_CODECS_PNG, MIRROR_CODECS_WEBP]
    let selector = Int(bytes[0] >> 2 & 3)
    let output = selector < 3 ? outputs[selector] : (format == .gif || format == .bmp ? MIRROR_CODECS_PNG : input)
    var estimate = 0
    var message = [CChar](repeating: 0, count: 256)
    var result = mirror_codecs_output()
    let (estimated, status) = boxes.withUnsafeBufferPointer { corners in
        var request = mirror_codecs_request(
            input_format: input, fit: fit, size: size, only_if_bigger: onlyIfBigger,
            output_format: output, quality: 80, memory_limit: memoryLimit,
            pad_color: padColor, blur_boxes: corners.baseAddress, blur_box_count: Int32(corners.count)
        )
        let estimated = mirror_codecs_estimate(body.bindMemory(to: UInt8.self).baseAddress, body.count, &request, &estimate, &message, message.count)
        return (estimated, mirror_codecs_transform(body.bindMemory(to: UInt8.self).baseAddress, body.count, &request, &result))
    }
    if estimated == MIRROR_CODECS_OK {
        precondition(estimate > 0 && estimate <= memoryLimit, "an estimate of \(estimate) bytes passed the limit")
    }
    if status == MIRROR_CODECS_OK {
        precondition(result.data != nil && result.length > 0 && result.width > 0 && result.height > 0, "a success with no image")
        if fit != MIRROR_CODECS_NONE && !onlyIfBigger {
            precondition(min(result.width, result.height) <= size, "\(result.width)x\(result.height) outside \(size)")
        }
        precondition(result.blurred_boxes >= 0 && Int(result.blurred_boxes) <= boxes.count, "\(result.blurred_boxes) of \(boxes.count) boxes blurred")
        mirror_codecs_free(result.data)
    } else {
        precondition(result.data == nil, "a failure with an image")
        precondition(result.message.0 != 0, "a failure without a reason")
    }
    return 0
}
