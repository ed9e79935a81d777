import Foundation
import MirrorTestSupport
import Testing

/// What `mirror urls` makes of site files that fail and of tables and folders it cannot use as given (issue 48: 6, 7,
/// 8 and 14), through the built binary.
@Suite("mirror urls, site files that fail and inputs it refuses", .serialized)
struct SiteFilesCommandTests {
    @Test("a robots.txt that answers 503 leaves its rows transient, and --retry-failed fetches them once it recovers")
    func aFailingRobotsFileIsAskedAgain() async throws {
        // Given a host whose robots.txt fails
        let host = try TestServer.start()
        defer { host.stop() }
        host.route("/robots.txt", .status(503))
        host.route("/a.png", .ok(TestImages.png(width: 20, height: 20, seed: 1), contentType: "image/png"))
        host.route("/b.png", .ok(TestImages.png(width: 21, height: 20, seed: 2), contentType: "image/png"))
        let list = [host.url("/a.png"), host.url("/b.png")].map(\.absoluteString).joined(separator: "\n") + "\n"
        let out = TemporaryFolder()

        // When the table runs
        let first = try await MirrorBinary.run(["urls", "-", "--out", out.path], stdin: list)

        // Then nothing is fetched, and the run says the rows may work later (exit 5)
        #expect(first.status == 5, "stderr: \(first.stderr)")
        #expect(host.requests.map(\.path) == ["/robots.txt"])
        #expect(first.stderr.contains("--retry-failed"))

        // When the site recovers, a plain rerun still reports the rows missing, and --retry-failed fetches them
        host.route("/robots.txt", .status(404))
        let again = try await MirrorBinary.run(["urls", "-", "--out", out.path], stdin: list)
        #expect(again.status == 3 || again.status == 5, "stderr: \(again.stderr)")
        let retried = try await MirrorBinary.run(["urls", "-", "--out", out.path, "--retry-failed"], stdin: list)
        #expect(retried.status == 0, "stderr: \(retried.stderr)")
        #expect(Set(out.visibleFiles) == ["a.png", "b.png", "manifest.jsonl"])
    }

    @Test("a run that set robots.txt aside does not answer for a later default run in the same folder")
    func theSiteMemoryDoesNotCarryWhatItDidNotRead() async throws {
        // Given a host whose robots.txt keeps /private/ out, and a first run that set robots.txt aside
        let host = try TestServer.start()
        defer { host.stop() }
        host.route("/robots.txt", .ok(Data("User-agent: *\nDisallow: /private/\n".utf8), contentType: "text/plain"))
        host.route("/.well-known/tdmrep.json", .status(404))
        host.route("/open/a.png", .ok(TestImages.png(width: 20, height: 20, seed: 1), contentType: "image/png"))
        host.route("/private/b.png", .ok(TestImages.png(width: 21, height: 20, seed: 2), contentType: "image/png"))
        let out = TemporaryFolder()
        let first = try await MirrorBinary.run(
            ["urls", "-", "--out", out.path, "--ignore-opt-out", "robots,content-signal,content-usage"],
            stdin: host.url("/open/a.png").absoluteString + "\n"
        )
        #expect(first.status == 0, "stderr: \(first.stderr)")
        #expect(!host.requests.contains { $0.path == "/robots.txt" })

        // When a default run in the same folder, within the day, asks for the private image
        let second = try await MirrorBinary.run(["urls", "-", "--out", out.path, "--json"], stdin: host.url("/private/b.png").absoluteString + "\n")

        // Then it reads robots.txt, and the image is never requested
        #expect(host.requests.filter { $0.path == "/robots.txt" }.count == 1)
        #expect(!host.requests.contains { $0.path == "/private/b.png" })
        let summary = try JSONSerialization.jsonObject(with: Data(second.stdout.utf8)) as? [String: Any]
        #expect(summary?["disallowed"] as? Int == 1, "\(second.stdout) \(second.stderr)")
    }

    @Test("a run whose every row its owner reserved exits 0, as --help and README say")
    func helpSaysWhatExitZeroMeans() async throws {
        let host = try TestServer.start()
        defer { host.stop() }
        host.route("/robots.txt", .ok(Data("User-agent: *\nDisallow: /\n".utf8), contentType: "text/plain"))
        let out = TemporaryFolder()
        let run = try await MirrorBinary.run(["urls", "-", "--out", out.path], stdin: host.url("/a.png").absoluteString + "\n")
        #expect(run.status == 0, "stderr: \(run.stderr)")

        let help = try await MirrorBinary.run(["urls", "--help"])
        let flattened = help.stdout.split(whereSeparator: \.isWhitespace).joined(separator: " ")
        let promise = "0 every row is settled: its image is in the output, or it was kept out on purpose (its owner reserved it, a filter turned it away, or it repeats another)"
        #expect(flattened.contains(promise), "\(help.stdout)")
        let readme = try String(contentsOf: PackageRootForCommands.url.appendingPathComponent("README.md"), encoding: .utf8)
        #expect(readme.contains("every row is settled: its image is in the output, or it was kept out on purpose (its owner reserved it, a filter turned it away, or it repeats another)"))
    }

    @Test("a UTF-16 table is one clear line, with no raw byte-order mark or NUL")
    func aUTF16TableIsSaid() async throws {
        let table = TemporaryFolder()
        var bytes: [UInt8] = [0xFF, 0xFE]
        for unit in "url\nhttp://127.0.0.1:9/a.png\n".utf16 { bytes += [UInt8(unit & 0xFF), UInt8(unit >> 8)] }
        let file = table.url.appendingPathComponent("t.csv")
        try Data(bytes).write(to: file)
        let run = try await MirrorBinary.run(["urls", file.path, "--out", TemporaryFolder().path])
        #expect(run.status == 64, "stderr: \(run.stderr)")
        #expect(run.stderr.contains("UTF-16"), "\(run.stderr)")
        #expect(!run.stderr.utf8.contains(0) && !run.stderr.contains("\u{FEFF}") && !run.stderr.contains("ÿþ"))
        #expect(run.stderr.split(separator: "\n").count == 1)
    }

    @Test("a folder that holds split folders is not filled without --split")
    func aFolderOfSplitsNeedsSplit() async throws {
        let out = TemporaryFolder()
        for split in ["train", "test"] {
            try FileManager.default.createDirectory(at: out.url.appendingPathComponent(split), withIntermediateDirectories: true)
        }
        let run = try await MirrorBinary.run(["urls", "-", "--out", out.path], stdin: "http://127.0.0.1:9/a.png\n")
        #expect(run.status == 64, "stderr: \(run.stderr)")
        #expect(run.stderr.contains("--split"), "\(run.stderr)")
        #expect(Set(out.visibleFiles) == ["test", "train"])
    }
}

/// The package's root folder, for the README.
enum PackageRootForCommands {
    static let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
}
