import Foundation
@testable import MirrorConsent
import MirrorFetch
@testable import MirrorModel
import MirrorStorage
import MirrorTestSupport
import MirrorTransport
import Testing

/// The standards' own test cases, carried as data in `Fixtures/conformance/` (each file names its source, commit and
/// licence), run through the real ``SiteGate``: for every case a fresh gate (it keeps what an origin's files said, so a
/// fresh one reads them again) asks the loopback server, whose `/robots.txt` and `/.well-known/tdmrep.json` answer
/// with the case's files, about the case's URL on that server.
///
/// - `google-robotstxt.json`: every `IsUserAgentAllowed` expectation of google/robotstxt's `robots_test.cc`, plus a
///   few decisions that its parse assertions imply (line endings, byte order marks, accepted typos; marked `derived`).
/// - `rfc9309.json`: RFC 9309 §5.1 and §5.2, with the decisions the RFC states.
/// - `tdmrep.json`: the TDMRep final report's example files and location rules (`*`, `$`, the first match applies).
/// - `aipref-attach.json`: draft-ietf-aipref-attach's Content-Usage examples and rules.
///
/// Each test gathers every case the gate decides otherwise and fails once, listing them all: test, agent, URL,
/// expected answer and the gate's. The only cases mirror decides otherwise on purpose are in ``departures``.
@Suite("Conformance")
struct ConformanceTests {
    let driver = CurlMultiDriver()

    /// Where google/robotstxt's cases and mirror part on purpose: Google-specific answers only (`googleOnly` in the data),
    /// each with why; mirror is held to the other answer. Keyed by the C++ test's name and the case's URL (`…` in it
    /// stands for any run of characters: GoogleOnly_LineTooLong's URLs are 16 KB).
    static let departures: [Departure] = [
        Departure(
            test: "GoogleOnly_IndexHTMLisDirectory", url: "http://foo.com/allowed-slash/",
            reason: "an Allow of /dir/index.html does not open /dir/: mirror reads only the paths a file writes"
        ),
        Departure(
            test: "ID_Encoding", url: "http://foo.bar/foo/bar/ツ",
            reason: "a URL value holds ツ percent-encoded, as RFC 9309 §2.2.2 compares it; google's matcher takes the caller's bytes"
        ),
        Departure(
            test: "ID_Encoding", url: "http://foo.bar/foo/bar/baz",
            reason: "RFC 9309 §2.2.2 decodes percent-encoded unreserved octets: /foo/bar/%62%61%7A matches /foo/bar/baz"
        ),
    ]

    struct Departure {
        var test: String
        var url: String
        var reason: String

        func covers(_ item: RobotsCase) -> Bool {
            guard item.test == test else { return false }
            let parts = url.split(separator: "…", maxSplits: 1)
            guard parts.count == 2 else { return item.url == url }
            return item.url.hasPrefix(parts[0]) && item.url.hasSuffix(parts[1]) && item.url.count > url.count
        }
    }

    @Test("google/robotstxt's robots_test.cc")
    func googleRobotstxt() async throws {
        // Given google's cases and one server
        let cases = try Self.load([RobotsCase].self, "google-robotstxt.json")
        let server = try TestServer.start()
        defer { server.stop() }

        // When each is asked of a fresh gate
        var mismatches: [String] = []
        var departed: Set<String> = []
        for (number, item) in zip(1..., cases) {
            let answer = await ask(item.url, agent: item.agent, robots: item.body, tdmrep: nil, on: server)
            let allowed = answer.refusal == nil
            if let departure = Self.departures.first(where: { $0.covers(item) }) {
                // Then a departure is a Google-specific case, decided the other way
                departed.insert(departure.url)
                #expect(item.googleOnly == true, "departure \(item.test) \(item.url) is not a Google-specific case")
                if allowed == item.allowed {
                    mismatches.append(Self.describe(number, item, answer, expected: !item.allowed) + " (a departure: \(departure.reason))")
                }
            } else if allowed != item.allowed {
                mismatches.append(Self.describe(number, item, answer, expected: item.allowed))
            }
        }

        // Then the gate decides every other case as google's matcher does
        let unused = Self.departures.map(\.url).filter { !departed.contains($0) }
        #expect(unused.isEmpty, "a departure names no case: \(unused)")
        #expect(mismatches.isEmpty, Self.summary(mismatches, of: cases.count, "google/robotstxt"))
    }

