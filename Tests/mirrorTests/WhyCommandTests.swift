import Foundation
import MirrorTestSupport
import Testing

/// `mirror why URL…` end to end: the site's files read afresh on loopback, every signal named with its line or rule,
/// the decision and its exit code; the image requested only with `--fetch`.
@Suite("mirror why, end to end", .serialized)
struct WhyCommandTests {
    /// robots.txt with a comment and blank lines, so that a rule's line number is not its position among the rules.
    static let robots = """
        # mirror why: a comment first

        User-agent: *
        Allow: /public/
        Disallow: /private/
        Content-Usage: /public/usage/ train-ai=n

        User-agent: testbot
        Disallow: /bot/

        """

    /// An origin serving that robots.txt, a TDMRep file reserving `/public/tdm/`, and images, one of which carries
    /// `X-Robots-Tag: noai`.
    private static func origin() throws -> TestServer {
        let server = try TestServer.start()
        server.route("/robots.txt", .ok(Data(robots.utf8), contentType: "text/plain"))
        server.route("/.well-known/tdmrep.json", .ok(Data("""
            [{"location": "/public/tdm/", "tdm-reservation": 1, "tdm-policy": "https://why.test/policy.json"},
             {"location": "/", "tdm-reservation": 0}]
            """.utf8), contentType: "application/json"))
        for (index, path) in ["/public/b.png", "/private/a.png", "/bot/d.png", "/public/tdm/c.png", "/public/usage/e.png"].enumerated() {
            server.route(path, .ok(TestImages.png(width: 20 + index, height: 20, seed: UInt64(index)), contentType: "image/png"))
        }
        server.route("/public/noai.png", Response(headers: [("Content-Type", "image/png"), ("X-Robots-Tag", "noai")], body: .bytes(TestImages.png(width: 40, height: 20, seed: 9))))
        return server
    }

    private static func imagesRequested(_ server: TestServer) -> [String] {
        server.requests.map(\.path).filter { $0 != "/robots.txt" && $0 != TDMRepFile.path }
    }

    private enum TDMRepFile { static let path = "/.well-known/tdmrep.json" }

    @Test func aDisallowedURLNamesItsGroupRuleAndLineAndExits3() async throws {
        // Given the origin
        let server = try Self.origin()
        defer { server.stop() }

        // When mirror is asked why about a URL under /private/
        let run = try await MirrorBinary.run(["why", server.url("/private/a.png").absoluteString])

        // Then it names the group, the rule as written and its line (5: after a comment and a blank line), and the
        // decision; exit 3
        #expect(run.status == 3, "stdout: \(run.stdout) stderr: \(run.stderr)")
        #expect(run.stdout.contains("robots.txt for mirror: group *, Disallow: /private/ (line 5): disallowed"), "\(run.stdout)")
        #expect(run.stdout.contains("decision: refused by robots robots.txt disallows /private/a.png (robots.txt Disallow: /private/ (group *, line 5))"), "\(run.stdout)")

        // And only the site's files were asked for, once each: the image was not
        #expect(Self.imagesRequested(server).isEmpty, "\(server.requests.map(\.path))")
        #expect(server.requestCount(path: "/robots.txt") == 1)
    }

    @Test func anAllowedURLExits0AndNamesItsTDMRepRule() async throws {
        let server = try Self.origin()
        defer { server.stop() }

        // When asked about a URL that robots.txt allows and the TDMRep file's second rule leaves open
        let run = try await MirrorBinary.run(["why", server.url("/public/b.png").absoluteString])

        // Then the allowing rule and its line, the TDMRep rule by number and location, and "allowed"; exit 0
        #expect(run.status == 0, "stdout: \(run.stdout) stderr: \(run.stderr)")
        #expect(run.stdout.contains("group *, Allow: /public/ (line 4): allowed"), "\(run.stdout)")
        #expect(run.stdout.contains("/.well-known/tdmrep.json rule 2 (location /): tdm-reservation: 0: reserves nothing"), "\(run.stdout)")
        #expect(run.stdout.contains("decision: allowed"), "\(run.stdout)")
        #expect(Self.imagesRequested(server).isEmpty)
    }

