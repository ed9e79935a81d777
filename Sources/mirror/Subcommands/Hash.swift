import ArgumentParser
import Foundation
import MirrorKit

/// `mirror hash FILE…`: the perceptual hash of image files, as `--dedup near` computes and compares it.
struct Hash: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print the perceptual (PDQ) hash of image files, as --dedup near compares them.",
        discussion: """
            One line per file: the 64 hex digits of its PDQ hash (Meta's 256-bit perceptual hash, of the picture's \
            luma averaged onto a fixed grid: version \(PerceptualHash.version)), PDQ's quality (0-100) and the path. \
            Two images are near-duplicates to mirror when some hash of one (the whole image's, or its centre's without \
            1.5, 3 or 4.5 % of each border) is within \(NearDuplicatePolicy.defaultDistance) bits of some hash of the \
            other; within \(NearDuplicatePolicy.defaultLowQualityDistance) when either quality is under \
            \(PerceptualHash.reliableQuality) (a nearly flat picture); never when either is 0 (flat) or an image is \
            under \(NearDuplicatePolicy.defaultMinimumSide) pixels on its shorter side. Exit 1 if a file is not an \
            image that decodes.
            """
    )

    @Argument(help: "Image files (JPEG, PNG, WebP, GIF, and through libvips TIFF, HEIF, AVIF, BMP).")
    var files: [String]

    @Flag(help: "Print one JSON object per line: file, pdq, quality, trimmed (the hashes of its centre without 1.5, 3 and 4.5 % of each border), version, width, height (or error).")
    var json = false

    func run() throws {
        var failed = false
        for path in files {
            do {
                guard let data = FileManager.default.contents(atPath: path) else {
                    throw ValidationError("cannot read it (\(FileManager.default.fileExists(atPath: path) ? "not readable" : "no such file"))")
                }
                let info = try ImageValidator().validate(data)
                let hashes = try PerceptualHasher.hashes(data, format: info.format)
                let hash = hashes.whole
                if json {
                    let trimmed = hashes.trimmed.map(PerceptualHash.hex)
                    printJSON(Line(file: path, pdq: hash.hex, quality: hash.quality, trimmed: trimmed, version: PerceptualHash.version, width: info.width, height: info.height))
                } else {
                    Self.write("\(hash.hex) \(hash.quality) \(path)")
                }
            } catch {
                failed = true
                let reason = String(describing: error)
                if json {
                    printJSON(Line(file: path, error: reason))
                } else {
                    printError("\(path): \(reason)")
                }
            }
        }
        if failed { throw ExitStatus.failure.exitCode }
    }

    /// One line to standard output at once (in order with the errors on standard error).
    private static func write(_ line: String) {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }

    /// One file's line of `--json`: its hashes and size, or why it has none.
    private struct Line: Encodable {
        var file: String
        var pdq: String?
        var quality: Int?
        /// The hashes of its centre without 1.5, 3 and 4.5 % of each border.
        var trimmed: [String]?
        var version: Int?
        var width: Int?
        var height: Int?
        var error: String?
    }
}
