import Foundation
import MirrorTestSupport
import Testing

/// `--retry-failed` end to end: a table whose hosts answer 503 for a fifth of its rows and 404 for a twentieth; the
/// server recovers; only the 503 rows are asked for again, and only the shards that held them are written anew.
/// `scripts/check/check-datasets` reads the rewritten shards with the `webdataset` package (each row once).
@Suite("mirror urls --retry-failed, end to end", .serialized)
struct RetryFailedTests {
    static let rows = 200
    static let shardSize = 20

    /// What row `index` is on the first run: shards 0, 2, 4, 6, 8 have 8 rows in 20 answering 503 (a fifth of the
    /// table); every shard has one row in 20 that is gone (404).
    enum Row: Equatable {
        case image, unavailable, gone

        init(_ index: Int) {
            if index % 20 == 3 { self = .gone }
            else if (index / RetryFailedTests.shardSize) % 2 == 0, index % 5 == 1 || index % 5 == 4 { self = .unavailable }
            else { self = .image }
        }
    }

    static func path(_ index: Int) -> String { "/i/\(index).png" }

    private func serve() throws -> TestServer {
        let server = try TestServer.start()
        for index in 0..<Self.rows {
            switch Row(index) {
            case .image: server.route(Self.path(index), .ok(Self.png(index), contentType: "image/png"))
            case .unavailable: server.route(Self.path(index), .status(503))
            case .gone: server.route(Self.path(index), .status(404))
            }
        }
        return server
    }

    static func png(_ index: Int) -> Data {
        TestImages.png(width: 40 + index % 30, height: 30 + index % 20, seed: UInt64(index))
    }