    @Test func theTDMRepRuleAndTheContentUsageLineThatRefuseAreNamed() async throws {
        let server = try Self.origin()
        defer { server.stop() }

        // When asked about one URL the TDMRep file reserves and one a Content-Usage line of robots.txt reserves
        let run = try await MirrorBinary.run(["why", server.url("/public/tdm/c.png").absoluteString, server.url("/public/usage/e.png").absoluteString])

        // Then each is refused by its signal, named with its rule number or line; exit 3; the site's files read once
        #expect(run.status == 3, "stdout: \(run.stdout) stderr: \(run.stderr)")
        #expect(run.stdout.contains("/.well-known/tdmrep.json rule 1 (location /public/tdm/): tdm-reservation: 1, policy https://why.test/policy.json: reserves ai-train"), "\(run.stdout)")
        #expect(run.stdout.contains("decision: refused by tdmrep-file tdm-reservation: 1 (/.well-known/tdmrep.json rule 1 (location /public/tdm/))"), "\(run.stdout)")
        #expect(run.stdout.contains("Content-Usage train-ai=n (robots.txt, group *, path /public/usage/, line 6): reserves ai-train"), "\(run.stdout)")
        #expect(run.stdout.contains("decision: refused by content-usage train-ai=n"), "\(run.stdout)")
        #expect(server.requestCount(path: "/robots.txt") == 1 && server.requestCount(path: TDMRepFile.path) == 1)
        #expect(Self.imagesRequested(server).isEmpty)

        // And for a search index, which neither reserves, both are allowed
        let search = try await MirrorBinary.run(["why", "--purpose", "search", server.url("/public/usage/e.png").absoluteString])
        #expect(search.status == 0, "stdout: \(search.stdout)")
    }

    @Test func theAgentsGroupIsTheOneNamed() async throws {
        let server = try Self.origin()
        defer { server.stop() }
        let url = server.url("/bot/d.png").absoluteString

        // When asked as TestBot/1, and as mirror
        let asBot = try await MirrorBinary.run(["why", url, "--user-agent", "TestBot/1"])
        let asMirror = try await MirrorBinary.run(["why", url])

        // Then testbot reads its own group, whose rule on line 9 keeps it out, and mirror still reads * (no rule)
        #expect(asBot.status == 3, "stdout: \(asBot.stdout) stderr: \(asBot.stderr)")
        #expect(asBot.stdout.contains("for ai-train, as testbot, mirror"), "\(asBot.stdout)")
        #expect(asBot.stdout.contains("robots.txt for testbot: group for testbot, Disallow: /bot/ (line 9): disallowed"), "\(asBot.stdout)")
        #expect(asBot.stdout.contains("robots.txt for mirror: group *, no rule matches: allowed"), "\(asBot.stdout)")
        #expect(asMirror.status == 0, "stdout: \(asMirror.stdout)")
        // and the files were asked for as TestBot/1
        #expect(server.requests.contains { $0.path == "/robots.txt" && $0.header("User-Agent") == "TestBot/1" })
    }

    @Test func jsonHasOneObjectPerURLWithEveryField() async throws {
        let server = try Self.origin()
        defer { server.stop() }

        // When asked for JSON about a refused and an allowed URL, as TestBot/1
        let run = try await MirrorBinary.run(["why", "--json", "--user-agent", "TestBot/1", server.url("/bot/d.png").absoluteString, server.url("/public/b.png").absoluteString])

        // Then an array of two objects with the fields, in the URLs' order; exit 3 (one is refused)
        #expect(run.status == 3, "stdout: \(run.stdout) stderr: \(run.stderr)")
        let array = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [[String: Any]])
        #expect(array.count == 2)
        let refused = array[0]
        #expect(refused["url"] as? String == server.url("/bot/d.png").absoluteString)
        #expect(refused["purpose"] as? String == "ai-train")
        #expect(refused["agents"] as? [String] == ["testbot", "mirror"])
        let robots = try #require(refused["robots"] as? [String: Any])
        #expect(robots["group"] as? String == "testbot")
        #expect(robots["rule"] as? String == "Disallow: /bot/")
        #expect(robots["line"] as? Int == 9)
        #expect(robots["allowed"] as? Bool == false)
        #expect(refused["usage"] as? [Any] != nil)
        #expect(refused["decision"] as? String == "refused")
        let refusedBy = try #require(refused["refusedBy"] as? [String: Any])
        #expect(refusedBy["signal"] as? String == "robots")
        #expect(refusedBy["value"] as? String == "robots.txt disallows /bot/d.png")
        #expect((refusedBy["location"] as? String)?.contains("line 9") == true)
        #expect(refused.keys.contains("tdmrep") && refused["headers"] == nil && refused["marks"] == nil)

