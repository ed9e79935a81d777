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

    @Option(name: .customLong("out"), help: "The output folder (created if missing).")
    var output: String

    @OptionGroup var dataset: DatasetOptions
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
        dataset.apply(to: &configuration)
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
