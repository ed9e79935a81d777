import Foundation
@testable import MirrorConsent
import MirrorSync
@testable import MirrorFetch
import MirrorTestSupport
import MirrorTransport
import Testing

/// `SiteGate` against the loopback server and real libcurl: one fetch per host however many ask, RFC 9309's
/// answers to a missing, failing or looping file, and the hook that counts its fetches against `--host-rate`.
@Suite("SiteGate", .serialized)
struct SiteGateTests {
    let driver = CurlMultiDriver()

    @Test func manyAskersOfOneHostShareOneFetch() async throws {
        // Given a host whose robots.txt disallows /private/ and answers slowly
        let server = try TestServer.start(latency: .milliseconds(100))
        defer { server.stop() }
        server.route("/robots.txt", .ok(Data("User-agent: *\nDisallow: /private/\n".utf8), contentType: "text/plain"))
        let fetched = Locked<[String]>([])
        let gate = SiteGate(loader: driver, onFetch: { host in fetched.withLock { $0.append(host) } })
        #expect(!gate.knows(server.url("/a.png")))

        // When 20 URLs of the host are asked about at once
        let answers = await withTaskGroup(of: (Int, String?).self) { group in
            for index in 0..<20 {
                let path = index % 2 == 0 ? "/private/\(index).png" : "/public/\(index).png"
                group.addTask { (index, await gate.refusal(for: server.url(path))) }
            }
            return await group.reduce(into: [Int: String?]()) { $0[$1.0] = $1.1 }
        }

        // Then each file was fetched once (and the hook told at each one's start and end), every answer follows them,
        // and the host is known from then on
        #expect(server.requests.filter { $0.path == "/robots.txt" }.count == 1)
        #expect(server.requests.filter { $0.path == "/.well-known/tdmrep.json" }.count == 1)
        #expect(fetched.withLock { $0 } == Array(repeating: "127.0.0.1", count: 4))
        for (index, answer) in answers {
            if index % 2 == 0 {
                #expect(answer == "robots.txt disallows /private/\(index).png")
            } else {
                #expect(answer == nil)
            }
        }
        #expect(gate.knows(server.url("/other.png")))
    }

    @Test("a missing file allows everything; a failing one disallows everything, saying why")
    func missingAndFailingFiles() async throws {
        // Given three hosts (three ports): robots.txt missing, failing, and redirecting to itself
        let missing = try TestServer.start()
        let failing = try TestServer.start()
        let looping = try TestServer.start()
        defer { missing.stop(); failing.stop(); looping.stop() }
        missing.route("/robots.txt", .status(404))
        failing.route("/robots.txt", .status(503))
        looping.route("/robots.txt", .redirect(to: "/robots.txt"))
        let gate = SiteGate(loader: driver)

        // Then, as RFC 9309 says: 4xx is "no rules", 5xx and an unreachable file are "disallow all"
        #expect(await gate.refusal(for: missing.url("/x.png")) == nil)
        let failed = await gate.refusal(for: failing.url("/x.png"))
        #expect(failed == "robots.txt could not be had (HTTP 503): RFC 9309 says assume disallow for now")
        let looped = await gate.refusal(for: looping.url("/x.png"))
        #expect(looped?.hasPrefix("robots.txt could not be had (more than") == true, "\(looped ?? "nil")")
        // and each host's file was asked for once, however often its URLs are checked; where robots.txt keeps mirror out
        // of everything, the TDMRep file is not asked for
        #expect(await gate.refusal(for: failing.url("/y.png")) != nil)
        #expect(failing.requests.map(\.path) == ["/robots.txt"])
        #expect(missing.requests.map(\.path) == ["/robots.txt", "/.well-known/tdmrep.json"])
    }

    @Test func theFileIsAskedForWithTheUserAgentAndTheRulesOfTheAgent() async throws {
        // Given rules for mirror and for everyone else
        let server = try TestServer.start()
        defer { server.stop() }
        server.route("/robots.txt", .ok(Data("User-agent: mirror\nDisallow: /mirror-only/\n\nUser-agent: *\nDisallow: /\n".utf8), contentType: "text/plain"))
        let gate = SiteGate(loader: driver, userAgent: "mirror-test/1")

        // Then mirror's group applies, not the catch-all one
        #expect(await gate.refusal(for: server.url("/images/a.png")) == nil)
        #expect(await gate.refusal(for: server.url("/mirror-only/a.png")) == "robots.txt disallows /mirror-only/a.png")
        let request = try #require(server.requests.first { $0.path == "/robots.txt" })
        #expect(request.headers.first { $0.0.lowercased() == "user-agent" }?.1 == "mirror-test/1")
    }
}
