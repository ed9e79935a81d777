import Foundation
import MirrorTestSupport
import Testing

/// `--user-agent`, end to end: every request of a run carries it (the API's pages, robots.txt, the TDMRep file, the
/// images), and the run obeys what robots.txt and `X-Robots-Tag` address to its product token as well as to `mirror`.
@Suite("--user-agent, end to end", .serialized)
struct UserAgentTests: EmulatedSearch {
    static let agent = "TestBot/2.0 (ops@example.org)"

    private static func json(_ text: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
    }

    /// The `User-Agent` of each request, with its path, for a failure message.
    private static func agents(_ requests: [RecordedRequest]) -> [String] {
        requests.map { "\($0.path): \($0.header("User-Agent") ?? "(none)")" }
    }

    @Test func aSearchSendsTheAgentWithEveryAPICallAndImage() async throws {
        // Given the API emulator
        let api = try emulator()
        defer { api.stop() }
        let out = TemporaryFolder()

        // When mirror searches it as TestBot
        let run = try await MirrorBinary.run(
            ["kittens", "--count", "12", "--out", out.path, "--json", "--quiet", "--no-cache", "--user-agent", Self.agent], environment: environment(api)
        )

        // Then it saves the count, and every request the emulator saw — the API's pages and the images — carried exactly
        // that agent; the summary says which tokens the run answered to
        #expect(run.status == 0, "stderr: \(run.stderr)")
        let requests = api.server.requests
        #expect(requests.contains { $0.path.hasPrefix("/openverse/") } && requests.contains { $0.path.hasPrefix("/images/") })
        #expect(requests.allSatisfy { $0.header("User-Agent") == Self.agent }, "\(Self.agents(requests))")
        let summary = try Self.json(run.stdout)
        #expect(summary["saved"] as? Int == 12)
        #expect(summary["agents"] as? [String] == ["testbot", "mirror"])

        // And a run without it names mirror in every request, and answers to mirror alone
        api.server.resetCounters()
        let plain = TemporaryFolder()
        let standard = try await MirrorBinary.run(["kittens", "--count", "3", "--out", plain.path, "--json", "--quiet", "--no-cache"], environment: environment(api))
        #expect(standard.status == 0, "stderr: \(standard.stderr)")
        #expect(!api.server.requests.isEmpty)
        #expect(api.server.requests.allSatisfy { $0.header("User-Agent")?.hasPrefix("mirror/") == true }, "\(Self.agents(api.server.requests))")
        #expect(try Self.json(standard.stdout)["agents"] as? [String] == ["mirror"])
    }