    @Test("RFC 9309 §5.1 and §5.2")
    func rfc9309Examples() async throws {
        let cases = try Self.load([RobotsCase].self, "rfc9309.json")
        let server = try TestServer.start()
        defer { server.stop() }

        var mismatches: [String] = []
        for (number, item) in zip(1..., cases) {
            let answer = await ask(item.url, agent: item.agent, robots: item.body, tdmrep: nil, on: server)
            if (answer.refusal == nil) != item.allowed { mismatches.append(Self.describe(number, item, answer, expected: item.allowed)) }
        }

        #expect(mismatches.isEmpty, Self.summary(mismatches, of: cases.count, "RFC 9309"))
    }

    @Test("TDMRep final report: tdmrep.json examples and location rules")
    func tdmrepLocations() async throws {
        // Given each case's file as the origin's /.well-known/tdmrep.json, and no robots.txt
        let cases = try Self.load([TDMRepCase].self, "tdmrep.json")
        let server = try TestServer.start()
        defer { server.stop() }

        // When each case's URL is asked about, Then the reservation (and its policy) is the one the report gives
        var mismatches: [String] = []
        for (number, item) in zip(1..., cases) {
            let answer = await ask(item.url, agent: "mirror", robots: nil, tdmrep: Data(item.file.utf8), on: server)
            let rule = answer.evidence.first { $0.signal == .tdmrepFile }
            let reserved: Bool? = if case let .tdmReservation(reserved)? = rule?.term { reserved } else { nil }
            let policyDiffers = item.policy != nil && rule?.policy != item.policy
            if reserved != item.reserved || policyDiffers {
                mismatches.append(
                    "#\(number) \(item.test) | \(Self.short(item.url)) | expected \(Self.reservation(item.reserved, item.policy)), gate: "
                        + Self.reservation(reserved, rule?.policy) + Self.askedNote(item.url, answer.asked)
                )
            }
        }

        #expect(mismatches.isEmpty, Self.summary(mismatches, of: cases.count, "TDMRep"))
    }

    @Test("draft-ietf-aipref-attach: Content-Usage in robots.txt")
    func aiprefAttach() async throws {
        let cases = try Self.load([AttachCase].self, "aipref-attach.json")
        let server = try TestServer.start()
        defer { server.stop() }

        var mismatches: [String] = []
        for (number, item) in zip(1..., cases) {
            let answer = await ask(item.url, agent: item.agent, robots: Data(item.robots.utf8), tdmrep: nil, on: server)
            let crawl = answer.refusal == nil
            // The draft gives the order of rules no meaning: the statements are compared as a set of lines.
            let usage = answer.evidence.filter { $0.signal == .contentUsage }.map(\.value)
            if crawl != item.crawl || usage.sorted() != item.expected.sorted() {
                mismatches.append(
                    "#\(number) \(item.test) | agent \(item.agent) | \(Self.short(item.url)) | expected \(item.crawl ? "crawl" : "no crawl") "
                        + "\(item.expected), gate: \(crawl ? "crawl" : "no crawl") \(usage)" + Self.askedNote(item.url, answer.asked)
                )
            }
        }

        #expect(mismatches.isEmpty, Self.summary(mismatches, of: cases.count, "aipref-attach"))
    }

    @Test func everyFileIsRun() throws {
        // The folder holds the four files the tests above read, so that a new one cannot go unrun
        #expect(try FileManager.default.contentsOfDirectory(atPath: Self.folder.path).sorted() == Self.files)
    }

    static let files = ["aipref-attach.json", "google-robotstxt.json", "rfc9309.json", "tdmrep.json"]

    // MARK: Asking the gate

    /// What a fresh gate for `agent` says of `url`'s path and query on `server`, with the origin's robots.txt and TDMRep
    /// file as given (`nil`: 404).
    private func ask(_ url: String, agent: String, robots: Data?, tdmrep: Data?, on server: TestServer) async -> Answer {
        server.route("/robots.txt", robots.map { .ok($0, contentType: "text/plain") } ?? .status(404))
        server.route("/.well-known/tdmrep.json", tdmrep.map { .ok($0, contentType: "application/json") } ?? .status(404))
        // URL(string:) percent-encodes what a URL cannot hold as it is (google's un-encoded `/foo/bar/ツ`): the gate is
        // asked about the URL mirror would have, and a mismatch says so (`asked as`).
        guard let asked = URL(string: "http://127.0.0.1:\(server.port)" + Self.pathAndQuery(of: url)) else {
            return Answer(asked: nil, evidence: [])
        }
        let gate = SiteGate(loader: driver, agent: agent)
        return Answer(asked: asked, evidence: await gate.evidence(for: asked))
    }