        let allowed = array[1]
        #expect(allowed["decision"] as? String == "allowed")
        #expect(allowed["refusedBy"] is NSNull)
        let tdmrep = try #require(allowed["tdmrep"] as? [String: Any])
        #expect(tdmrep["number"] as? Int == 2 && tdmrep["location"] as? String == "/" && tdmrep["reservation"] as? Int == 0)
        #expect(Self.imagesRequested(server).isEmpty)
    }

    @Test func fetchReadsTheImagesHeadersAndMarks() async throws {
        let server = try Self.origin()
        defer { server.stop() }

        // When asked with --fetch about an image whose response says X-Robots-Tag: noai, and a plain one
        let tagged = try await MirrorBinary.run(["why", "--fetch", server.url("/public/noai.png").absoluteString])
        let plain = try await MirrorBinary.run(["why", "--fetch", "--json", server.url("/public/b.png").absoluteString])

        // Then the header refuses the first (exit 3), each image was requested once, and the plain one is allowed with
        // its headers and marks read (none)
        #expect(tagged.status == 3, "stdout: \(tagged.stdout) stderr: \(tagged.stderr)")
        #expect(tagged.stdout.contains("X-Robots-Tag noai (X-Robots-Tag header): reserves ai-train"), "\(tagged.stdout)")
        #expect(tagged.stdout.contains("decision: refused by x-robots-tag noai (X-Robots-Tag header)"), "\(tagged.stdout)")
        #expect(plain.status == 0, "stdout: \(plain.stdout) stderr: \(plain.stderr)")
        let object = try #require((try JSONSerialization.jsonObject(with: Data(plain.stdout.utf8)) as? [[String: Any]])?.first)
        #expect(object["headers"] as? [Any] != nil && object["marks"] as? [Any] != nil)
        #expect((object["image"] as? [String: Any])?["format"] as? String == "png")
        #expect(Self.imagesRequested(server) == ["/public/noai.png", "/public/b.png"])

        // And a URL robots.txt disallows is not requested even with --fetch
        let disallowed = try await MirrorBinary.run(["why", "--fetch", server.url("/private/a.png").absoluteString])
        #expect(disallowed.status == 3)
        #expect(!Self.imagesRequested(server).contains("/private/a.png"))
    }

    @Test func aSiteFileThatCannotBeHadIsNotKnownAndExits5() async throws {
        // Given an origin whose robots.txt answers 503
        let server = try TestServer.start()
        defer { server.stop() }
        server.route("/robots.txt", .status(503))

        let run = try await MirrorBinary.run(["why", server.url("/a.png").absoluteString])

        #expect(run.status == 5, "stdout: \(run.stdout) stderr: \(run.stderr)")
        #expect(run.stdout.contains("decision: not known: robots.txt could not be had (HTTP 503)"), "\(run.stdout)")
    }

    @Test("a URL that is not http or https is a usage error", arguments: ["ftp://example.org/a.png", "not a url", "file:///etc/passwd"])
    func aURLThatIsNotHTTPIsAUsageError(url: String) async throws {
        let run = try await MirrorBinary.run(["why", url])
        #expect(run.status == 64, "\(run.stderr)")
        #expect(run.stderr.contains("is not an http or https URL"), "\(run.stderr)")
    }
}
