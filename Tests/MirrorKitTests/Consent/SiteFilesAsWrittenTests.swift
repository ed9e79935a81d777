import Foundation
@testable import MirrorConsent
import MirrorSync
@testable import MirrorFetch
import MirrorStorage
import MirrorTestSupport
@testable import MirrorTransport
import Testing

private func url(_ path: String) -> URL { URL(string: "http://h.test" + path)! }

/// robots.txt read as its owner wrote it (issue 48, defects 1–5, 12, 13): each case failed before the reader was
/// rewritten on Google's reference parser and RFC 9309.
@Suite("robots.txt as written")
struct RobotsAsWrittenTests {
    private func allows(_ robots: String, _ path: String, agents: [String] = ["mirror"]) -> Bool {
        RobotsRules(parsing: Array(robots.utf8), agents: agents).allows(url(path))
    }

    @Test("a pattern ending in * matches what its start matches")
    func aTrailingStarMatches() throws {
        #expect(!allows("User-agent: *\nDisallow: /private/*\n", "/private/a.png"))
        #expect(!allows("User-agent: *\nDisallow: /*?*\n", "/a.png?size=2"))
        #expect(allows("User-agent: *\nDisallow: /*?*\n", "/a.png"))
        #expect(allows("User-agent: *\nDisallow: /\nAllow: /fish*\n", "/fish.png"))
        #expect(!allows("User-agent: *\nDisallow: /\nAllow: /fish*\n", "/cat.png"))
        // and TDMRep's locations and the usage lines share the matcher
        let tdmrep = try TDMRep.Rules(parsing: Data(#"[{"location": "/reserved/*", "tdm-reservation": 1}]"#.utf8))
        #expect(tdmrep.evidence(for: url("/reserved/a.png"))?.term == .tdmReservation(reserved: true))
        let usage = RobotsRules(parsing: "User-agent: *\nContent-Usage: /ai/* train-ai=n\n", agent: "mirror")
        #expect(usage.evidence(for: url("/ai/x.png")).map(\.value) == ["train-ai=n"])
    }

    @Test("CRLF, CR and mixed line ends, and a byte-order mark", arguments: [
        "User-agent: *\r\nDisallow: /\r\n", "User-agent: *\rDisallow: /\r", "User-agent: *\r\n\nDisallow: /", "\u{FEFF}User-agent: *\nDisallow: /\n",
        "\u{FEFF}User-agent: mirror\r\nDisallow: /\r\n\r\nUser-agent: *\r\nAllow: /\r\n",
    ])
    func everyLineEnd(robots: String) {
        #expect(!allows(robots, "/a.png"))
    }

    @Test func lineNumbersCountEachLineEndOnce() {
        let rules = RobotsRules(parsing: Array("# hi\r\n\r\nUser-agent: *\r\nDisallow: /x/\rDisallow: /y/\n".utf8), agents: ["mirror"])
        #expect(rules.refusal(for: url("/x/a"))?.line == 4)
        #expect(rules.refusal(for: url("/y/a"))?.line == 5)
    }

    @Test("non-ASCII in a rule is percent-encoded before comparing")
    func nonASCIIIsEncoded() {
        #expect(!allows("User-agent: *\nDisallow: /été/\n", "/%C3%A9t%C3%A9/a.png"))
        #expect(allows("User-agent: *\nDisallow: /\nAllow: /foo/bar/ツ\n", "/foo/bar/%E3%83%84"))
        // escapes compare without regard to the case of their hex digits, and unreserved ones equal their characters
        #expect(!allows("User-agent: *\nDisallow: /a%2fb\n", "/a%2Fb"))
        #expect(!allows("User-agent: *\nDisallow: /%7Efred/\n", "/~fred/a.png"))
    }

    @Test("the reference's leniencies: no colon, the agent's first word, the common misspellings")
    func leniencies() {
        #expect(!allows("user-agent Mirror\ndisallow /\n", "/a.png"))
        #expect(!allows("User-agent: Mirror Bar\nDisallow: /\n", "/a.png"))
        #expect(!allows("User-agent: mirror/2.0\nDisallow: /\n", "/a.png"))
        #expect(!allows("Useragent: mirror\nDissallow: /\n", "/a.png"))
        #expect(!allows("User agent: mirror\nDisalow: /\n", "/a.png"))
        // three words without a colon are not a line
        #expect(allows("User-agent: *\ndisallow / now\n", "/a.png"))
    }

    @Test("two tokens: where either token's group keeps a URL out, it is out")
    func twoTokens() {
        let robots = "User-agent: testbot\nDisallow: /bot-only/\n\nUser-agent: mirror\nDisallow: /mirror-only/\n\nUser-agent: *\nDisallow: /\n"
        #expect(!allows(robots, "/bot-only/a.png", agents: ["testbot", "mirror"]))
        #expect(!allows(robots, "/mirror-only/a.png", agents: ["testbot", "mirror"]))
        #expect(allows(robots, "/open/a.png", agents: ["testbot", "mirror"]))
        #expect(allows(robots, "/bot-only/a.png", agents: ["mirror"]))
    }

    @Test("the first 500 KiB are read; rules past them are not")
    func only500KiB() {
        let filler = String(repeating: "# filler filler filler filler filler filler filler filler\n", count: 11_000)  // ~640 KB
        let robots = "User-agent: *\nDisallow: /early/\n" + filler + "Disallow: /late/\n"
        #expect(robots.utf8.count > RobotsRules.maximumBytes)
        #expect(!allows(robots, "/early/a.png"))
        #expect(allows(robots, "/late/a.png"))
    }

    @Test("matching is bounded: 9,000 star rules against 5,000-octet paths")
    func matchingIsBounded() {
        // Given a file written to be slow: thousands of patterns with stars that all start every path
        var robots = "User-agent: *\n"
        for index in 0..<9_000 { robots += "Disallow: /*a*a*a*a*b\(index)\n" }
        let rules = RobotsRules(parsing: Array(robots.utf8), agents: ["mirror"])
        let longPath = "/" + String(repeating: "a", count: 5_000)
        // Then each lookup looks at no more octets than its limit, and still decides
        let set = PatternSet((0..<9_000).map { PathPattern("/*a*a*a*a*b\($0)") })
        var work = 0
        let lookup = set.lookup(PathMatching.target(of: url(longPath)), choosing: .longest, work: &work)
        #expect(work <= PatternSet.workLimit + 10_000)
        #expect(lookup == .tooCostly || lookup == .matched([]))
        #expect(rules.allows(url(longPath)) == (lookup == .matched([])))
        #expect(!rules.allows(url("/aaaab17")))
    }

    @Test("X-Robots-Tag: none is noindex, nofollow; one header may address several agents")
    func robotsTagNoneAndSeveralAgents() {
        let tag = XRobotsTag(agents: ["mirror"])
        #expect(tag.directives(value: "none") == ["noindex", "nofollow"])
        #expect(tag.directives(value: "googlebot: noindex, mirror: noai") == ["noai"])
        #expect(tag.directives(value: "mirror: noai, googlebot: noindex") == ["noai"])
        #expect(tag.directives(value: "nofollow, otherbot: noindex") == ["nofollow"])
        let policy = ConsentPolicy()
        let evidence = ResponseSignals.evidence(headers: [(name: "X-Robots-Tag", value: "none")], robotsTag: policy.robotsTag)
        guard case .refused = policy.verdict(evidence) else {
            Issue.record("X-Robots-Tag: none did not reserve AI training")
            return
        }
    }
}

/// The matcher against an independent reading: each pattern translated to a regular expression (`*` is `.*`, a final
/// `$` is the end, the rest literal), on random patterns and paths over a small alphabet, so that stars, anchors and
/// near-misses meet often.
@Suite("path matching, by property")
struct PathMatchingPropertyTests {
    private struct Generator: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    private static func regex(_ pattern: String) throws -> NSRegularExpression {
        var body = Substring(pattern)
        let anchored = body.hasSuffix("$")
        if anchored { body = body.dropLast() }
        let translated = body.split(separator: "*", omittingEmptySubsequences: false)
            .map { NSRegularExpression.escapedPattern(for: String($0)) }.joined(separator: ".*")
        return try NSRegularExpression(pattern: "^" + translated + (anchored ? "$" : ""), options: [.dotMatchesLineSeparators])
    }

    private static func matches(_ regex: NSRegularExpression, _ path: String) -> Bool {
        regex.firstMatch(in: path, range: NSRange(path.startIndex..., in: path)) != nil
    }

    private static func random(_ alphabet: [Character], _ length: ClosedRange<Int>, _ generator: inout Generator) -> String {
        String((0..<Int.random(in: length, using: &generator)).map { _ in alphabet.randomElement(using: &generator)! })
    }

    @Test("100,000 pattern/path pairs agree with the regular expressions")
    func agreesWithRegularExpressions() throws {
        var generator = Generator(state: 48)
        var disagreements: [String] = []
        var matched = 0
        for _ in 0..<10_000 {
            var pattern = "/" + Self.random(["a", "b", "*", "/", "?", "$"], 0...7, &generator)
            if Bool.random(using: &generator) { pattern += "$" }
            let compiled = PathPattern(pattern)
            let regex = try Self.regex(pattern)
            for _ in 0..<10 {
                let path = "/" + Self.random(["a", "b", "/", "?", "$", "*"], 0...10, &generator)
                let expected = Self.matches(regex, path)
                if expected { matched += 1 }
                if compiled.matches(PathMatching.target(Array(path.utf8))) != expected {
                    disagreements.append("\(pattern) on \(path): expected \(expected)")
                }
            }
        }
        #expect(disagreements.isEmpty, "\(disagreements.prefix(20))")
        #expect(matched > 10_000)  // the alphabet makes matches common, so both answers are tried
    }

    @Test("a set's longest and first choices agree with trying every pattern")
    func setsAgreeWithBruteForce() throws {
        var generator = Generator(state: 9309)
        var disagreements: [String] = []
        for _ in 0..<3_000 {
            let patterns = (0..<Int.random(in: 1...12, using: &generator)).map { _ in
                "/" + Self.random(["a", "b", "*", "/"], 0...5, &generator) + (Int.random(in: 0..<4, using: &generator) == 0 ? "$" : "")
            }
            let set = PatternSet(patterns.map(PathPattern.init))
            let regexes = try patterns.map(Self.regex)
            for _ in 0..<8 {
                let path = "/" + Self.random(["a", "b", "/"], 0...8, &generator)
                let matching = regexes.indices.filter { Self.matches(regexes[$0], path) }
                let longest = matching.map { PathPattern(patterns[$0]).length }.max()
                let expectedLongest = matching.filter { PathPattern(patterns[$0]).length == longest }
                let target = PathMatching.target(Array(path.utf8))
                var work = 0
                if set.lookup(target, choosing: .longest, work: &work) != .matched(expectedLongest) {
                    disagreements.append("longest of \(patterns) on \(path)")
                }
                if set.lookup(target, choosing: .first, work: &work) != .matched(Array(matching.prefix(1))) {
                    disagreements.append("first of \(patterns) on \(path)")
                }
            }
        }
        #expect(disagreements.isEmpty, "\(disagreements.prefix(20))")
    }
}

/// Site files that fail are not permission (issue 48, defects 7–11, 14), against the loopback server and libcurl.
@Suite("site files that fail", .serialized)
struct SiteFilesThatFailTests {
    let driver = CurlMultiDriver()

    @Test("a robots.txt over 500 KiB is read to 500 KiB")
    func aLargeFileIsReadToItsBound() async throws {
        let server = try TestServer.start()
        defer { server.stop() }
        let filler = String(repeating: "# filler filler filler filler filler filler filler filler\n", count: 10_500)
        server.route("/robots.txt", .ok(Data(("User-agent: *\nDisallow: /private/\n" + filler).utf8), contentType: "text/plain"))
        let gate = SiteGate(loader: driver)
        #expect(await gate.refusal(for: server.url("/private/a.png")) == "robots.txt disallows /private/a.png")
        #expect(await gate.refusal(for: server.url("/public/a.png")) == nil)
    }

    @Test("a robots.txt that stalls is not permission")
    func aStalledFileDisallowsForNow() async throws {
        // Given a robots.txt whose body stops after its first line and never ends
        let server = try TestServer.start()
        defer { server.stop() }
        server.route("/robots.txt", Response(body: .stall(prefix: Data("User-agent: *\n".utf8), declaredLength: 12_000)))
        let gate = SiteGate(loader: driver, timeout: .seconds(1))

        // Then its URLs are refused for now, transiently, and the TDMRep file is not asked for
        let evidence = await gate.evidence(for: server.url("/a.png"))
        #expect(evidence.first?.term == .unavailable(reason: "timeout", transient: true), "\(evidence)")
        #expect(evidence.first?.value.hasPrefix(SiteGate.siteUnavailablePrefix) == true, "\(evidence)")
        #expect(server.requests.map(\.path) == ["/robots.txt"])
    }

    @Test("the TDMRep file is read even where robots.txt disallows it", arguments: ["Disallow: /.well-known/", "Disallow: /*.json$"])
    func theTDMRepFileIsReadWhereRobotsDisallowsIt(rule: String) async throws {
        let server = try TestServer.start()
        defer { server.stop() }
        server.route("/robots.txt", .ok(Data("User-agent: *\n\(rule)\n".utf8), contentType: "text/plain"))
        server.route("/.well-known/tdmrep.json", .ok(Data(#"[{"location": "/img/", "tdm-reservation": 1}]"#.utf8), contentType: "application/json"))
        let gate = SiteGate(loader: driver)
        let evidence = await gate.evidence(for: server.url("/img/a.png"))
        #expect(evidence.map(\.signal) == [.tdmrepFile])
        #expect(server.requests.map(\.path) == ["/robots.txt", "/.well-known/tdmrep.json"])
    }

    @Test("the site memory says what it read: a run that read less does not answer for one that needs more")
    func theMemoryRecordsWhatWasRead() async throws {
        let server = try TestServer.start()
        defer { server.stop() }
        server.route("/robots.txt", .ok(Data("User-agent: *\nDisallow: /private/\n".utf8), contentType: "text/plain"))
        server.route("/.well-known/tdmrep.json", .status(404))
        let state = TemporaryFolder()

        // Given a run that read only the TDMRep file (robots.txt set aside), and one that read both for `mirror`
        let tdmrepOnly = SiteGate(loader: driver, files: [.tdmrep], memory: try SiteMemory(directory: state.url))
        #expect(await tdmrepOnly.refusal(for: server.url("/private/a.png")) == nil)
        tdmrepOnly.flush()

        // When a default run asks within the day
        let next = SiteGate(loader: driver, memory: try SiteMemory(directory: state.url))
        let refusal = await next.refusal(for: server.url("/private/a.png"))
        next.flush()

        // Then it reads robots.txt, which keeps the URL out
        #expect(refusal == "robots.txt disallows /private/a.png")
        #expect(server.requests.map(\.path) == ["/.well-known/tdmrep.json", "/robots.txt", "/.well-known/tdmrep.json"])

        // And a run answering to another token too asks again, while one for the same token does not
        let otherToken = SiteGate(loader: driver, agents: ["testbot", "mirror"], memory: try SiteMemory(directory: state.url))
        _ = await otherToken.refusal(for: server.url("/a.png"))
        let sameToken = SiteGate(loader: driver, memory: try SiteMemory(directory: state.url))
        _ = await sameToken.refusal(for: server.url("/a.png"))
        #expect(server.requests.count == 5)
    }

    @Test("a site memory that cannot be read is made anew, and said")
    func aBrokenMemoryIsRebuilt() async throws {
        let state = TemporaryFolder()
        let file = state.url.appendingPathComponent("sites.sqlite")
        try Data("this is not a database, but it is long enough to look like a header of one......".utf8).write(to: file)
        let memory = try SiteMemory(directory: state.url)
        #expect(memory.rebuilt?.contains("made anew") == true, "\(memory.rebuilt ?? "nil")")
        memory.remember("http://h.test", files: Data("{}".utf8))
        memory.flush()
        #expect(try SiteMemory(directory: state.url).rebuilt == nil)

        // and one whose table is not this one's
        let other = TemporaryFolder()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/sqlite3")
        process.arguments = [other.url.appendingPathComponent("sites.sqlite").path, "CREATE TABLE sites (host TEXT);"]
        try process.run()
        process.waitUntilExit()
        let wrong = try SiteMemory(directory: other.url)
        #expect(wrong.rebuilt?.contains("columns host") == true, "\(wrong.rebuilt ?? "nil")")
    }

    @Test("a TDMRep file over 1 MiB, or one that cannot be had, is said once")
    func unreadTDMRepFilesAreSaid() async throws {
        let large = try TestServer.start()
        let failing = try TestServer.start()
        defer { large.stop(); failing.stop() }
        for server in [large, failing] { server.route("/robots.txt", .status(404)) }
        large.route("/.well-known/tdmrep.json", .ok(Data(repeating: UInt8(ascii: " "), count: (1 << 20) + 10), contentType: "application/json"))
        failing.route("/.well-known/tdmrep.json", .status(503))
        let notices = Locked<[String]>([])
        let gate = SiteGate(loader: driver, onNotice: { notice in notices.withLock { $0.append(notice) } })
        _ = await gate.evidence(for: large.url("/a.png"))
        _ = await gate.evidence(for: large.url("/b.png"))
        _ = await gate.evidence(for: failing.url("/a.png"))
        let said = notices.withLock { $0 }
        #expect(said.count == 2, "\(said)")
        #expect(said.first?.contains("over 1024 KiB") == true)
        #expect(said.last?.contains("could not be had (HTTP 503)") == true)
    }
}