    struct Answer {
        /// The URL the gate was asked about, or `nil` when none could be made.
        var asked: URL?
        var evidence: [ConsentEvidence]
        /// Why robots.txt refuses the URL, or `nil`.
        var refusal: String? {
            asked == nil ? "no URL could be made" : evidence.first { $0.term == .disallow }?.value
        }
    }

    /// `http://foo.bar/x/y?z` → `/x/y?z`; no path → `/` (google's empty URL too: its matcher reads it as `/`).
    static func pathAndQuery(of url: String) -> String {
        guard let scheme = url.range(of: "://") else { return url.isEmpty ? "/" : url }
        let afterScheme = url[scheme.upperBound...]
        guard let start = afterScheme.firstIndex(where: { $0 == "/" || $0 == "?" }) else { return "/" }
        let tail = String(afterScheme[start...])
        return tail.hasPrefix("?") ? "/" + tail : tail
    }

    // MARK: Cases

    /// A robots.txt case: google's, or RFC 9309's.
    struct RobotsCase: Decodable {
        var test: String
        var robots: String?
        /// A body that is not UTF-8 (a partial byte order mark).
        var robotsBase64: String?
        var agent: String
        var url: String
        var allowed: Bool
        var googleOnly: Bool?
        /// What a case that is not one of the reference's expectations is derived from.
        var derived: String?

        var body: Data {
            robotsBase64.flatMap { Data(base64Encoded: $0) } ?? Data((robots ?? "").utf8)
        }
    }

    struct TDMRepCase: Decodable {
        var test: String
        var file: String
        var url: String
        /// The `tdm-reservation` that applies; `nil` for unset.
        var reserved: Bool?
        /// The `tdm-policy` that goes with it, when the case states one.
        var policy: String?
    }

    struct AttachCase: Decodable {
        var test: String
        var robots: String
        var agent: String
        var url: String
        /// Whether Allow/Disallow let the URL be fetched.
        var crawl: Bool
        /// The `category=y|n` pairs of the Content-Usage rules that apply.
        var expected: [String]
    }

    private struct Fixture<Cases: Decodable>: Decodable {
        var cases: Cases
    }

    static let folder = PackageRoot.url.appendingPathComponent("Tests/MirrorKitTests/Fixtures/conformance")

    static func load<Cases: Decodable>(_ type: Cases.Type, _ name: String) throws -> Cases {
        try JSONDecoder().decode(Fixture<Cases>.self, from: Data(contentsOf: folder.appendingPathComponent(name))).cases
    }

    // MARK: Reporting

    /// `3 of 31 TDMRep cases decided otherwise:` and one line for each.
    static func summary(_ mismatches: [String], of total: Int, _ what: String) -> Comment {
        Comment(rawValue: "\(mismatches.count) of \(total) \(what) cases decided otherwise:\n" + mismatches.joined(separator: "\n"))
    }

    /// `#12 ID_LongestMatch | agent FooBot | http://foo.bar/x | expected allowed, gate: robots.txt disallows /x`: `#12` is the
    /// case's place in its file (from 1), which tells apart the cases of one test that differ only in their robots.txt.
    static func describe(_ number: Int, _ item: RobotsCase, _ answer: Answer, expected allowed: Bool) -> String {
        "#\(number) \(item.test)\(item.derived == nil ? "" : " (derived)") | agent \(item.agent.isEmpty ? "(empty)" : item.agent) | \(short(item.url)) | expected "
            + "\(allowed ? "allowed" : "disallowed"), gate: \(answer.refusal.map(short) ?? "allowed")" + askedNote(item.url, answer.asked)
    }

    /// ` (asked as …)` when the URL the gate was asked about does not carry the case's path and query byte for byte.
    static func askedNote(_ url: String, _ asked: URL?) -> String {
        guard let asked else { return "" }
        let carried = asked.path(percentEncoded: true) + (asked.query(percentEncoded: true).map { "?" + $0 } ?? "")
        return carried == pathAndQuery(of: url) ? "" : " (asked as \(short(carried)))"
    }

    static func reservation(_ reserved: Bool?, _ policy: String?) -> String {
        switch reserved {
        case true?: "reserved" + (policy.map { " (policy \($0))" } ?? "")
        case false?: "not reserved"
        case nil: "unset"
        }
    }

    /// The URL, its middle cut when it is long (GoogleOnly_LineTooLong's are 16 KB).
    static func short(_ text: String) -> String {
        guard text.count > 100 else { return text.isEmpty ? "(empty)" : text }
        return "\(text.prefix(50))…\(text.suffix(30)) (\(text.utf8.count) bytes)"
    }
}
