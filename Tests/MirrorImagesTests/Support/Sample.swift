import Foundation
import MirrorImages
import Testing

/// One committed sample image and the facts a test expects the validator to report for it.
struct Sample: Sendable, CustomTestStringConvertible {
    var file: String
    var format: ImageFormat
    var width: Int
    var height: Int
    var frameCount: Int? = 1
    var isAnimated = false

    var testDescription: String { file }

    var expectedInfo: ImageInfo {
        ImageInfo(format: format, width: width, height: height, frameCount: frameCount, isAnimated: isAnimated)
    }

    /// The file's bytes from the test bundle.
    func data() throws -> Data {
        try Data(contentsOf: Sample.directory.appendingPathComponent(file))
    }

    static var directory: URL {
        get throws {
            try #require(Bundle.module.url(forResource: "Samples", withExtension: nil))
        }
    }

    /// Every committed sample, with the sizes `make-samples.sh` asked the encoders for.
    static let all: [Sample] = [
        Sample(file: "baseline.jpg", format: .jpeg, width: 37, height: 23),
        Sample(file: "progressive.jpg", format: .jpeg, width: 41, height: 29),
        Sample(file: "restart.jpg", format: .jpeg, width: 29, height: 31),
        Sample(file: "cmyk.jpg", format: .jpeg, width: 31, height: 19),
        Sample(file: "exif.jpg", format: .jpeg, width: 43, height: 17),
        Sample(file: "gray.png", format: .png, width: 29, height: 13),
        Sample(file: "interlaced.png", format: .png, width: 47, height: 21),
        Sample(file: "animated.png", format: .png, width: 19, height: 11, frameCount: 3, isAnimated: true),
        Sample(file: "static.gif", format: .gif, width: 33, height: 27),
        Sample(file: "animated.gif", format: .gif, width: 35, height: 25, frameCount: 3, isAnimated: true),
        Sample(file: "lossy.webp", format: .webp, width: 39, height: 31),
        Sample(file: "lossless.webp", format: .webp, width: 45, height: 19),
        Sample(file: "alpha.webp", format: .webp, width: 53, height: 17),
        Sample(file: "animated.webp", format: .webp, width: 27, height: 35, frameCount: 3, isAnimated: true),
        Sample(file: "bgr24.bmp", format: .bmp, width: 23, height: 37),
        Sample(file: "os2.bmp", format: .bmp, width: 21, height: 15),
        Sample(file: "topdown.bmp", format: .bmp, width: 25, height: 9),
        Sample(file: "little.tiff", format: .tiff, width: 57, height: 15),
        Sample(file: "big.tiff", format: .tiff, width: 15, height: 57),
        Sample(file: "image.avif", format: .avif, width: 64, height: 40, frameCount: nil),
        Sample(file: "image.heic", format: .heif, width: 48, height: 80, frameCount: nil),
    ]

    static func named(_ file: String) throws -> Sample {
        try #require(all.first { $0.file == file })
    }
}

/// The rejection `validate` throws, or nil if it accepted the bytes.
func rejection(of data: Data, validator: ImageValidator = ImageValidator()) -> ImageRejection? {
    do {
        _ = try validator.validate(data)
        return nil
    } catch {
        return error
    }
}

extension ImageRejection {
    /// The format a `.truncated` rejection names, or nil for any other case.
    var truncatedFormat: ImageFormat? {
        if case .truncated(let format, _) = self { return format }
        return nil
    }

    /// The format a `.malformed` rejection names, or nil for any other case.
    var malformedFormat: ImageFormat? {
        if case .malformed(let format, _) = self { return format }
        return nil
    }
}

extension Data {
    /// The offset of the first occurrence of `pattern`, or nil.
    func offset(of pattern: [UInt8], from start: Int = 0) -> Int? {
        range(of: Data(pattern), in: (startIndex + start)..<endIndex).map { $0.lowerBound - startIndex }
    }

    /// A copy with `bytes` written over the bytes at `offset`.
    func replacing(at offset: Int, with bytes: [UInt8]) -> Data {
        var copy = Data(self)
        copy.replaceSubrange(offset..<offset + bytes.count, with: bytes)
        return copy
    }

    /// The big-endian UInt16 at `offset` (relative to the start).
    func u16be(_ offset: Int) -> Int {
        Int(self[startIndex + offset]) << 8 | Int(self[startIndex + offset + 1])
    }

    /// The little-endian UInt32 at `offset` (relative to the start).
    func u32le(_ offset: Int) -> UInt32 {
        (0..<4).reduce(UInt32(0)) { $0 | UInt32(self[startIndex + offset + $1]) << (8 * $1) }
    }

    /// `data[start..<end]` rebased to index 0, as a downloaded body would be.
    func prefix(length: Int) -> Data {
        Data(self.prefix(length))
    }
}

/// A tiny deterministic generator (SplitMix64), so "random" inputs are the same on every run.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
