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

    @Option(name: .customLong("out"), help: "The output folder (created if missing), or s3://BUCKET/PREFIX for WebDataset shards in object storage (AWS_* variables).")
    var output: String

    @Option(help: "With --out s3://…: the local folder for the run's state and the shards being assembled (default: under the XDG cache, one per destination).")
    var stateDir: String?

    @OptionGroup var dataset: DatasetOptions
    @OptionGroup var sharding: ShardOptions
    @OptionGroup var network: NetworkOptions
    @OptionGroup var cache: CacheOptions
    @OptionGroup var outputOptions: OutputOptions

    func validate() throws {
        if output.lowercased().hasPrefix("s3://") {
            guard S3Location(output) != nil else { throw ValidationError("--out \(output): give s3://BUCKET/PREFIX") }
            guard dataset.format == "webdataset" else {
                throw ValidationError("--out s3://… takes --format webdataset: a folder is files and an appended manifest, which object storage cannot hold")
            }
            guard !outputOptions.gallery else { throw ValidationError("--gallery reads a local folder: run mirror gallery on a copy of the shards") }
        } else if stateDir != nil {
            throw ValidationError("--state-dir is for --out s3://…; a folder keeps its state in DIR/.mirror")
        }
    }

    func run() async throws {
        let quiet = outputOptions.quiet
        let share: (WorkShard, String)?
        do {
            share = try sharding.resolve()
        } catch {
            printError("\(error)")
            throw ExitStatus.usage.exitCode
        }
        let isWebDataset = dataset.format == "webdataset"
        let table: TableSource
        do {
            table = TableSource(try openTable(), shard: share?.0, blockSize: isWebDataset ? dataset.shardSize : 1)
        } catch {
            printError(error.description)
            throw ExitStatus.usage.exitCode
        }
        let renderer = ProgressRenderer(mode: ProgressRenderer.mode(quiet: outputOptions.quiet), target: nil)

        var directory = URL(fileURLWithPath: output)
        var objectStore: URLListJob.ObjectStoreDestination?
        if let location = S3Location(output) {
            do {
                objectStore = URLListJob.ObjectStoreDestination(location: location, settings: try S3Configuration.fromEnvironment())
            } catch {
                printError(error.description)
                throw ExitStatus.configuration.exitCode
            }
            directory = stateDir.map { URL(fileURLWithPath: $0) } ?? location.defaultStateDirectory()
        } else if let (shard, _) = share, !isWebDataset {
            // A folder is one run's (its lock, its manifest, its leftovers): each copy fills its own.
            directory.appendPathComponent(shard.directoryName, isDirectory: true)
        }
        if let (shard, origin) = share, !quiet {
            let target = objectStore?.location.description ?? directory.path
            FileHandle.standardError.write(Data("mirror: \(shard) (from \(origin)) into \(target)\n".utf8))
        }

        var configuration = URLListJob.Configuration(directory: directory)
        configuration.shard = share?.0
        configuration.objectStore = objectStore
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
        if objectStore == nil { outputOptions.writeGallery(directory) }
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
        var line = "\(summary.tally.saved) saved, \(summary.tally.alreadySaved) already there, \(summary.tally.duplicates) duplicates, \(summary.tally.failed) failed"
        if summary.tally.invalid > 0 { line += ", \(summary.tally.invalid) bad rows" }
        if summary.tally.filtered > 0 { line += ", \(summary.tally.filtered) filtered" }
        if summary.tally.optedOut > 0 { line += ", \(summary.tally.optedOut) opted out" }
        if summary.tally.disallowed > 0 { line += ", \(summary.tally.disallowed) disallowed by robots.txt" }
        if !summary.tally.failures.isEmpty {
            line += " (" + summary.tally.failures.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ") + ")"
        }
        if let shards = summary.shards {
            line += "; \(summary.shardsWritten ?? 0) shards written, \(shards) complete"
        }
        if let rows = summary.tableRows, rows > 0 {
            line += String(format: "; this copy took %d of %d rows (%.1f%%)", summary.total + summary.tally.invalid, rows, 100 * Double(summary.total + summary.tally.invalid) / Double(rows))
        }
        line += String(format: " in %.1fs", summary.seconds)
        if interrupted { line += "; interrupted: run again to continue" }
        FileHandle.standardError.write(Data((line + "\n").utf8))
    }

    private func exitStatus(for summary: URLListJob.Summary, interrupted: Bool) -> ExitStatus {
        if interrupted { return .interrupted }
        if summary.tally.failed == 0 { return summary.tally.invalid == 0 ? .success : .exhausted }
        return summary.tally.hasTransientFailures ? .unavailable : .exhausted
    }
}
