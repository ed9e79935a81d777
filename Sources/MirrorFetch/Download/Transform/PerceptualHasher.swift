import CCodecs
import Foundation
import MirrorImages
import MirrorStorage

/// PDQ hashes of verified images, for `--dedup near` (``PerceptualHash``).
///
/// An image is decoded at the smallest scale that keeps 128 pixels on its shorter side (a JPEG's DCT scaling, WebP's
/// scaled decode; PNG and GIF whole, then averaged down; the rare formats through libvips at 512 pixels), turned
/// upright as EXIF says, alpha onto white, and hashed (`CCodecs/pdq.c`). Like a resize it is hostile input: the memory
/// the decode will take is estimated from the headers and checked against ``memoryLimit`` before a decoder allocates,
/// taken from the run's ``DecodeBudget``, and marked in its ``DecodeJournal`` so that a decoder's crash costs the row.
///
/// An image that cannot be hashed — it does not decode cleanly, it would take too much memory, a decoder crashed on it
/// before — is kept without a hash: never merged with another, the way PDQ's low-quality hashes are not.
package struct PerceptualHasher: Sendable {
    /// The memory, in bytes, one image's decode may take. Default ``ImageTransform/defaultMemoryLimit``.
    package var memoryLimit: Int
    package var budget: DecodeBudget?
    package var journal: DecodeJournal?

    package init(memoryLimit: Int = ImageTransform.defaultMemoryLimit, budget: DecodeBudget? = nil, journal: DecodeJournal? = nil) {
        self.memoryLimit = memoryLimit
        self.budget = budget
        self.journal = journal
    }

    /// The image with its hash, or as it was when it cannot be hashed.
    package func apply(to image: VerifiedImage) -> VerifiedImage {
        let verdict = journal?.verdict(for: image.url) ?? .decode
        guard verdict != .crashed else { return image }
        guard let input = try? Data(contentsOf: image.temporaryFile, options: .alwaysMapped) else { return image }
        var hashed = image
        do throws(ImageTransform.Failure) {
            let needed = try Self.estimate(input, format: image.info.format)
            let looks = try ImageTransform.guardedDecode(
                of: image.url, needing: needed, alone: verdict == .decodeAlone, budget: budget, journal: journal
            ) { () throws(ImageTransform.Failure) in
                try Self.hashes(input, format: image.info.format, memoryLimit: memoryLimit)
            }
            hashed.perceptualHash = looks.whole
            hashed.trimmedHashes = looks.trimmed
        } catch {
            return image
        }
        return hashed
    }

    /// The PDQ hash of an image's bytes (served as `format`).
    /// - Throws: ``ImageTransform/Failure`` when it does not decode, or would take more than `memoryLimit`.
    package static func hash(_ input: Data, format: ImageFormat, memoryLimit: Int = ImageTransform.defaultMemoryLimit) throws(ImageTransform.Failure) -> PerceptualHash {
        try hashes(input, format: format, memoryLimit: memoryLimit).whole
    }

    /// The PDQ hash of an image's bytes, and those of its centre without 1.5, 3 and 4.5 % of each border.
    /// - Throws: ``ImageTransform/Failure`` when it does not decode, or would take more than `memoryLimit`.
    package static func hashes(
        _ input: Data, format: ImageFormat, memoryLimit: Int = ImageTransform.defaultMemoryLimit
    ) throws(ImageTransform.Failure) -> (whole: PerceptualHash, trimmed: [SIMD4<UInt64>]) {
        var output = mirror_codecs_pdq()
        let status = input.withUnsafeBytes { buffer in
            mirror_codecs_pdq_hash(buffer.bindMemory(to: UInt8.self).baseAddress, buffer.count, ImageTransform.code(format), max(0, memoryLimit), &output)
        }
        guard status == MIRROR_CODECS_OK else {
            throw ImageTransform.failure(status, withUnsafeBytes(of: output.message) { Array($0.bindMemory(to: CChar.self)) })
        }
        let trimmed = withUnsafeBytes(of: output.trimmed) { bytes in
            (0..<Int(MIRROR_CODECS_PDQ_TRIMS)).map { PerceptualHash(bytes: bytes[($0 * 32)..<($0 * 32 + 32)], quality: 0)!.bits }
        }
        return (Self.hash(of: output), trimmed)
    }

    /// The memory, in bytes, hashing `input` will take, read from its headers.
    package static func estimate(_ input: Data, format: ImageFormat) throws(ImageTransform.Failure) -> Int {
        var bytes = 0
        var message = [CChar](repeating: 0, count: 256)
        let status = input.withUnsafeBytes { buffer in
            mirror_codecs_pdq_estimate(buffer.bindMemory(to: UInt8.self).baseAddress, buffer.count, ImageTransform.code(format), &bytes, &message, message.count)
        }
        if status != MIRROR_CODECS_OK { throw ImageTransform.failure(status, message) }
        return bytes
    }

    private static func hash(of output: mirror_codecs_pdq) -> PerceptualHash {
        withUnsafeBytes(of: output.hash) { PerceptualHash(bytes: $0, quality: Int(output.quality))! }
    }
}
