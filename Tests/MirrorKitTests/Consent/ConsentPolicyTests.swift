import Foundation
@testable import MirrorConsent
@testable import MirrorModel
import MirrorSync
@testable import MirrorFetch
import MirrorImages
import MirrorStorage
import MirrorTestSupport
@testable import MirrorTransport
import Testing

private func url(_ path: String) -> URL { URL(string: "http://h.test" + path)! }

/// robots.txt's `Content-Signal` and `Content-Usage` lines: the group that applies, the longest path, and nothing for a
/// URL the file disallows.
@Suite("robots.txt usage lines")
struct RobotsUsageLineTests {
    @Test func theGroupThatAppliesGivesItsLinesAsEvidence() {
        // Given Cloudflare's managed robots.txt shape, and a group of mirror's own further down
        let managed = RobotsRules(parsing: """
            # As a condition of accessing this website, you agree to abide by the following content signals
            User-agent: *
            Content-Signal: search=yes, ai-train=no
            Allow: /

            User-agent: otherbot
            Content-Signal: ai-train=yes
            """, agent: "mirror")

        // Then the * group's signals are read, each category on its own
        let evidence = managed.evidence(for: url("/a.png"))
        #expect(evidence.map(\.value) == ["search=yes", "ai-train=no"])
        #expect(evidence.allSatisfy { $0.signal == .contentSignal && $0.location == "robots.txt, group *, line 3" })
        #expect(evidence.last?.term == .contentSignal(category: "ai-train", allowed: false))

        // And mirror's own group replaces it
        let own = RobotsRules(parsing: "User-agent: *\nContent-Signal: ai-train=no\n\nUser-agent: mirror\nContent-Usage: train-ai=y\n", agent: "mirror")
        #expect(own.evidence(for: url("/a.png")).map(\.value) == ["train-ai=y"])
        #expect(own.evidence(for: url("/a.png")).first?.location == "robots.txt, group for mirror, line 5")
    }

    @Test func theLongestPathAppliesAndADisallowedURLHasNoPreferences() {
        // Given aipref-attach's own example
        let rules = RobotsRules(parsing: """
            User-Agent: *
            Allow: /
            Disallow: /never/
            Content-Usage: train-ai=n
            Content-Usage: /ai-ok/ train-ai=y

            User-Agent: ExampleBot
            Allow: /
            Content-Usage: train-ai=y
            """, agent: "mirror")

        // Then the table of its section 3.4 holds
        #expect(rules.evidence(for: url("/test")).map(\.value) == ["train-ai=n"])
        #expect(rules.evidence(for: url("/ai-ok/test")).map(\.value) == ["train-ai=y"])
        #expect(!rules.allows(url("/never/test")) && rules.evidence(for: url("/never/test")).isEmpty)
        // and two lines for the same path apply together
        let both = RobotsRules(parsing: "User-agent: *\nContent-Usage: /a/ train-ai=y\nContent-Usage: /a/ search=n\n", agent: "mirror")
        #expect(both.evidence(for: url("/a/x")).map(\.value) == ["train-ai=y", "search=n"])
        #expect(both.evidence(for: url("/b/x")).isEmpty)
    }

    @Test func malformedStatementsSayNothing() {
        let rules = RobotsRules(parsing: """
            User-agent: *
            Content-Signal: ai-train=maybe, search = no ,=no, junk
            Content-Usage: TRAIN-AI=n
            Content-Usage: /path-without-statement
            """, agent: "mirror")
        // Only `search = no` reads; an uppercase aipref key fails the whole Dictionary (the format is case-sensitive)
        #expect(rules.evidence(for: url("/x")).map(\.value) == ["search=no"])
    }
}

/// The IETF AI-preferences statement, parsed by swift-http-structured-headers.
@Suite("AI preferences (draft-ietf-aipref-vocab)")
struct AIPreferencesTests {
    @Test func tokensYAndNStateACategoryAndNothingElseDoes() {
        #expect(AIPreferences.parse("train-ai=n, search=y").map(\.category) == ["train-ai", "search"])
        #expect(AIPreferences.parse("train-ai=n, search=y").map(\.allowed) == [false, true])
        // The draft's examples: parameters are ignored; the last value of a key applies; a non-token is unknown
        #expect(AIPreferences.parse("train-ai;allow=n, train-ai=y").map(\.allowed) == [true])
        #expect(AIPreferences.parse(#"train-ai=y, train-ai, search=n, search="n""#).isEmpty)
        #expect(AIPreferences.parse("train-genai=n, bots=maybe").map(\.category) == ["train-genai"])
        // A statement that does not parse states nothing
        #expect(AIPreferences.parse("Train-AI=n").isEmpty)
        #expect(AIPreferences.parse("train-ai=n,,").isEmpty)
        #expect(AIPreferences.parse(String(repeating: "(", count: 10_000)).isEmpty)
    }
}

