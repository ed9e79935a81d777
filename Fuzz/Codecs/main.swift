// libFuzzer harness for the resize path on the codecs (CCodecs' `mirror_codecs_transform`): TurboJPEG, libpng,
// libwebp and giflib reading hostile bytes, and the C between them (DCT scale, EXIF orientation, YCbCr planes, GIF
// frames on the screen, the fit's geometry, stb's resample, the encoders).
//
// Not part of Package.swift: `scripts/fuzz` compiles it with `-sanitize=fuzzer,address -parse-as-library`; the shim's
// `static inline` functions are compiled into this harness, so they are instrumented (the Debian libraries are not).
// Input: [fit and output format] [size] then the body; the body's format is sniffed as a download's would be.
//
// Invariants checked besides "no trap, no memory error": a success has an output of positive size and dimensions
// within the fit's box, and a failure says why.
import CCodecs
import Foundation
import MirrorImages

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzCodecs(_ start: UnsafeRawPointer?, _ count: Int) -> CInt {
    guard count > 2, let start else { return 0 }
    let bytes = start.assumingMemoryBound(to: UInt8.self)
    let fit = Int32(bytes[0] & 3)  // keep-ratio, center-crop, pad, none
    let output = Int32((bytes[0] >> 2) % 3)  // JPEG, PNG, WebP
    let onlyIfBigger: Int32 = bytes[0] & 0x20 != 0 ? 1 : 0
    let size = Int32(bytes[1] % 96) + 1
    let body = UnsafeRawBufferPointer(start: bytes + 2, count: count - 2)
    let codes: [ImageFormat: Int32] = [.jpeg: 0, .png: 1, .webp: 2, .gif: 3]
    guard let format = ImageValidator.sniff(Data(body.prefix(64))), let input = codes[format] else { return 0 }
    var result: UnsafeMutablePointer<UInt8>?
    var length = 0
    var width: Int32 = 0, height: Int32 = 0
    var error = [CChar](repeating: 0, count: 512)
    let status = mirror_codecs_transform(
        body.bindMemory(to: UInt8.self).baseAddress, body.count, input, fit, size, onlyIfBigger, output, 90,
        &result, &length, &width, &height, &error, error.count
    )
    if status == 0 {
        precondition(result != nil && length > 0 && width > 0 && height > 0, "a success with no image")
        if fit != 3 && onlyIfBigger == 0 { precondition(min(width, height) <= size, "\(width)x\(height) outside \(size)") }
        mirror_codecs_free(result)
    } else if status == -1 {
        precondition(error[0] != 0, "a failure without a reason")
    }
    return 0
}
