import Foundation
import MirrorTestSupport
import Testing

/// One job as N copies (a SLURM array, a Kubernetes Indexed Job), end to end: the copies run at once into one output
/// and together write exactly what one unsharded run writes; `mirror status` sums them.
@Suite("mirror urls --shard, end to end", .serialized)
struct ShardCommandTests {
    static let rows = 240
    /// Four spellings of loopback: four hosts to a URL parser, one server.
    static let hosts = ["127.0.0.1", "localhost", "127.1", "127.0.1"]

    private func serve() throws -> TestServer {
        let server = try TestServer.start()
        for index in 0..<Self.rows where index % 23 != 4 {
            server.route("/i/\(index).png", .ok(TestImages.png(width: 20 + index % 9, height: 20, seed: UInt64(index)), contentType: "image/png"))
        }
        return server
    }

    /// Rows over four hosts; every 23rd is missing (404), every 37th is not a URL.
    private func table(_ server: TestServer, in work: TemporaryFolder) throws -> URL {
        let port = server.url("/").port!
        var lines = ["url,caption"]
        for index in 0..<Self.rows {
            lines.append(index % 37 == 9 ? "nothing here,row \(index)" : "http://\(Self.hosts[index % 4]):\(port)/i/\(index).png,row \(index)")
        }
        let file = work.file("table.csv")
        try (lines.joined(separator: "\n") + "\n").write(to: file, atomically: true, encoding: .utf8)
        return file
    }