/// TDMRep's file and headers, as the final report reads them.
@Suite("TDMRep")
struct TDMRepTests {
    @Test func theFirstMatchingRuleApplies() throws {
        // Given the report's second example, with a catch-all last
        let rules = try TDMRep.Rules(parsing: Data("""
            [
              {"location": "/directory-a/", "tdm-reservation": 1},
              {"location": "/directory-b/html/", "tdm-reservation": 1, "tdm-policy": "https://provider.com/policies/policy.json"},
              {"location": "/directory-b/images/*.jpg", "tdm-reservation": 0},
              {"location": "/", "tdm-reservation": 1, "tdm-policy": "https://provider.com/all.json"}
            ]
            """.utf8))

        // Then each URL takes the first rule whose location matches, and its policy when it reserves
        #expect(rules.evidence(for: url("/directory-a/x.pdf"))?.value == "tdm-reservation: 1")
        #expect(rules.evidence(for: url("/directory-a/x.pdf"))?.location == "/.well-known/tdmrep.json rule 1 (location /directory-a/)")
        #expect(rules.evidence(for: url("/directory-b/html/p.html"))?.policy == "https://provider.com/policies/policy.json")
        #expect(rules.evidence(for: url("/directory-b/images/a.jpg"))?.term == .tdmReservation(reserved: false))
        #expect(rules.evidence(for: url("/directory-b/images/a.png"))?.policy == "https://provider.com/all.json")
        // and matching is case-sensitive, with percent-encoded unreserved characters decoded first
        #expect(rules.rule(for: url("/Directory-A/x"))?.number == 4)
        #expect(rules.rule(for: url("/directory%2Da/x"))?.number == 1)
        #expect(rules.rule(for: url("/directory-a%2Fx"))?.number == 4)
    }

    @Test func valuesOtherThanZeroOrOneAreUnsetAndNonRulesAreSkipped() throws {
        let rules = try TDMRep.Rules(parsing: Data("""
            [ 7, "x", {"tdm-reservation": 1}, {"location": "/a/", "tdm-reservation": 2},
              {"location": "/b/", "tdm-reservation": true}, {"location": "/c/", "tdm-reservation": "1"}, {"location": "/", "tdm-reservation": 0} ]
            """.utf8))
        #expect(rules.rules.map(\.location) == ["/a/", "/b/", "/c/", "/"])
        // An unset first match leaves the reservation unset: nothing later applies
        #expect(rules.evidence(for: url("/a/x")) == nil && rules.evidence(for: url("/b/x")) == nil)
        #expect(rules.evidence(for: url("/c/x"))?.term == .tdmReservation(reserved: true))
        #expect(rules.evidence(for: url("/d/x"))?.term == .tdmReservation(reserved: false))
    }

    @Test(arguments: ["{\"location\": \"/\"}", "not json", "", String(repeating: "[", count: 100_000)])
    func aFileThatIsNotAnArrayOfRulesIsUnreadable(text: String) {
        #expect(throws: TDMRep.Unreadable.self) { try TDMRep.Rules(parsing: Data(text.utf8)) }
    }

    @Test func aFileOverItsBoundIsNotRead() {
        let big = Data(("[" + String(repeating: "{\"location\": \"/x\", \"tdm-reservation\": 1},", count: 30_000) + "{}]").utf8)
        #expect(big.count > TDMRep.maximumFileBytes)
        #expect(throws: TDMRep.Unreadable(reason: "over 1024 KiB")) { try TDMRep.Rules(parsing: big) }
    }

