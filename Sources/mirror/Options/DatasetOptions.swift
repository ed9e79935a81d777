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

    @Option(help: ArgumentHelp(
        "Resize saved images: no, longer-side (the longer side = --size; keep-ratio also names it), shorter-side (the shorter side = --size), center-crop (shorter side, then the middle square), pad (longer side, then borders of --pad-color to the square), border (pad with white) or fixed (stretched to the square).",
        discussion: "img2dataset's resize_mode keep_ratio is shorter-side, keep_ratio_largest longer-side, center_crop center-crop, border border. Smaller images are enlarged too, unless --resize-only-if-bigger."
    ))
    var resize: ImageTransform.Fit = .no

    @Option(help: "The size --resize fits images to, in pixels.")
    var size = 256

    @Option(help: "The colour --resize pad fills the square with: white, black (the default) or #RRGGBB.")
    var padColor: ImageTransform.Color?

    @Flag(help: "Resize only images whose fitted side (each side for fixed) is larger than --size; smaller ones keep their size, still cropped or padded to the square.")
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
        if padColor != nil, resize != .pad {
            throw ValidationError("--pad-color is for --resize pad (border pads with white)")
        }
    }

    /// Sets the job's format, transform, filter and consent from the options; `blurs` when the table gives boxes to blur
    /// (the transform is then kept even when it changes nothing else, for its memory limit).
    func apply(to configuration: inout URLListJob.Configuration, blurs: Bool = false) {
        configuration.format = format == .webdataset ? .webDataset(shardSize: shardSize) : .folder
        if ignoreRobots { configuration.consent.ignored.insert(.robots) }
        let transform = ImageTransform(
            fit: resize, size: size, onlyIfBigger: resizeOnlyIfBigger, padColor: padColor ?? .black,
            encoding: encode ?? ImageTransform.Encoding.default(for: configuration.format), quality: quality,
            memoryLimit: Int(clamping: decodeMemory.bytes)
        )
        configuration.transform = transform.isIdentity && !blurs ? nil : transform
        if minImageSize != nil || maxAspectRatio != nil {
            var filter = ImageFilter()
            filter.minimumSide = minImageSize ?? 0
            filter.maximumAspectRatio = maxAspectRatio
            configuration.filter = filter
        }
    }
}