    /// Every shard's record lines, by shard file name: `key status url`.
    private static func records(_ out: URL) throws -> [String: [String]] {
        var result: [String: [String]] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: out.path) where name.hasSuffix(".jsonl") {
            let text = try String(contentsOf: out.appendingPathComponent(name), encoding: .utf8)
            result[name] = text.split(separator: "\n").map { line in
                let object = (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any] ?? [:]
                return "\(object["key"] as? String ?? "?") \(object["status"] as? String ?? "?") \(object["url"] as? String ?? "-")"
            }
        }
        return result
    }

    private static func tarMembers(_ file: URL) throws -> [String] {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/tar")
        process.arguments = ["-tf", file.path]
        let out = Pipe()
        process.standardOutput = out
        try process.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: data, as: UTF8.self).split(separator: "\n").map(String.init)
    }

    private static func files(_ out: URL) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: out.path).filter { !$0.hasPrefix(".") }.sorted()
    }

    @Test func threeCopiesByRowWriteWhatOneRunWrites() async throws {
        let server = try serve()
        defer { server.stop() }
        let work = TemporaryFolder()
        let table = try table(server, in: work)
        let whole = work.file("whole"), sharded = work.file("sharded")
        let common = ["urls", table.path, "--format", "webdataset", "--shard-size", "40", "--no-cache", "--quiet"]

        // Given one unsharded run, and three copies at once into one folder
        let one = try await MirrorBinary.run(common + ["--out", whole.path])
        #expect(one.status == 3, "\(one.stderr.suffix(300))")
        let copies = try (0..<3).map { try MirrorBinary.start(common + ["--out", sharded.path, "--shard", "\($0)/3"]) }
        var statuses: [Int32] = []
        for copy in copies { statuses.append(await copy.finish().status) }

        // Then each copy finished on its own (exit 3: some of its rows are 404s or bad), and together they wrote the
        // same files, the same records and the same samples as the one run
        #expect(statuses == [3, 3, 3])
        #expect(try Self.files(sharded) == Self.files(whole))
        #expect(try Self.files(whole).count == 6 * 3 + 1)  // each shard's tar, records and stats, and sizes.json
        #expect(try Self.records(sharded) == Self.records(whole))
        for index in 0..<6 {
            let name = String(format: "%05d.tar", index)
            #expect(try Self.tarMembers(sharded.appendingPathComponent(name)) == Self.tarMembers(whole.appendingPathComponent(name)))
        }
        // Each copy kept its own state
        let state = try FileManager.default.contentsOfDirectory(atPath: sharded.appendingPathComponent(".mirror").path).sorted()
        #expect(state == ["shard-0-of-3", "shard-1-of-3", "shard-2-of-3"])

        // And status sums the copies' stats to the table
        let status = try await MirrorBinary.run(["status", sharded.path, "--json"])
        let summary = try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any]
        #expect(status.status == 3, "\(status.stderr)")  // every shard done, but rows are missing (404s, bad rows)
        #expect(summary?["rows"] as? Int == Self.rows && summary?["shardsDone"] as? Int == 6)
        #expect((summary?["failures"] as? [String: Int])?["http-404"] == (0..<Self.rows).filter { $0 % 23 == 4 && $0 % 37 != 9 }.count)
    }

    @Test func copiesSplitByHostFromSLURMVariablesKeepEachHostInOneCopy() async throws {
        let server = try serve()
        defer { server.stop() }
        let work = TemporaryFolder()
        let table = try table(server, in: work)
        let out = work.file("out")

        // Given three copies of a SLURM array (--array=1-3), split by host
        var copies: [MirrorBinary.Running] = []
        for task in 1...3 {
            let environment = ["SLURM_ARRAY_TASK_ID": "\(task)", "SLURM_ARRAY_TASK_MIN": "1", "SLURM_ARRAY_TASK_MAX": "3", "SLURM_ARRAY_TASK_COUNT": "3"]
            copies.append(try MirrorBinary.start(
                ["urls", table.path, "--out", out.path, "--format", "webdataset", "--shard-size", "25", "--shard-by", "host", "--no-cache"],
                environment: environment
            ))
        }
        var runs: [MirrorBinary.Run] = []
        for copy in copies { runs.append(await copy.finish()) }

        // Then each says which shard it took and from where, and how much of the table that was
        for (offset, run) in runs.enumerated() {
            #expect(run.stderr.contains("mirror: shard \(offset)/3 by host (from SLURM_ARRAY_TASK_ID=\(offset + 1) of 3 tasks)"), "\(run.stderr.prefix(300))")
            #expect(run.stderr.contains("of \(Self.rows) rows ("))
        }
        // And every row is in exactly one shard, every host's rows in one copy's shards (numbered k·3 + copy)
        let records = try Self.records(out)
        var keys: [String] = []
        var copyOfHost: [String: Int] = [:]
        for (name, lines) in records {
            let copy = Int(name.prefix(5))! % 3
            for line in lines {
                let parts = line.split(separator: " ")
                keys.append(String(parts[0]))
                guard let host = URL(string: String(parts[2]))?.host else { continue }
                #expect(copyOfHost[host, default: copy] == copy, "\(host) in two copies")
                copyOfHost[host] = copy
            }
        }
        #expect(keys.sorted() == (0..<Self.rows).map { String(format: "%09d", $0) })
        #expect(Set(copyOfHost.keys) == Set(Self.hosts) && Set(copyOfHost.values).count == 3)
        let status = try await MirrorBinary.run(["status", out.path])
        // Every shard done; exit 3 as the rows that are 404s or bad rows have no image
        #expect(status.status == 3 && status.stdout.contains("rows        \(Self.rows)"), "\(status.stdout)")
    }

    @Test func aFolderCopyFillsItsOwnSubfolderAndAnIndexWithoutACountIsRefused() async throws {
        let server = try serve()
        defer { server.stop() }
        let work = TemporaryFolder()
        let table = try table(server, in: work)
        let out = work.file("out")

        let run = try await MirrorBinary.run(["urls", table.path, "--out", out.path, "--no-cache", "--quiet"], environment: ["JOB_COMPLETION_INDEX": "1", "MIRROR_SHARDS": "2"])
        #expect(run.status == 3)
        let manifest = try String(contentsOf: out.appendingPathComponent("shard-1-of-2/manifest.jsonl"), encoding: .utf8)
        let keys = manifest.split(separator: "\n").compactMap { ((try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any])?["key"] as? String }
        #expect(!keys.isEmpty && keys.allSatisfy { Int($0)! % 2 == 1 })
        #expect(!FileManager.default.fileExists(atPath: out.appendingPathComponent("shard-0-of-2").path))

        let refused = try await MirrorBinary.run(["urls", table.path, "--out", out.path], environment: ["JOB_COMPLETION_INDEX": "1"])
        #expect(refused.status == 64)
        #expect(refused.stderr.contains("give --shards N (or MIRROR_SHARDS)"), "\(refused.stderr)")
    }
}