    @Test func theHeadersReserveWithTheirPolicy() {
        let reserved = TDMRep.reservation(headers: [(name: "TDM-Reservation", value: " 1 "), (name: "tdm-policy", value: "https://p.test/terms")])
        #expect(reserved?.reserved == true && reserved?.policy == "https://p.test/terms")
        #expect(TDMRep.reservation(headers: [(name: "tdm-reservation", value: "0"), (name: "tdm-policy", value: "https://p.test/terms")])?.policy == nil)
        #expect(TDMRep.reservation(headers: [(name: "tdm-reservation", value: "yes")]) == nil)
        #expect(TDMRep.reservation(headers: [(name: "content-type", value: "image/png")]) == nil)
    }
}

/// The one decision: the table of what each term reserves for each purpose, the order evidence is read in, and what
/// `--ignore-opt-out` sets aside.
@Suite("Consent policy")
struct ConsentPolicyTests {
    private func evidence(_ signal: ConsentSignal, _ term: ConsentEvidence.Term) -> ConsentEvidence {
        ConsentEvidence(signal: signal, value: "\(term)", location: "test", term: term)
    }

    @Test(arguments: [
        // (term, purposes it reserves)
        (ConsentEvidence.Term.contentSignal(category: "ai-train", allowed: false), [UsePurpose.aiTrain]),
        (.contentSignal(category: "ai-train", allowed: true), []),
        (.contentSignal(category: "search", allowed: false), [.search]),
        (.contentSignal(category: "ai-input", allowed: false), [.aiInput]),
        (.usage(category: "train-ai", allowed: false), [.aiTrain]),
        (.usage(category: "train-genai", allowed: false), [.aiTrain]),
        (.usage(category: "search", allowed: false), [.search]),
        (.usage(category: "bots", allowed: false), UsePurpose.allCases),
        (.usage(category: "train-ai", allowed: true), []),
        (.tdmReservation(reserved: true), [.aiTrain, .aiInput, .search]),
        (.tdmReservation(reserved: false), []),
        (.dataMining(code: "DMI-PROHIBITED-AIMLTRAINING"), [.aiTrain]),
        (.dataMining(code: "DMI-PROHIBITED-GENAIMLTRAINING"), [.aiTrain]),
        (.dataMining(code: "DMI-PROHIBITED-EXCEPTSEARCHENGINEINDEXING"), [.aiTrain, .aiInput]),
        (.dataMining(code: "DMI-PROHIBITED"), [.aiTrain, .aiInput, .search]),
        (.dataMining(code: "DMI-PROHIBITED-SEECONSTRAINT"), [.aiTrain, .aiInput, .search]),
        (.dataMining(code: "DMI-ALLOWED"), []),
        (.dataMining(code: "DMI-UNSPECIFIED"), []),
        (.dataMining(code: "DMI-SOMETHING-NEW"), []),
        (.trainingMining(entry: "ai_training", use: "notAllowed"), [.aiTrain]),
        (.trainingMining(entry: "ai_generative_training", use: "constrained"), [.aiTrain]),
        (.trainingMining(entry: "data_mining", use: "notAllowed"), [.aiTrain, .aiInput, .search]),
        (.trainingMining(entry: "ai_inference", use: "notAllowed"), [.aiInput]),
        (.trainingMining(entry: "ai_training", use: "allowed"), []),
        (.trainingMining(entry: "ai_training", use: "whatever"), []),
        (.robotsTag(directive: "noai"), [.aiTrain, .aiInput]),
        (.robotsTag(directive: "noml"), [.aiTrain, .aiInput]),
        (.robotsTag(directive: "noarchive"), [.archive]),
        (.robotsTag(directive: "nofollow"), []),
        (.disallow, UsePurpose.allCases),
    ])
    func eachTermReservesItsPurposes(term: ConsentEvidence.Term, purposes: [UsePurpose]) {
        #expect(ConsentPolicy().purposes(reservedBy: term) == Set(purposes))
    }

