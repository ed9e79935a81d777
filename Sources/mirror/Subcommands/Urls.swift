import ArgumentParser
import Foundation
import MirrorKit

/// `mirror urls FILE|- --out DIR`: bulk-downloads a list of image URLs.
struct Urls: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Download a table of image URLs (a text list, CSV, TSV or JSONL, gzip or not) into a folder.",
        discussion: """
        Saves only verified images, named after the URL's last path segment (sanitised; a short hash is \
        added when names clash), skips what the folder already has, and writes DIR/manifest.jsonl, one record \
        per saved image keyed by its row (its position from 0). The table is streamed, never loaded whole. \
        A text list has one URL per line (blank lines and # comments ignored); CSV and TSV have a header row; \
        JSONL has one object per line. A row with no http(s) URL is reported with its place and skipped.

        Exit codes: 0 every row's image is in the folder · 3 some rows gave no image (4xx, not an image, a bad row) · \
        5 some failed on the network or server and may work later · 64 usage · 75 folder locked · 130 interrupted.
        """
    )

    @Argument(help: "The table: FILE(.txt|.csv|.tsv|.jsonl)[.gz], or - for standard input (a text list unless --input-format).")
    var list: String

    @Option(help: "The table's format when its name does not say: txt, csv, tsv or jsonl (gzip is detected by content).")
    var inputFormat: String?

    @Option(help: "The column (or JSON field) holding the image URL.")
    var urlCol = "url"

    @Option(help: "The column holding the caption (default: caption, when the table has it).")
    var captionCol: String?

    @Option(help: "Columns carried into each record, comma-separated (a,b,c).")
    var keepCols: String?

    @Option(help: "What to write: folder (files and manifest.jsonl) or webdataset (tar shards with records and stats).")
    var format = "folder"

    @Option(help: "Table rows per WebDataset shard.")
    var shardSize = 10_000

    @Option(help: "X-Robots-Tag directives that keep an image out, comma-separated (default noai,noimageai,noindex,noimageindex).")
    var optOutTokens: String?

    @Flag(help: "Save images whose X-Robots-Tag opts them out.")
    var ignoreOptOut = false

    @Flag(help: "Fetch URLs their host's robots.txt disallows for mirror.")
    var ignoreRobots = false

    @Option(help: "Resize saved images: no, keep-ratio (longer side = --size), center-crop (square) or pad (square, black borders).")
    var resize = "no"

    @Option(help: "The size --resize fits images to, in pixels.")
    var size = 256

    @Flag(help: "Resize only images larger than --size.")
    var resizeOnlyIfBigger = false

    @Option(help: "The format written: keep (as downloaded), jpeg, png or webp.")
    var encode = "keep"

    @Option(help: "JPEG and WebP quality, 1-100.")
    var quality = 95

    @Option(help: "Skip images whose shorter side is under N pixels (counted as filtered).")
    var minImageSize: Int?

    @Option(help: "Skip images whose longer side exceeds R times the shorter (counted as filtered).")
    var maxAspectRatio: Double?

    @Option(name: .customLong("out"), help: "The output folder (created if missing).")
    var output: String

    @OptionGroup var network: NetworkOptions
    @OptionGroup var cache: CacheOptions
    @OptionGroup var outputOptions: OutputOptions

    func run() async throws {
        let table: TableSource
        do {
            table = TableSource(try openTable())
        } catch {
            printError(error.description)
            throw ExitStatus.usage.exitCode
        }
        let renderer = ProgressRenderer(mode: ProgressRenderer.mode(quiet: outputOptions.quiet), target: nil)
        let quiet = outputOptions.quiet

        var configuration = URLListJob.Configuration(directory: URL(fileURLWithPath: output))
        network.apply(to: &configuration.downloads)
        configuration.isSyncEnabled = !outputOptions.noFsync
        configuration.format = outputFormat
        configuration.honoursRobots = !ignoreRobots
        let transform = ImageTransform(
            fit: ImageTransform.Fit(rawValue: resize) ?? .no, size: size, onlyIfBigger: resizeOnlyIfBigger,
            encoding: ImageTransform.Encoding(rawValue: encode) ?? .keep, quality: quality
        )
        configuration.transform = transform.isIdentity ? nil : transform
        if minImageSize != nil || maxAspectRatio != nil {
            var filter = ImageFilter()
            filter.minimumSide = minImageSize ?? 0
            filter.maximumAspectRatio = maxAspectRatio
            configuration.filter = filter
        }
        if ignoreOptOut {
            configuration.optOut = nil
        } else if let tokens = optOutTokens {
            configuration.optOut = OptOutPolicy(tokens: Set(tokens.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }))
        }
        if !cache.noCache {
            let directory = cache.cacheDirectory.map { URL(fileURLWithPath: $0) } ?? DiskCache.defaultDirectory()
            configuration.downloads.cache = ImageCache(configuration: .init { $0.directory = directory })
        }
        let job = URLListJob(configuration: configuration)
        let (summary, interrupted) = try await runInterruptibly(renderer: renderer) {
            try await job.run(table) { event in
                switch event {
                case let .saved(record, source): renderer.saved(record, source: source)
                case let .failed(url, error): renderer.failed(url, error.description)
                case let .duplicate(url, existing): renderer.note("duplicate of \(existing): \(ProgressRenderer.redacted(url))")
                case .skipped: break
                case let .retrying(url, attempt, delay, reason): renderer.retrying(url, attempt: attempt, delay: delay, reason: reason)
                case let .invalid(place, reason): if !quiet { renderer.note("skipped \(place): \(reason)") }
                case let .refused(url, _, message): renderer.note("\(message): \(ProgressRenderer.redacted(url))")
                }
            }
        }
        report(summary, interrupted: interrupted)
        throw exitStatus(for: summary, interrupted: interrupted).exitCode
    }

    func validate() throws {
        guard ["folder", "webdataset"].contains(format) else {
            throw ValidationError("--format must be folder or webdataset")
        }
        guard shardSize >= 1 else { throw ValidationError("--shard-size must be at least 1") }
        guard ImageTransform.Fit(rawValue: resize) != nil else {
            throw ValidationError("--resize must be no, keep-ratio, center-crop or pad")
        }
        guard ImageTransform.Encoding(rawValue: encode) != nil else { throw ValidationError("--encode must be keep, jpeg, png or webp") }
        guard (1...100).contains(quality) else { throw ValidationError("--quality must be 1 to 100") }
        guard (1...65_535).contains(size) else { throw ValidationError("--size must be 1 to 65535") }
        if let maxAspectRatio, !(maxAspectRatio >= 1) { throw ValidationError("--max-aspect-ratio must be 1 or more") }
    }

    private var outputFormat: URLListJob.OutputFormat {
        format == "webdataset" ? .webDataset(shardSize: shardSize) : .folder
    }

    private func openTable() throws(TableError) -> TableReader {
        var format: TableFormat?
        if let name = inputFormat {
            guard let given = TableFormat(rawValue: name.lowercased()) else { throw .unknownFormat("--input-format \(name)") }
            format = given
        }
        var columns = TableColumns(url: urlCol, caption: captionCol)
        columns.keep = (keepCols ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        if let clash = columns.keep.first(where: ManifestRecord.Field.reservedNames.contains) {
            throw .unreadable("--keep-cols \(clash): a record already has a field of that name; rename the column in the table")
        }
        return try TableReader(path: list, format: format, columns: columns)
    }

    private func report(_ summary: URLListJob.Summary, interrupted: Bool) {
        if outputOptions.json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            if let data = try? encoder.encode(summary) {
                FileHandle.standardOutput.write(data + Data("\n".utf8))
            }
        }
        guard !outputOptions.quiet else { return }
        var line = "\(summary.saved) saved, \(summary.skipped) already there, \(summary.duplicates) duplicates, \(summary.failed) failed"
        if summary.invalidRows > 0 { line += ", \(summary.invalidRows) bad rows" }
        if summary.filtered > 0 { line += ", \(summary.filtered) filtered" }
        if summary.optedOut > 0 { line += ", \(summary.optedOut) opted out" }
        if summary.disallowed > 0 { line += ", \(summary.disallowed) disallowed by robots.txt" }
        if !summary.failures.isEmpty {
            line += " (" + summary.failures.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ") + ")"
        }
        if let shards = summary.shards {
            line += "; \(summary.shardsWritten ?? 0) shards written, \(shards) complete"
        }
        line += String(format: " in %.1fs", summary.seconds)
        if interrupted { line += "; interrupted: run again to continue" }
        FileHandle.standardError.write(Data((line + "\n").utf8))
    }

    private func exitStatus(for summary: URLListJob.Summary, interrupted: Bool) -> ExitStatus {
        if interrupted { return .interrupted }
        if summary.failed == 0 { return summary.invalidRows == 0 ? .success : .exhausted }
        return summary.hasTransientFailures ? .unavailable : .exhausted
    }
}
