import ArgumentParser
import Foundation
import MirrorKit

/// `mirror urls FILE|- --out DIR`: bulk-downloads a list of image URLs.
struct Urls: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Download a table of image URLs (a text list, CSV, TSV or JSONL, gzip or not; Parquet; or a folder of them) into a folder.",
        discussion: """
        Saves only verified images, named after the URL's last path segment (sanitised; a short hash is \
        added when names clash), skips what the folder already has, and writes DIR/manifest.jsonl, one record \
        per saved image keyed by its row (its position from 0), and its copy DIR/metadata.jsonl, which Hugging Face \
        datasets' imagefolder reads. A table that may take the folder past 9,000 images fills numbered subfolders \
        of 1,000 (00000/, 00001/, …), so that no folder passes the Hub's 10,000 files (--layout). \
        The table is streamed, never loaded whole, and read \
        as bytes (UTF-8, other bytes as Windows-1252; a URL's bytes sent as they are). A text list has one URL per \
        line (blank lines and # comments ignored); CSV and TSV have a header row; JSONL has one object per line; \
        Parquet is read one row group at a time, only the columns named (--url-col, --caption-col, --keep-cols; a \
        list column is kept as JSON). A \
        row with no http(s) URL, or longer than 1 MiB, is reported with its place and skipped.

        A rerun downloads nothing an earlier run settled: it finishes what a killed run left, and reports the rows \
        still missing. --retry-failed downloads again the rows that failed on the network or the server (timeouts, \
        refused or reset connections, DNS, 5xx, 429); --retry-failed all the ones that failed for good too. Only \
        the shards that gain a sample are written anew, each whole (tar, records, then stats).

        Exit codes: 0 every row is settled: its image is in the output, or it was kept out on purpose (its owner \
        reserved it, a filter turned it away, or it repeats another) · 3 rows are missing: some gave no image (4xx, not an image, \
        a bad row), or failed on an earlier run and were not retried · 5 some failed on the network or server this \
        run and may work with --retry-failed · 64 usage · 65 the table is malformed from a line on (a quoted field \
        that never closes: the message names the line; the rows before it were processed) · 75 folder locked · \
        130 interrupted.
        """
    )

    @Argument(help: "The table: FILE(.txt|.csv|.tsv|.jsonl)[.gz], FILE.parquet, a FOLDER of tables (read in name order, keys continuing across files), or - for standard input (a text list unless --input-format).")
    var list: String

    @Option(help: "The table's format when its name does not say: txt, csv, tsv or jsonl (gzip is detected by content).")
    var inputFormat: TableFormat?

    @Option(help: "The column (or JSON field) holding the image URL.")
    var urlCol = "url"

    @Option(help: "The column holding the caption (default: caption, when the table has it).")
    var captionCol: String?

    @Option(help: "Columns carried into each record, comma-separated (a,b,c).")
    var keepCols: String?

    @Option(help: ArgumentHelp(
        "The column holding the digest the served bytes must have (hex, any case; img2dataset's verify_hash).",
        discussion: "A row whose image hashes otherwise fails for good (hash-mismatch) and nothing is saved; an empty value is not checked. The record keeps the saved file's SHA-256, as ever."
    ))
    var verifyHash: String?

    @Option(help: ArgumentHelp("The digest --verify-hash's column holds: sha256 (the default) or md5.", valueName: "sha256|md5"))
    var hash: ExpectedDigest.Algorithm?

    @Option(help: ArgumentHelp(
        "The column holding boxes to blur: [[x0, y0, x1, y1], …], fractions of the image (img2dataset's bbox_col, e.g. DataComp's face_bboxes).",
        discussion: "Blurred as img2dataset blurs them, after --resize and before its crop or pad; an image with boxes is encoded again even without --resize (in its own format where mirror writes it, else as --encode says). An empty value blurs nothing; a value that is not a list of at most 1,000 boxes of 4 numbers fails its row (bad-boxes) without a download. The record says how many were blurred (blurred_boxes)."
    ))
    var blurCol: String?

    @Option(name: .customLong("out"), help: "The output folder (created if missing), or s3://BUCKET/PREFIX for WebDataset shards in object storage (AWS_* variables).")
    var output: String

    @Option(help: "With --out s3://…: the local folder for the run's state and the shards being assembled (default: under the XDG cache, one per destination).")
    var stateDir: String?

    @Option(help: ArgumentHelp(
        "Download again the rows that failed on an earlier run: transient (timeouts, refused connections, DNS, 5xx, 429; the default when no value follows) or all.",
        valueName: "transient|all"
    ))
    var retryFailed: RetryFailed?

    @Option(help: "What is a duplicate of a saved image: exact (the same bytes; the default: a row is a row), near (also the same picture resized, re-encoded or trimmed, by its PDQ hash) or none.")
    var dedup: Deduplication = .exact

    @OptionGroup var folder: FolderOptions
    @OptionGroup var dataset: DatasetOptions
    @OptionGroup(title: "What the owner reserved") var consent: ConsentOptions
    @OptionGroup var sharding: ShardOptions
    @OptionGroup var network: NetworkOptions
    @OptionGroup var agent: AgentOptions
    @OptionGroup var cache: CacheOptions

    @Flag(name: .customLong("cache"), help: ArgumentHelp(
        "Keep the downloads in the disk cache (off by default for tables, or given --cache-dir).",
        discussion: "A table's rows are rarely fetched twice, and writing every image to the cache cost a third more CPU per image; with it, a killed run's open shards and a second job over the same URLs come from the cache."
    ))
    var useCache = false
    @OptionGroup var outputOptions: OutputOptions

    @Flag(help: "Print the URL of every row the run would fetch (this copy's share, with --shard), one a line, and fetch nothing; rows without a URL are said on standard error.")
    var dryRun = false

    func validate() throws {
        if output.lowercased().hasPrefix("s3://") {
            guard S3Location(output) != nil else { throw ValidationError("--out \(output): give s3://BUCKET/PREFIX") }
            guard dataset.format == .webdataset else {
                throw ValidationError("--out s3://… takes --format webdataset: a folder is files and an appended manifest, which object storage cannot hold")
            }
            guard !outputOptions.gallery else { throw ValidationError("--gallery reads a local folder: run mirror gallery on a copy of the shards") }
        } else if stateDir != nil {
            throw ValidationError("--state-dir is for --out s3://…; a folder keeps its state in DIR/.mirror")
        }
        if folder.layout != nil, dataset.format != .folder { throw ValidationError("--layout is for --format folder: shards are files of their own") }
        if hash != nil, verifyHash == nil { throw ValidationError("--hash says what --verify-hash's column holds: name the column with --verify-hash") }
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
        let isWebDataset = dataset.format == .webdataset
        if dryRun {
            try printURLs(shard: share?.0, blockSize: isWebDataset ? dataset.shardSize : 1)
            return
        }
        let table: TableSource
        do {
            table = TableSource(try openTable(), shard: share?.0, blockSize: isWebDataset ? dataset.shardSize : 1)
        } catch {
            // An open quote in the header row is the table's fault (65); a missing file or column, the command's (64).
            printError(error.description)
            throw (error.isMalformed ? ExitStatus.dataError : ExitStatus.usage).exitCode
        }
        let renderer = ProgressRenderer(mode: ProgressRenderer.mode(quiet: outputOptions.quiet), target: nil)

        if let refusal = folder.splitsRefusal(in: output) {
            printError(refusal)
            throw ExitStatus.usage.exitCode
        }
        let output = folder.destination(output)
        var directory: URL
        var objectStore: URLListJob.ObjectStoreDestination?
        if let location = S3Location(output) {
            do {
                objectStore = URLListJob.ObjectStoreDestination(location: location, settings: try S3Configuration.fromEnvironment())
            } catch {
                printError(error.description)
                throw ExitStatus.configuration.exitCode
            }
            directory = try stateDir.map(outputFolder) ?? location.defaultStateDirectory()
        } else {
            directory = try outputFolder(output)
        }
        if objectStore == nil, let (shard, _) = share, !isWebDataset {
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
        configuration.retryFailed = retryFailed
        configuration.deduplication = dedup
        configuration.layout = folder.folderLayout
        network.apply(to: &configuration.downloads)
        configuration.isSyncEnabled = !outputOptions.noFsync
        configuration.consent = consent.policy
        agent.apply(to: &configuration.downloads, consent: &configuration.consent)
        dataset.apply(to: &configuration, blurs: blurCol != nil)
        consent.warnIfIgnoring(configuration.consent, quiet: quiet)
        if !cache.noCache, useCache || cache.cacheDirectory != nil {
            let directory = cache.cacheDirectory.map { URL(fileURLWithPath: $0) } ?? DiskCache.defaultDirectory()
            configuration.downloads.cache = ImageCache(configuration: .init { $0.directory = directory })
        }
        let job = URLListJob(configuration: configuration)
        let (summary, interrupted) = try await runInterruptibly(renderer: renderer) {
            try await job.run(table) { renderer.show($0) }
        }
        report(summary, interrupted: interrupted)
        if objectStore == nil { outputOptions.writeGallery(directory) }
        throw exitStatus(for: summary, interrupted: interrupted).exitCode
    }

    /// `--dry-run`: the table's URLs, one a line, written in blocks of 64 KiB.
    private func printURLs(shard: WorkShard?, blockSize: Int) throws {
        let reader: any TableRowReading
        do {
            reader = try openTable()
        } catch {
            printError(error.description)
            throw (error.isMalformed ? ExitStatus.dataError : ExitStatus.usage).exitCode
        }
        var block = Data()
        block.reserveCapacity(1 << 16)
        do {
            while let row = try reader.next() {
                switch row.url {
                case let .success(url):
                    guard shard?.owns(position: row.position, host: url.host, blockSize: blockSize) ?? true else { continue }
                    block.append(contentsOf: url.absoluteString.utf8)
                    block.append(UInt8(ascii: "\n"))
                    if block.count >= 1 << 16 {
                        FileHandle.standardOutput.write(block)
                        block.removeAll(keepingCapacity: true)
                    }
                case let .failure(problem):
                    FileHandle.standardError.write(Data("mirror: skipped \(row.place): \(problem.reason)\n".utf8))
                }
            }
        } catch {
            FileHandle.standardOutput.write(block)
            printError(error.description)
            throw (error.isMalformed ? ExitStatus.dataError : ExitStatus.unavailable).exitCode
        }
        FileHandle.standardOutput.write(block)
    }

    private func openTable() throws(TableError) -> any TableRowReading {
        var columns = TableColumns(url: urlCol, caption: captionCol, hash: verifyHash, hashAlgorithm: hash ?? .sha256, blur: blurCol)
        columns.keep = (keepCols ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        if let clash = columns.keep.first(where: ManifestRecord.Field.reservedNames.contains) {
            throw .unreadable("--keep-cols \(clash): a record already has a field of that name; rename the column in the table")
        }
        return try TableReader.open(path: list, format: inputFormat, columns: columns)
    }

    private func report(_ summary: URLListJob.Summary, interrupted: Bool) {
        if outputOptions.json { printJSON(summary) }
        guard !outputOptions.quiet else { return }
        var line = TallyReport.runPhrases(summary.tally, purpose: summary.purpose).joined(separator: ", ")
        if let shards = summary.shards {
            line += "; \(summary.shardsWritten ?? 0) shards written, "
            if let rewritten = summary.shardsRewritten, rewritten > 0 { line += "\(rewritten) rewritten, " }
            line += "\(shards) complete"
        }
        if let rows = summary.tableRows, rows > 0 {
            line += String(format: "; this copy took %d of %d rows (%.1f%%)", summary.total + summary.tally.invalid, rows, 100 * Double(summary.total + summary.tally.invalid) / Double(rows))
        }
        line += String(format: " in %.1fs", summary.seconds)
        if interrupted { line += "; interrupted: run again to continue" }
        FileHandle.standardError.write(Data((line + "\n").utf8))
        if let missing = Self.missingLine(transient: summary.missingTransient, permanent: summary.missingPermanent) {
            FileHandle.standardError.write(Data((missing + "\n").utf8))
        }
    }

    /// What the output still lacks and which command retries it, or `nil` when it lacks nothing.
    static func missingLine(transient: Int, permanent: Int) -> String? {
        guard transient + permanent > 0 else { return nil }
        var parts: [String] = []
        if transient > 0 {
            parts.append("\(transient) failed on the network or server and may work now: run the same command with --retry-failed")
        }
        if permanent > 0 {
            parts.append("\(permanent) failed for good (4xx, not an image, bad rows)" + (transient > 0 ? "" : "; --retry-failed all tries the failed ones again"))
        }
        return "rows missing: " + parts.joined(separator: "; ")
    }

    /// `--retry-failed` alone means `--retry-failed transient` (argument-parser has no option whose value may be
    /// left out): the arguments with `--retry-failed [transient|all]` joined into one `--retry-failed=VALUE`.
    static func normalizingRetryFailed(_ arguments: [String]) -> [String] {
        var result: [String] = []
        var index = 0
        while index < arguments.count {
            let word = arguments[index]
            if word == "--" {
                result.append(contentsOf: arguments[index...])
                break
            }
            if word == "--retry-failed" {
                let next: String? = index + 1 < arguments.count ? arguments[index + 1] : nil
                if let next, RetryFailed(rawValue: next) != nil {
                    result.append("--retry-failed=" + next)
                    index += 2
                } else {
                    result.append("--retry-failed=" + RetryFailed.transient.rawValue)
                    index += 1
                }
                continue
            }
            result.append(word)
            index += 1
        }
        return result
    }

    /// 5 when rows failed this run and may work on a retry; 3 while the output lacks rows (this run's failures or bad
    /// rows, or an earlier run's left as they were), so that a cron job's rerun does not report a dataset with holes as
    /// done; else 0.
    private func exitStatus(for summary: URLListJob.Summary, interrupted: Bool) -> ExitStatus {
        if interrupted { return .interrupted }
        if summary.tally.failed > 0 { return summary.tally.hasTransientFailures ? .unavailable : .exhausted }
        let missing = summary.tally.invalid + summary.missingTransient + summary.missingPermanent
        return missing == 0 ? .success : .exhausted
    }
}