    @Test func theFirstReservationThatCountsDecidesAndSetAsideOnesAreKept() {
        // Given a site that says yes to search but no to training, a header that reserves, and an image mark
        let read = [
            evidence(.contentSignal, .contentSignal(category: "search", allowed: true)),
            evidence(.contentSignal, .contentSignal(category: "ai-train", allowed: false)),
            evidence(.tdmrepHeader, .tdmReservation(reserved: true)),
        ]

        // Then training is refused by the first that reserves it, search by the TDMRep header, archive by nothing
        guard case let .refused(training) = ConsentPolicy().verdict(read) else { Issue.record("not refused"); return }
        #expect(training.signal == .contentSignal && training.purpose == .aiTrain)
        guard case let .refused(search) = ConsentPolicy(purpose: .search).verdict(read) else { Issue.record("not refused"); return }
        #expect(search.signal == .tdmrepHeader)
        #expect(ConsentPolicy(purpose: .archive).verdict(read) == .allowed(setAside: []))
        // And set aside, the reservations are kept for the record, in order
        let ignoring = ConsentPolicy(purpose: .aiTrain, ignored: [.contentSignal, .tdmrepHeader])
        #expect(ignoring.verdict(read) == .allowed(setAside: [read[1], read[2]]))
    }

    @Test func imageMarksBecomeEvidenceAndGeneratedSourceTypesAreDeclared() {
        // Given marks as the readers report them
        var marks = ImageMarks()
        marks.dataMining = [ImageMarks.Mark(value: "http://ns.useplus.org/ldf/vocab/DMI-ALLOWED", location: "XMP plus:DataMining")]
        marks.trainingMining = [ImageMarks.TrainingMiningEntry(label: "cawg.training-mining", entry: "cawg.ai_training", use: "notAllowed", constraintInfo: nil)]
        marks.digitalSourceTypes = [
            ImageMarks.SourceType(value: "http://cv.iptc.org/newscodes/digitalsourcetype/digitalCapture", source: .xmp, location: "XMP"),
            ImageMarks.SourceType(value: "http://cv.iptc.org/newscodes/digitalsourcetype/trainedAlgorithmicMedia", source: .c2pa, location: "C2PA"),
        ]
        marks.hasC2PAManifest = true

        // Then the evidence names the code and the entry, and the generated type is the one declared
        let evidence = ConsentPolicy.evidence(of: marks)
        #expect(evidence.map(\.value) == ["DMI-ALLOWED", "cawg.ai_training: notAllowed"])
        #expect(evidence.map(\.term) == [.dataMining(code: "DMI-ALLOWED"), .trainingMining(entry: "ai_training", use: "notAllowed")])
        let declared = ConsentPolicy(purpose: .search).declarations(of: marks, setAside: [])
        #expect(declared.isGenerated && declared.sourceTypeFrom == .c2pa && declared.hasC2PAManifest && declared.purpose == .search)
        // and with --skip-generated such an image is filtered, for the search that C2PA's training entry does not reserve
        var skipping = ConsentPolicy(purpose: .search)
        skipping.skipsGenerated = true
        guard case let .keptOut(.filtered(reason)) = skipping.judge(marks: marks, setAside: []) else { Issue.record("not filtered"); return }
        #expect(reason == "declares it was generated: trainedAlgorithmicMedia (c2pa)")
        guard case .keptOut(.optedOut) = ConsentPolicy().judge(marks: marks, setAside: []) else { Issue.record("not refused"); return }
    }

    @Test func ignoreOptOutTakesSignalsOrAll() throws {
        #expect(try ConsentSignal.list(parsing: "content-signal, TDMREP-FILE") == [.contentSignal, .tdmrepFile])
        #expect(try ConsentSignal.list(parsing: "all") == Set(ConsentSignal.allCases))
        #expect(throws: ConsentSignal.UnknownSignal.self) { try ConsentSignal.list(parsing: "robots,noai") }
    }
}

/// The site gate's TDMRep file and its memory between runs, against the loopback server.
@Suite("Site files: TDMRep and memory", .serialized)
struct SiteFilesTests {
    // Idle connections kept for ten minutes, not libcurl's 118 seconds: whether the TDMRep file reuses robots.txt's
    // connection must not depend on how long this process, running every other suite beside it (under ThreadSanitizer,
    // for minutes), takes to resume the gate between the two requests. It once took longer, and the file went out on a
    // second connection.
    let driver = CurlMultiDriver(maximumConnectionAge: .seconds(600))

