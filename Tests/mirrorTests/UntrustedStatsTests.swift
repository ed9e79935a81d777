import Foundation
import MirrorTestSupport
import Testing

/// A shard's stats file is its completion mark: one that does not read as its stats is not trusted, by `mirror urls`
/// (which downloads the shard again) and `mirror status` (which counts it incomplete and names the file) alike.
@Suite("Shard stats not to be trusted, end to end", .serialized)
struct UntrustedStatsTests {
    static let rows = 6

    /// What replaces shard 0's stats: garbage, JSON that is not stats, stats whose counts do not add up to its rows.
    enum Garbage: String, CaseIterable, Sendable {
        case bytes, emptyObject, countsThatDoNotAddUp

        func contents(replacing stats: Data) throws -> Data {
            switch self {
            case .bytes: return Data([0x00, 0xFF, 0x7B, 0x22]) + Data("rows\": 3, garbage".utf8)
            case .emptyObject: return Data("{}".utf8)
            case .countsThatDoNotAddUp:
                var object = try #require(try JSONSerialization.jsonObject(with: stats) as? [String: Any])
                object["saved"] = (object["saved"] as? Int ?? 0) - 1
                return try JSONSerialization.data(withJSONObject: object)
            }
        }

        /// What mirror says is wrong with it.
        var reason: String {
            switch self {
            case .bytes: "not JSON"
            case .emptyObject: #"no "rows""#
            case .countsThatDoNotAddUp: "its rows' outcomes add up to 2, not its 3 rows"
            }
        }
    }

    @Test("a shard whose stats are not to be trusted is downloaded again, and mirror status says the same of it", arguments: Garbage.allCases)
    func aShardWhoseStatsAreNotToBeTrustedIsRedone(garbage: Garbage) async throws {
        // Given a table of 6 images written as two shards of 3, then shard 0's stats file replaced
        let server = try TestServer.start()
        defer { server.stop() }
        var lines: [String] = []
        for index in 0..<Self.rows {
            server.route("/i/\(index).png", .ok(TestImages.png(width: 20 + index, height: 20, seed: UInt64(index)), contentType: "image/png"))
            lines.append(server.url("/i/\(index).png").absoluteString)
        }
        let work = TemporaryFolder()
        let table = work.file("table.txt")
        try (lines.joined(separator: "\n") + "\n").write(to: table, atomically: true, encoding: .utf8)
        let out = work.file("out")
        let arguments = ["urls", table.path, "--out", out.path, "--format", "webdataset", "--shard-size", "3", "--encode", "keep"]
        let first = try await MirrorBinary.run(arguments)
        #expect(first.status == 0, "stderr: \(first.stderr)")
        let statsFile = out.appendingPathComponent("00000_stats.json")
        try garbage.contents(replacing: try Data(contentsOf: statsFile)).write(to: statsFile)
        let named = "00000_stats.json is not this shard's stats (\(garbage.reason))"

        // When mirror status reads the folder
        let status = try await MirrorBinary.run(["status", out.path])

        // Then shard 0 is incomplete, its stats file named with what is wrong with it: exit 3, not a failure to read
        #expect(status.status == 3, "stdout: \(status.stdout) stderr: \(status.stderr)")
        #expect(status.stdout.contains("  shards      1 done, 1 incomplete (0)"), "\(status.stdout)")
        #expect(status.stdout.contains("  untrusted   \(named): shard 0 counts as incomplete; mirror urls downloads it again"), "\(status.stdout)")
        let json = try await MirrorBinary.run(["status", out.path, "--json"])
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        #expect(object["shardsUntrusted"] as? [Int] == [0] && object["shardsIncomplete"] as? [Int] == [0] && object["shardsDone"] as? Int == 1)

        // When mirror urls runs again
        server.resetCounters()
        let again = try await MirrorBinary.run(arguments)

        // Then it says which file it did not trust, downloads shard 0's rows again (and only those), and exits 0
        #expect(again.status == 0, "stderr: \(again.stderr)")
        #expect(again.stderr.contains("\(named): shard 0 is downloaded again"), "\(again.stderr)")
        #expect(again.stderr.contains("3 saved, 3 already there"), "\(again.stderr)")
        #expect((0..<Self.rows).map { server.requestCount(path: "/i/\($0).png") } == [1, 1, 1, 0, 0, 0])
        let stats = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: statsFile)) as? [String: Any])
        #expect(stats["rows"] as? Int == 3 && stats["saved"] as? Int == 3)
        let listing = try runTool("/bin/tar", ["-tf", out.appendingPathComponent("00000.tar").path])
        #expect(listing.split(separator: "\n").filter { $0.hasSuffix(".png") }.count == 3, "\(listing)")

        // And mirror status agrees: every shard done
        let after = try await MirrorBinary.run(["status", out.path])
        #expect(after.status == 0, "\(after.stdout)")
        #expect(after.stdout.contains("  shards      2 done"), "\(after.stdout)")
    }
}