    /// An origin whose robots.txt keeps one folder from testbot and another from mirror, with a TDMRep file, and
    /// images: two in those folders, two whose `X-Robots-Tag` addresses `noai` to testbot or to another agent, one
    /// plain.
    private static func origin() throws -> TestServer {
        let server = try TestServer.start()
        server.route("/robots.txt", .ok(Data("User-agent: testbot\nDisallow: /bot-only/\n\nUser-agent: mirror\nDisallow: /mirror-only/\n".utf8), contentType: "text/plain"))
        server.route("/.well-known/tdmrep.json", .ok(Data(#"[{"location": "/reserved/", "tdm-reservation": 1}]"#.utf8), contentType: "application/json"))
        for (index, path) in ["/ok.png", "/bot-only/x.png", "/mirror-only/y.png"].enumerated() {
            server.route(path, .ok(TestImages.png(width: 20 + index, height: 20, seed: UInt64(index)), contentType: "image/png"))
        }
        server.route("/tagged.png", Response(headers: [("Content-Type", "image/png"), ("X-Robots-Tag", "testbot: noai")], body: .bytes(TestImages.png(width: 30, height: 20, seed: 7))))
        server.route("/other.png", Response(headers: [("Content-Type", "image/png"), ("X-Robots-Tag", "otherbot: noai")], body: .bytes(TestImages.png(width: 31, height: 20, seed: 8))))
        return server
    }

    @Test func aTableSendsTheAgentWithEveryRequestAndObeysBothTokens() async throws {
        // Given the origin and a table of its five images
        let server = try Self.origin()
        defer { server.stop() }
        let work = TemporaryFolder()
        let table = work.file("table.txt")
        try ["/ok.png", "/bot-only/x.png", "/mirror-only/y.png", "/tagged.png", "/other.png"].map { server.url($0).absoluteString }
            .joined(separator: "\n").write(to: table, atomically: true, encoding: .utf8)

        // When mirror collects them as TestBot
        let run = try await MirrorBinary.run(["urls", table.path, "--out", work.file("out").path, "--json", "--user-agent", Self.agent])

        // Then the folders kept from testbot and from mirror are both disallowed and never requested, the image whose
        // X-Robots-Tag addresses noai to testbot is opted out, and the two others are saved
        #expect(run.status == 0, "stderr: \(run.stderr)")
        let summary = try Self.json(run.stdout)
        #expect(summary["saved"] as? Int == 2)
        #expect(summary["disallowed"] as? Int == 2)
        #expect(summary["refusals"] as? [String: Int] == ["robots": 2, "x-robots-tag": 1])
        #expect(summary["agents"] as? [String] == ["testbot", "mirror"])
        let paths = server.requests.map(\.path)
        #expect(!paths.contains("/bot-only/x.png") && !paths.contains("/mirror-only/y.png"), "\(paths)")
        #expect(paths.filter { $0 == "/robots.txt" }.count == 1 && paths.filter { $0 == "/.well-known/tdmrep.json" }.count == 1, "\(paths)")

        // And every request — robots.txt, the TDMRep file, the images — carried exactly the agent
        #expect(server.requests.allSatisfy { $0.header("User-Agent") == Self.agent }, "\(Self.agents(server.requests))")

        // And a run without it reads mirror's group alone: testbot's folder is fetched, mirror's is not, and every request
        // names mirror
        server.resetCounters()
        let plain = try await MirrorBinary.run(["urls", table.path, "--out", work.file("plain").path, "--json"])
        #expect(plain.status == 0, "stderr: \(plain.stderr)")
        let plainPaths = server.requests.map(\.path)
        #expect(plainPaths.contains("/bot-only/x.png") && !plainPaths.contains("/mirror-only/y.png"), "\(plainPaths)")
        #expect(try Self.json(plain.stdout)["saved"] as? Int == 4)
        #expect(server.requests.allSatisfy { $0.header("User-Agent")?.hasPrefix("mirror/") == true }, "\(Self.agents(server.requests))")
    }

    @Test("an agent with a control character, or over 512 bytes, is a usage error", arguments: ["TestBot/1\r\nX-Injected: 1", "TestBot/1\tx", String(repeating: "a", count: 513), ""])
    func aBadAgentIsAUsageError(agent: String) async throws {
        // When a table run is given it
        let run = try await MirrorBinary.run(["urls", "/tmp/mirror-no-such-table.txt", "--out", "/tmp/mirror-never-made", "--user-agent", agent])

        // Then it exits 64 with one line saying what is wrong, before anything is read or made
        #expect(run.status == 64, "\(run.stderr)")
        let lines = run.stderr.split(separator: "\n").filter { $0.hasPrefix("Error: --user-agent ") }
        #expect(lines.count == 1, "\(run.stderr)")
        #expect(lines.first.map { $0.contains("control character") || $0.contains("bytes long") || $0.contains("is empty") } == true, "\(run.stderr)")
        #expect(!run.stderr.contains("X-Injected"))
        #expect(!FileManager.default.fileExists(atPath: "/tmp/mirror-never-made"))
    }

    @Test func theConfigurationFileKeyUserAgentIsRead() async throws {
        // Given a configuration file that names the agent, TOML's way
        let work = TemporaryFolder()
        let config = work.file("config.toml")
        try "user_agent = \"CfgBot/1.0 (ops@example.org)\"\n".write(to: config, atomically: true, encoding: .utf8)
        let server = try TestServer.start()
        defer { server.stop() }
        server.route("/robots.txt", .ok(Data("User-agent: cfgbot\nDisallow: /\n".utf8), contentType: "text/plain"))

        let table = work.file("table.txt")
        try server.url("/a.png").absoluteString.write(to: table, atomically: true, encoding: .utf8)

        // When mirror config shows the settings, and a table run reads them
        let shown = try await MirrorBinary.run(["config", "urls"], environment: ["MIRROR_CONFIG": config.path])
        let run = try await MirrorBinary.run(["urls", table.path, "--out", work.file("out").path, "--json"], environment: ["MIRROR_CONFIG": config.path])

        // Then the file's value is the option's (shown whole), sent with the request, and its token's group is obeyed
        #expect(shown.stdout.contains("mirror urls --user-agent"), "\(shown.stdout)")
        #expect(shown.stdout.contains("CfgBot/1.0 (ops@example.org)"), "\(shown.stdout)")
        #expect(run.status == 0, "stderr: \(run.stderr)")
        #expect(try Self.json(run.stdout)["disallowed"] as? Int == 1)
        #expect(server.requests.map(\.path) == ["/robots.txt", "/.well-known/tdmrep.json"])
        #expect(server.requests.allSatisfy { $0.header("User-Agent") == "CfgBot/1.0 (ops@example.org)" })
    }

    @Test func helpSaysWhichTokensARunAnswersTo() async throws {
        let help = try await MirrorBinary.run(["urls", "--help"])
        let text = help.stdout.split(whereSeparator: \.isWhitespace).joined(separator: " ")  // as wrapped for any width
        #expect(text.contains("--user-agent <text>"))
        #expect(text.contains("A run answers to the agent's product token") && text.contains("and to mirror"), "\(help.stdout)")
    }
}