    @Test func theTDMRepFileFollowsRobotsTxtOnItsConnectionAndAnUnreadableOneIsSaidOnce() async throws {
        // Given an origin with a managed robots.txt and a TDMRep file, and one whose TDMRep file is not JSON
        let server = try TestServer.start()
        let broken = try TestServer.start()
        defer { server.stop(); broken.stop() }
        server.route("/robots.txt", .ok(Data("User-agent: *\nContent-Signal: search=yes, ai-train=no\nAllow: /\n".utf8), contentType: "text/plain"))
        server.route("/.well-known/tdmrep.json", .ok(Data(#"[{"location": "/img/", "tdm-reservation": 1, "tdm-policy": "https://p.test/t"}]"#.utf8), contentType: "application/json"))
        broken.route("/robots.txt", .status(404))
        broken.route("/.well-known/tdmrep.json", .ok(Data("<html>moved</html>".utf8), contentType: "text/html"))
        let notices = Locked<[String]>([])
        let gate = SiteGate(loader: driver, onNotice: { line in notices.withLock { $0.append(line) } })

        // When URLs of both are asked about
        let first = await gate.evidence(for: server.url("/img/a.png"))
        let second = await gate.evidence(for: server.url("/other/b.png"))
        for index in 0..<3 { _ = await gate.evidence(for: broken.url("/\(index).png")) }

        // Then robots.txt's signals come first and the file's rule after, with its policy; one connection carried both
        #expect(first.map(\.signal) == [.contentSignal, .contentSignal, .tdmrepFile])
        #expect(first.last?.policy == "https://p.test/t")
        #expect(second.map(\.signal) == [.contentSignal, .contentSignal])
        #expect(server.requests.map(\.path) == ["/robots.txt", "/.well-known/tdmrep.json"])
        #expect(Set(server.requests.map(\.connectionID)).count == 1)
        // and the unreadable file was asked for once, said once, and reserves nothing
        #expect(broken.requests.filter { $0.path == "/.well-known/tdmrep.json" }.count == 1)
        #expect(notices.withLock { $0 }.count == 1)
        #expect(notices.withLock { $0 }.first?.contains("tdmrep.json is not JSON: no reservation by file") == true)
    }

    @Test func whatAnOriginSaidIsRememberedForADay() async throws {
        // Given an origin's files, read by one run into a state folder
        let server = try TestServer.start()
        defer { server.stop() }
        server.route("/robots.txt", .ok(Data("User-agent: *\nDisallow: /private/\n".utf8), contentType: "text/plain"))
        server.route("/.well-known/tdmrep.json", .ok(Data(#"[{"location": "/", "tdm-reservation": 1}]"#.utf8), contentType: "application/json"))
        let state = TemporaryFolder()
        do {
            let memory = try SiteMemory(directory: state.url)
            let gate = SiteGate(loader: driver, memory: memory)
            #expect(await gate.refusal(for: server.url("/private/a.png")) != nil)
            gate.flush()
        }
        #expect(server.requests.count == 2)

        // When the next run asks within the day, and a run a day later
        let again = SiteGate(loader: driver, memory: try SiteMemory(directory: state.url))
        let evidence = await again.evidence(for: server.url("/b.png"))
        let later = SiteGate(loader: driver, memory: try SiteMemory(directory: state.url, lifetime: 0))
        _ = await later.evidence(for: server.url("/c.png"))

        // Then the first answers from memory, with no request, as the files said; the second asks again
        #expect(evidence.map(\.signal) == [.tdmrepFile])
        #expect(await again.refusal(for: server.url("/private/z.png")) == "robots.txt disallows /private/z.png")
        #expect(server.requests.map(\.path) == ["/robots.txt", "/.well-known/tdmrep.json", "/robots.txt", "/.well-known/tdmrep.json"])
    }

    @Test func aFileThatCouldNotBeHadIsNotRemembered() async throws {
        // Given an origin whose robots.txt fails (everything disallowed, RFC 9309) for one run
        let server = try TestServer.start()
        defer { server.stop() }
        server.route("/robots.txt", .status(503))
        let state = TemporaryFolder()
        let gate = SiteGate(loader: driver, memory: try SiteMemory(directory: state.url))
        #expect(await gate.refusal(for: server.url("/a.png"))?.hasPrefix("robots.txt could not be had") == true)
        gate.flush()

        // When it answers again and the next run asks
        server.route("/robots.txt", .status(404))
        let next = SiteGate(loader: driver, memory: try SiteMemory(directory: state.url))

        // Then the next run asks again, and is let in
        #expect(await next.refusal(for: server.url("/a.png")) == nil)
        #expect(server.requests.filter { $0.path == "/robots.txt" }.count == 2)
    }
}
