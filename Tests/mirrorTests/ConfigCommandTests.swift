import Foundation
import MirrorTestSupport
import Testing

/// The configuration file and MIRROR_* variables under the command line: file < environment < flag.
@Suite("mirror config, end to end", .serialized)
struct ConfigCommandTests {
    private func serve(_ work: TemporaryFolder) throws -> (TestServer, URL) {
        let server = try TestServer.start()
        var lines = ["url"]
        for index in 0..<6 {
            server.route("/i/\(index).png", .ok(TestImages.png(width: 20, height: 20, seed: UInt64(index)), contentType: "image/png"))
            lines.append(server.url("/i/\(index).png").absoluteString)
        }
        let table = work.file("t.csv")
        try (lines.joined(separator: "\n") + "\n").write(to: table, atomically: true, encoding: .utf8)
        return (server, table)
    }

    private func config(_ work: TemporaryFolder, _ text: String, mode: Int = 0o600) throws -> URL {
        let file = work.file("config.toml")
        try text.write(to: file, atomically: true, encoding: .utf8)
        chmod(file.path, mode_t(mode))
        return file
    }

    private static func isShards(_ out: URL) -> Bool { FileManager.default.fileExists(atPath: out.appendingPathComponent("00000.tar").path) }

    @Test func theFileIsUnderTheEnvironmentWhichIsUnderTheCommandLine() async throws {
        let work = TemporaryFolder()
        let (server, table) = try serve(work)
        defer { server.stop() }
        let file = try config(work, "quiet = true\n[urls]\nformat = \"webdataset\"\nshard-size = 3\n")
        let base = ["MIRROR_CONFIG": file.path]

        // The file alone: shards of 3
        let fromFile = work.file("a")
        let a = try await MirrorBinary.run(["urls", table.path, "--out", fromFile.path, "--no-cache"], environment: base)
        #expect(a.status == 0 && a.stderr.isEmpty, "\(a.stderr)")  // quiet = true from the file
        #expect(Self.isShards(fromFile) && FileManager.default.fileExists(atPath: fromFile.appendingPathComponent("00001.tar").path))

        // The environment over the file: a folder
        let fromEnvironment = work.file("b")
        let b = try await MirrorBinary.run(["urls", table.path, "--out", fromEnvironment.path, "--no-cache"], environment: base.merging(["MIRROR_FORMAT": "folder"]) { $1 })
        #expect(b.status == 0 && !Self.isShards(fromEnvironment))
        #expect(FileManager.default.fileExists(atPath: fromEnvironment.appendingPathComponent("manifest.jsonl").path))

        // The command line over both: shards again, of 6
        let fromFlag = work.file("c")
        let c = try await MirrorBinary.run(
            ["urls", table.path, "--out", fromFlag.path, "--no-cache", "--format", "webdataset", "--shard-size", "6"],
            environment: base.merging(["MIRROR_FORMAT": "folder", "MIRROR_SHARD_SIZE": "2"]) { $1 }
        )
        #expect(c.status == 0 && Self.isShards(fromFlag))
        #expect(!FileManager.default.fileExists(atPath: fromFlag.appendingPathComponent("00001.tar").path))

        // And mirror config says where each came from
        let shown = try await MirrorBinary.run(["config", "urls", "--json"], environment: base.merging(["MIRROR_FORMAT": "folder"]) { $1 })
        let object = try JSONSerialization.jsonObject(with: Data(shown.stdout.utf8)) as? [String: Any]
        let rows = object?["settings"] as? [[String: String]] ?? []
        #expect(rows.contains { $0["option"] == "--format" && $0["value"] == "folder" && $0["from"] == "environment MIRROR_FORMAT" })
        #expect(rows.contains { $0["option"] == "--shard-size" && $0["value"] == "3" && $0["from"] == "config file [urls]" })
    }

    @Test func aKeyInAFileOthersCanReadIsRefused() async throws {
        let work = TemporaryFolder()
        let secret = "sekrit-\(UUID().uuidString.prefix(8))"
        let file = try config(work, "[providers.flickr]\nFLICKR_API_KEY = \"\(secret)\"\n", mode: 0o644)

        let refused = try await MirrorBinary.run(["providers"], environment: ["MIRROR_CONFIG": file.path, "FLICKR_API_KEY": ""])
        #expect(refused.status == 4)
        #expect(refused.stderr.contains("holds FLICKR_API_KEY but is readable by others (mode 644): chmod 600"), "\(refused.stderr)")
        #expect(!(refused.stdout + refused.stderr).contains(secret))

        // Private to its owner, the key is used (and never printed); the environment still wins over it
        chmod(file.path, 0o600)
        let accepted = try await MirrorBinary.run(["providers", "--json"], environment: ["MIRROR_CONFIG": file.path, "FLICKR_API_KEY": ""])
        let rows = try JSONSerialization.jsonObject(with: Data(accepted.stdout.utf8)) as? [[String: String]] ?? []
        #expect(rows.first { $0["name"] == "flickr" }?["ready"] == "yes", "\(accepted.stdout)")
        let shown = try await MirrorBinary.run(["config"], environment: ["MIRROR_CONFIG": file.path, "FLICKR_API_KEY": "from-env"])
        #expect(shown.stdout.contains("FLICKR_API_KEY") && shown.stdout.contains("(set, not shown)") && shown.stdout.contains("environment (over config file [providers.flickr])"))
        #expect(!(shown.stdout + shown.stderr).contains(secret) && !shown.stdout.contains("from-env"))
    }

    @Test func aKeyThatIsNoOptionOrAFileThatDoesNotParseIsAUsageError() async throws {
        let work = TemporaryFolder()
        let typo = try config(work, "[urls]\nconcurency = 8\n")
        let run = try await MirrorBinary.run(["urls", "x.csv", "--out", work.file("o").path], environment: ["MIRROR_CONFIG": typo.path])
        #expect(run.status == 64 && run.stderr.contains("[urls] concurency is not an option of mirror urls"), "\(run.stderr)")
        let broken = try config(work, "[urls\nformat = 1\n")
        let parse = try await MirrorBinary.run(["urls", "x.csv", "--out", work.file("o").path], environment: ["MIRROR_CONFIG": broken.path])
        #expect(parse.status == 64 && parse.stderr.contains("config.toml:1"), "\(parse.stderr)")
    }
}
