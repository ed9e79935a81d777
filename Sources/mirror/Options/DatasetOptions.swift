import ArgumentParser
import Foundation
import MirrorKit

/// `mirror urls`'s dataset options: the output format, resizing, filters, and the site files (robots.txt, TDMRep).
struct DatasetOptions: ParsableArguments {
    @Option(help: "What to write: folder (files and manifest.jsonl) or webdataset (tar shards with records and stats).")
    var format: OutputFormat = .folder

    @Option(help: "Table rows per WebDataset shard.")
    var shardSize = 10_000

    @Flag(help: "Fetch URLs their host's robots.txt disallows for mirror (the same as --ignore-opt-out robots).")
    var ignoreRobots = false

    @Option(help: "Resize saved images: no, keep-ratio (longer side = --size), center-crop (square) or pad (square, black borders).")
    var resize: ImageTransform.Fit = .no

    @Option(help: "The size --resize fits images to, in pixels.")
    var size = 256

    @Flag(help: "Resize only images larger than --size.")
    var resizeOnlyIfBigger = false

    @Option(help: ArgumentHelp(
        "The format written: keep (as downloaded), jpeg, png or webp (default: jpeg for webdataset, keep for folder).",
        discussion: "Images already in that format and not resized are stored as served."
    ))
    var encode: ImageTransform.Encoding?

    @Option(help: "JPEG and WebP quality, 1-100.")
    var quality = 95

    @Option(help: ArgumentHelp(
        "Memory the resizes and re-encodes running at once may take together, e.g. 512MB or 2GiB.",
        discussion: "What each will take is read from the image's headers before it is decoded; one waits for room, and an image whose decode alone would take more fails (too-large-to-decode)."
    ))
    var decodeMemory: ByteSize = ByteSize(bytes: Int64(ImageTransform.defaultMemoryLimit))

    @Option(help: "Skip images whose shorter side is under N pixels (counted as filtered).")
    var minImageSize: Int?

    @Option(help: "Skip images whose longer side exceeds R times the shorter (counted as filtered).")
    var maxAspectRatio: Double?

    func validate() throws {
        guard shardSize >= 1 else { throw ValidationError("--shard-size must be at least 1") }
        guard (1...100).contains(quality) else { throw ValidationError("--quality must be 1 to 100") }
        guard (1...65_535).contains(size) else { throw ValidationError("--size must be 1 to 65535") }
        guard decodeMemory.bytes >= 16 << 20 else { throw ValidationError("--decode-memory must be at least 16MiB") }
        if let maxAspectRatio, !(maxAspectRatio >= 1) { throw ValidationError("--max-aspect-ratio must be 1 or more") }
    }

    /// Sets the job's format, transform, filter and consent from the options.
    func apply(to configuration: inout URLListJob.Configuration) {
        configuration.format = format == .webdataset ? .webDataset(shardSize: shardSize) : .folder
        if ignoreRobots { configuration.consent.ignored.insert(.robots) }
        let transform = ImageTransform(
            fit: resize, size: size, onlyIfBigger: resizeOnlyIfBigger,
            encoding: encode ?? ImageTransform.Encoding.default(for: configuration.format), quality: quality,
            memoryLimit: Int(clamping: decodeMemory.bytes)
        )
        configuration.transform = transform.isIdentity ? nil : transform
        if minImageSize != nil || maxAspectRatio != nil {
            var filter = ImageFilter()
            filter.minimumSide = minImageSize ?? 0
            filter.maximumAspectRatio = maxAspectRatio
            configuration.filter = filter
        }
    }
}
