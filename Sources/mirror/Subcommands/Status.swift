import ArgumentParser
import Foundation
import MirrorKit
import MirrorTransport

/// `mirror status DIR|s3://BUCKET/PREFIX`: one table of every shard's stats, whichever copy wrote them.
struct Status: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Sum a WebDataset output's shard stats (every copy of a sharded job) into one table, or a folder's failures.",
        discussion: """
        Reads every NNNNN_stats.json in the folder or under the s3:// prefix (AWS_* variables as for --out) and adds \
        them up: rows, saved, failed by reason, bytes, throughput, and which shards are done, missing or incomplete. \
        A stats file that does not read as its shard's stats (not JSON, not stats, counts that do not add up to its \
        rows) is named, and its shard counts as incomplete, as mirror urls treats it: it downloads that shard again.

        A folder of files (mirror urls without --format webdataset) shows its saved images and the URLs that failed, \
        transient and for good, from its state database; a folder of splits (--split) each split's and their sum.

        Exit codes: 0 every shard up to the highest is done and every row has its image · 3 shards are missing or \
        incomplete, or rows failed (the lines say which may work with --retry-failed) · 1 the output cannot be read · \
        4 object storage refused the credentials · 64 usage.
        """
    )

    @Argument(help: "The output: a folder, or s3://BUCKET/PREFIX.")
    var target: String

    @Flag(help: "Print one JSON object instead of the table.")
    var json = false

    func run() async throws {
        if S3Location(target) == nil, let folder = try folderStatus() {
            if json {
                FileHandle.standardOutput.write(Data(folder.json.utf8) + Data("\n".utf8))
            } else {
                let saved = "  saved       " + TallyReport.number(folder.tally.saved)
                print(([target] + folder.splits + [saved] + TallyReport.failureLines(folder.tally) + TallyReport.otherLines(folder.tally)).joined(separator: "\n"))
            }
            throw (folder.tally.failed == 0 ? ExitStatus.success : ExitStatus.exhausted).exitCode
        }
        let status: DatasetStatus
        do {
            status = try await read()
        } catch {
            let (message, code) = describe(error)
            printError(message)
            throw code.exitCode
        }
        if json {
            FileHandle.standardOutput.write(status.json() + Data("\n".utf8))
        } else {
            print(Self.table(status, target: target))
        }
        let complete = status.shardsMissing.isEmpty && status.shardsIncomplete.isEmpty && status.shardsDone > 0
        let lacking = status.tally.failed + status.tally.invalid > 0
        throw (complete && !lacking ? ExitStatus.success : ExitStatus.exhausted).exitCode
    }

    /// A folder of files (`manifest.jsonl`, no shards), or the split folders (`--split`) of one, summed: its saved
    /// images and the failed URLs its state database remembers; `nil` when the target holds shards (or is not a folder).
    private func folderStatus() throws -> (tally: Tally, json: String, splits: [String])? {
        let directory = URL(fileURLWithPath: target)
        var tally: Tally
        var lines: [String] = []
        if let own = try folderTally(directory) {
            tally = own
        } else {
            let splits = try DatasetSplit.allCases.compactMap { split in try folderTally(split.directory(in: directory)).map { (split, $0) } }
            guard !splits.isEmpty else { return nil }
            tally = Tally()
            for (split, counts) in splits {
                tally += counts
                lines.append("  " + split.rawValue.padding(toLength: 12, withPad: " ", startingAt: 0) + TallyReport.number(counts.saved) + " saved")
            }
        }
        // A folder's manifest is counted, not its files' sizes: no `bytes`.
        return (tally, String(decoding: jsonLine(Tally.Encoded(tally, keys: .schema1Names)), as: UTF8.self), lines)
    }

    /// One folder of files (``FolderStatus``); `nil` when it is none.
    private func folderTally(_ directory: URL) throws -> Tally? {
        do {
            return try FolderStatus.tally(of: directory)
        } catch {
            printError(error.description)
            throw ExitStatus.failure.exitCode
        }
    }

    private func read() async throws -> DatasetStatus {
        if let location = S3Location(target) {
            let driver = CurlMultiDriver()
            defer { driver.shutdown() }
            let client = S3Client(location: location, configuration: try S3Configuration.fromEnvironment(), loader: driver)
            let names = try await client.listObjects(prefix: location.prefix).compactMap { location.name(ofKey: $0.key) }
            var contents: [String: Data] = [:]
            for name in names where ShardFileName.parse(name)?.kind == .stats {
                contents[name] = try await client.get(key: location.key(name))
            }
            return DatasetStatus(names: names) { contents[$0] ?? Data() }
        }
        let directory = URL(fileURLWithPath: target)
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: directory.path)
        } catch {
            throw ValidationError("cannot read \(target): \((error as NSError).localizedDescription)")
        }
        return try DatasetStatus(names: names) { name throws(FileError) in
            try ShardCompletion.readStats(at: directory.appendingPathComponent(name))
        }
    }

    static func table(_ status: DatasetStatus, target: String) -> String {
        let number = TallyReport.number
        var lines = ["\(target)"]
        var shards = "\(number(status.shardsDone)) done"
        if !status.shardsMissing.isEmpty { shards += ", \(number(status.shardsMissing.count)) missing (\(ranges(status.shardsMissing)))" }
        if !status.shardsIncomplete.isEmpty { shards += ", \(number(status.shardsIncomplete.count)) incomplete (\(ranges(status.shardsIncomplete)))" }
        lines.append("  shards      " + shards)
        // Stats that do not mark their shard complete: the file and why, and what mirror urls does about it.
        for problem in status.shardsUntrusted.prefix(5) {
            lines.append("  untrusted   \(problem): shard \(problem.shard) counts as incomplete; mirror urls downloads it again")
        }
        if status.shardsUntrusted.count > 5 { lines.append("  untrusted   … and \(status.shardsUntrusted.count - 5) more stats files") }
        lines.append("  rows        " + number(status.rows))
        lines.append("  saved       " + number(status.tally.saved) + "  (" + ByteCountFormatter.string(fromByteCount: status.tally.bytes, countStyle: .file) + ")")
        lines += TallyReport.failureLines(status.tally)
        lines += TallyReport.otherLines(status.tally)
        if let rate = status.imagesPerSecond, let started = status.started, let finished = status.finished {
            lines.append(String(format: "  throughput  %.1f images/s over %.1f s (first shard start to last shard end)", rate, finished - started))
        }
        return lines.joined(separator: "\n")
    }

    /// `3, 5-9, 12`.
    static func ranges(_ numbers: [Int]) -> String {
        var parts: [String] = []
        var index = 0
        while index < numbers.count {
            var end = index
            while end + 1 < numbers.count, numbers[end + 1] == numbers[end] + 1 { end += 1 }
            parts.append(end == index ? "\(numbers[index])" : "\(numbers[index])-\(numbers[end])")
            index = end + 1
        }
        return parts.prefix(20).joined(separator: ", ") + (parts.count > 20 ? ", …" : "")
    }
}
