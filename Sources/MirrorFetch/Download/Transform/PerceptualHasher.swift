import CCodecs
import Foundation
import MirrorCore
import MirrorImages
import MirrorModel
import MirrorStorage

/// PDQ hashes of verified images, for `--dedup near` (``PerceptualHash``, version ``PerceptualHash/version``).
///
/// An image's luma is decoded at the smallest scale that keeps 128 pixels on its shorter side (a JPEG's DCT scaling
/// straight to grey, WebP's scaled decode of its luma plane; PNG and GIF whole; the rare formats through libvips at 512
/// pixels), alpha onto white, averaged onto a fixed grid turned upright as EXIF says, and hashed from that grid
/// (`CCodecs/pdq.c`): the same cells of the picture whatever size it was served at. Like a resize it is hostile input:
/// the memory the decode will take is estimated from the headers and checked against ``memoryLimit`` before a decoder
/// allocates, taken from the run's ``DecodeBudget``, and marked in its ``DecodeJournal`` so that a decoder's crash
/// costs the row.
///
/// An image that cannot be hashed — it does not decode cleanly, it would take too much memory, a decoder crashed on it
/// before — is kept without a hash: never merged with another, the way a flat image's hash (quality 0) is not.
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
            hashed.pictureHashes = try ImageTransform.guardedDecode(
                of: image.url, needing: needed, alone: verdict == .decodeAlone, budget: budget, journal: journal
            ) { () throws(ImageTransform.Failure) in
                try Self.hashes(input, format: image.info.format, memoryLimit: memoryLimit)
            }
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
    ) throws(ImageTransform.Failure) -> PictureHashes {
        var output = mirror_codecs_pdq()
        let status = input.withUnsafeBytes { buffer in
            mirror_codecs_pdq_hash(buffer.bindMemory(to: UInt8.self).baseAddress, buffer.count, ImageTransform.code(format), max(0, memoryLimit), &output)
        }
        guard status == MIRROR_CODECS_OK else {
            throw ImageTransform.failure(status, withUnsafeBytes(of: output.message) { Array($0.bindMemory(to: CChar.self)) })
        }
        let trimmed = withUnsafeBytes(of: output.trimmed) { bytes in
            (0..<Int(MIRROR_CODECS_PDQ_TRIMS)).compactMap { PerceptualHash.bits(bytes: bytes[($0 * 32)..<($0 * 32 + 32)]) }
        }
        return PictureHashes(whole: Self.hash(of: output), trimmed: trimmed)
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

extension PerceptualHasher {
    /// Hashes again, by this mirror's computation, the saved images whose hashes an earlier one made (a folder saved
    /// before hashes version 2), so that a top-up compares new images with them: each file decoded as a download is
    /// (its memory checked first, marked in the folder's decode journal while it decodes), then the manifest written
    /// anew once (``OutputFolder/refreshHashes(_:)``). A resized file is hashed as saved (a copy of the picture, as far
    /// as the hash goes). A file that does not decode, or crashed a decoder on an earlier try, keeps its old hashes and
    /// is never compared.
    ///
    /// Costs a hash per stale image, once: about a millisecond each for photographs (BENCHMARKS.md).
    /// - Returns: the images hashed again.
    /// - Throws: `FileError` when the manifest cannot be replaced.
    @discardableResult
    package func refreshHashes(in folder: OutputFolder) throws(FileError) -> Int {
        let stale = folder.recordsWithStaleHashes()
        guard !stale.isEmpty else { return 0 }
        var hashes: [String: PictureHashes] = [:]
        for record in stale {
            let file = folder.directory.appendingPathComponent(record.file)
            let source = URL(string: record.url) ?? file
            let verdict = journal?.verdict(for: source) ?? .decode
            guard verdict != .crashed, let input = try? Data(contentsOf: file, options: .alwaysMapped),
                  let format = try? ImageValidator().validate(input).format else { continue }
            do throws(ImageTransform.Failure) {
                let needed = try Self.estimate(input, format: format)
                hashes[record.file] = try ImageTransform.guardedDecode(
                    of: source, needing: needed, alone: verdict == .decodeAlone, budget: budget, journal: journal
                ) { () throws(ImageTransform.Failure) in
                    try Self.hashes(input, format: format, memoryLimit: memoryLimit)
                }
            } catch {
                continue
            }
        }
        return try folder.refreshHashes(hashes)
    }
}
