import ArgumentParser
import Foundation
import MirrorKit
import MirrorTransport

/// `mirror status DIR|s3://BUCKET/PREFIX`: one table of every shard's stats, whichever copy wrote them.
struct Status: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Sum a WebDataset output's shard stats (every copy of a sharded job) into one table.",
        discussion: """
        Reads every NNNNN_stats.json in the folder or under the s3:// prefix (AWS_* variables as for --out) and adds \
        them up: rows, saved, failed by reason, bytes, throughput, and which shards are done, missing or incomplete.

        Exit codes: 0 every shard up to the highest is done · 3 some are missing or incomplete · 1 the output cannot \
        be read · 4 object storage refused the credentials · 64 usage.
        """
    )

    @Argument(help: "The output: a folder, or s3://BUCKET/PREFIX.")
    var target: String

    @Flag(help: "Print one JSON object instead of the table.")
    var json = false

    func run() async throws {
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
        throw (complete ? ExitStatus.success : ExitStatus.exhausted).exitCode
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
            return try DatasetStatus(names: names) { contents[$0] ?? Data() }
        }
        let directory = URL(fileURLWithPath: target)
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: directory.path)
        } catch {
            throw ValidationError("cannot read \(target): \((error as NSError).localizedDescription)")
        }
        return try DatasetStatus(names: names) { name in
            try Data(contentsOf: directory.appendingPathComponent(name))
        }
    }

    static func table(_ status: DatasetStatus, target: String) -> String {
        func number(_ value: Int) -> String { value.formatted(.number.grouping(.automatic)) }
        var lines = ["\(target)"]
        var shards = "\(number(status.shardsDone)) done"
        if !status.shardsMissing.isEmpty { shards += ", \(status.shardsMissing.count) missing (\(ranges(status.shardsMissing)))" }
        if !status.shardsIncomplete.isEmpty { shards += ", \(status.shardsIncomplete.count) incomplete (\(ranges(status.shardsIncomplete)))" }
        lines.append("  shards      " + shards)
        lines.append("  rows        " + number(status.rows))
        lines.append("  saved       " + number(status.tally.saved) + "  (" + ByteCountFormatter.string(fromByteCount: status.tally.bytes, countStyle: .file) + ")")
        var failed = number(status.tally.failed)
        if !status.tally.failures.isEmpty {
            failed += "  (" + status.tally.failures.sorted { ($1.value, $0.key) < ($0.value, $1.key) }.map { "\($0.key) \(number($0.value))" }.joined(separator: ", ") + ")"
        }
        lines.append("  failed      " + failed)
        for (label, value) in [("bad rows", status.tally.invalid), ("duplicates", status.tally.duplicates), ("filtered", status.tally.filtered), ("opted out", status.tally.optedOut), ("disallowed", status.tally.disallowed)] where value > 0 {
            lines.append("  " + label.padding(toLength: 12, withPad: " ", startingAt: 0) + number(value))
        }
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