    /// Every file of the shards and their bytes and modification times.
    private static func snapshot(_ out: URL) throws -> [String: (Data, Date)] {
        var files: [String: (Data, Date)] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: out.path) where !name.hasPrefix(".") {
            let url = out.appendingPathComponent(name)
            let date = try FileManager.default.attributesOfItem(atPath: url.path)[.modificationDate] as! Date
            files[name] = (try Data(contentsOf: url), date)
        }
        return files
    }

    /// The table, one URL a line, in `work`.
    private static func table(_ server: TestServer, in work: TemporaryFolder) throws -> URL {
        let table = work.file("table.txt")
        try (0..<rows).map { server.url(path($0)).absoluteString }.joined(separator: "\n").write(to: table, atomically: true, encoding: .utf8)
        return table
    }

    private static func json(_ text: String) -> [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any] ?? [:]
    }

    @Test func retryingFailedRowsRewritesOnlyTheShardsThatGainSamples() async throws {
        // Given a 200-row table into shards of 20, where 40 rows answer 503 and 10 answer 404
        let server = try serve()
        defer { server.stop() }
        let work = TemporaryFolder()
        let table = try Self.table(server, in: work)
        let out = work.file("out")
        let command = ["urls", table.path, "--out", out.path, "--format", "webdataset", "--shard-size", String(Self.shardSize),
                       "--retries", "0", "--encode", "keep", "--json", "--quiet"]
        let unavailable = (0..<Self.rows).filter { Row($0) == .unavailable }
        let gone = (0..<Self.rows).filter { Row($0) == .gone }
        #expect(unavailable.count == 40 && gone.count == 10)

        // When the first run ends
        let first = try await MirrorBinary.run(command)

        // Then it exits 5 (rows failed that may work later), with every shard complete and the failures filed apart
        #expect(first.status == 5, "\(first.stderr.suffix(500))")
        let summary = Self.json(first.stdout)
        #expect(summary["saved"] as? Int == Self.rows - 50)
        #expect(summary["missingTransient"] as? Int == 40)
        #expect(summary["missingPermanent"] as? Int == 10)
        #expect(summary["shards"] as? Int == 10)
        let status = try await MirrorBinary.run(["status", out.path])
        #expect(status.status == 3)
        #expect(status.stdout.contains("40 may work now: run the same mirror urls command with --retry-failed"), "\(status.stdout)")
        #expect(status.stdout.contains("10 failed for good"), "\(status.stdout)")

        // And a rerun without the flag asks for nothing and exits 3, saying which rows are missing and how to retry
        server.resetCounters()
        let again = try await MirrorBinary.run(Array(command.dropLast()))
        #expect(server.totalRequests == 0)
        #expect(again.status == 3, "\(again.stderr)")
        #expect(again.stderr.contains("40 failed on the network or server and may work now: run the same command with --retry-failed"), "\(again.stderr)")

        // When the server recovers and the job is run with --retry-failed
        for index in unavailable { server.route(Self.path(index), .ok(Self.png(index), contentType: "image/png")) }
        let before = try Self.snapshot(out)
        try await Task.sleep(for: .milliseconds(1100))  // a rewritten file's modification time differs from before
        server.resetCounters()
        let retried = try await MirrorBinary.run(command + ["--retry-failed"])

        // Then every 503 row is asked for once and saved, no 404 row is asked for, and it exits 3 for the 404 rows
        #expect(retried.status == 3, "\(retried.stderr.suffix(500))")
        for index in unavailable { #expect(server.requestCount(path: Self.path(index)) == 1, "row \(index)") }
        for index in gone { #expect(server.requestCount(path: Self.path(index)) == 0, "row \(index)") }
        let result = Self.json(retried.stdout)
        #expect(result["saved"] as? Int == 40)
        #expect(result["shardsRewritten"] as? Int == 5)
        #expect(result["shardsWritten"] as? Int == 0)
        #expect(result["missingTransient"] as? Int == 0)
        #expect(result["missingPermanent"] as? Int == 10)

        // And only the shards that held 503 rows changed: the others keep their bytes and modification times
        let after = try Self.snapshot(out)
        #expect(Set(after.keys) == Set(before.keys))
        for number in 0..<10 {
            for name in [String(format: "%05d.tar", number), String(format: "%05d.jsonl", number), String(format: "%05d_stats.json", number)] {
                let (old, new) = (before[name]!, after[name]!)
                if number % 2 == 0 {
                    #expect(old.0 != new.0 && old.1 != new.1, "\(name) rewritten")
                } else {
                    #expect(old.0 == new.0 && old.1 == new.1, "\(name) untouched")
                }
            }
        }

        // And every shard holds each row once, in row order, with records and stats that add up
        for number in stride(from: 0, to: 10, by: 2) {
            let name = String(format: "%05d", number)
            let listing = try runTool("/bin/tar", ["-tf", out.appendingPathComponent(name + ".tar").path])
            let members = listing.split(separator: "\n").map(String.init)
            let keys = members.compactMap { $0.hasSuffix(".png") ? Int($0.dropLast(4)) : nil }
            let wanted = (number * Self.shardSize..<(number + 1) * Self.shardSize).filter { Row($0) != .gone }
            #expect(keys == wanted, "\(name).tar")
            #expect(members.count == 2 * wanted.count, "\(name).tar: an image and a record per sample")
            let lines = try String(contentsOf: out.appendingPathComponent(name + ".jsonl"), encoding: .utf8).split(separator: "\n")
            let statuses = lines.map { Self.json(String($0))["status"] as? String ?? "?" }
            #expect(statuses == (number * Self.shardSize..<(number + 1) * Self.shardSize).map { Row($0) == .gone ? "failed" : "success" })
            let stats = Self.json(try String(contentsOf: out.appendingPathComponent(name + "_stats.json"), encoding: .utf8))
            #expect(stats["rows"] as? Int == Self.shardSize && stats["saved"] as? Int == wanted.count)
            #expect(stats["failed"] as? Int == 1 && stats["transient"] as? Int == 0)
            #expect((stats["failures"] as? [String: Int]) == ["http-404": 1])
        }
        let sizes = Self.json(try String(contentsOf: out.appendingPathComponent("sizes.json"), encoding: .utf8))
        #expect(sizes.count == 10 && sizes.values.allSatisfy { $0 as? Int == 19 })

        // And status now counts only the rows gone for good
        let final = try await MirrorBinary.run(["status", out.path, "--json"])
        #expect(final.status == 3)
        let totals = Self.json(final.stdout)
        #expect(totals["saved"] as? Int == Self.rows - 10 && totals["failed"] as? Int == 10 && totals["transient"] as? Int == 0)

        // And --retry-failed all asks for the 404 rows once more, and rewrites nothing when they are still gone
        server.resetCounters()
        let all = try await MirrorBinary.run(command + ["--retry-failed", "all"])
        #expect(all.status == 3)
        #expect(gone.map { server.requestCount(path: Self.path($0)) } == Array(repeating: 1, count: 10))
        #expect((0..<Self.rows).filter { Row($0) != .gone }.allSatisfy { server.requestCount(path: Self.path($0)) == 0 })
        #expect(Self.json(all.stdout)["shardsRewritten"] as? Int == 0)
        let unchanged = try Self.snapshot(out)
        for (name, file) in after where name != "sizes.json" { #expect(unchanged[name]?.1 == file.1, "\(name)") }
    }

    @Test func aFolderRemembersItsFailuresAndRetriesThemOnlyWhenAsked() async throws {
        // Given the same table into a folder
        let server = try serve()
        defer { server.stop() }
        let work = TemporaryFolder()
        let table = try Self.table(server, in: work)
        let out = work.file("out")
        let command = ["urls", table.path, "--out", out.path, "--retries", "0", "--json", "--quiet"]
        let first = try await MirrorBinary.run(command)
        #expect(first.status == 5)

        // When it is run again: nothing is asked for, and it exits 3 naming the missing rows
        server.resetCounters()
        let again = try await MirrorBinary.run(command)
        #expect(server.totalRequests == 0)
        #expect(again.status == 3)
        #expect(Self.json(again.stdout)["missingTransient"] as? Int == 40)
        let status = try await MirrorBinary.run(["status", out.path])
        #expect(status.status == 3)
        #expect(status.stdout.contains("40 may work now"), "\(status.stdout)")

        // When the server recovers and the job runs with --retry-failed: the 503 rows alone are asked for, and saved
        for index in (0..<Self.rows) where Row(index) == .unavailable {
            server.route(Self.path(index), .ok(Self.png(index), contentType: "image/png"))
        }
        server.resetCounters()
        let retried = try await MirrorBinary.run(command + ["--retry-failed"])
        #expect(retried.status == 3)
        #expect((0..<Self.rows).map { server.requestCount(path: Self.path($0)) } == (0..<Self.rows).map { Row($0) == .unavailable ? 1 : 0 })
        let result = Self.json(retried.stdout)
        #expect(result["saved"] as? Int == 40 && result["missingTransient"] as? Int == 0 && result["missingPermanent"] as? Int == 10)
        let manifest = try String(contentsOf: out.appendingPathComponent("manifest.jsonl"), encoding: .utf8)
        #expect(manifest.split(separator: "\n").count == Self.rows - 10)
    }
}
