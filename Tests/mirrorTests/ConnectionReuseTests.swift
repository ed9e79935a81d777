import Foundation
import MirrorTestSupport
import Testing

/// A table over many hosts, the web's shape: each host's robots.txt and its image come over one connection, whichever
/// driver thread takes them, and the robots.txt fetches do not run ahead of the downloads.
@Suite("mirror urls, one connection per host, end to end", .serialized)
struct ConnectionReuseTests {
    @Test func robotsTxtAndTheImageOfAHostArriveOnOneConnection() async throws {
        // Given 120 hosts with one image each (one loopback server behind every name), more than the idle connections
        // a driver thread keeps, and downloads 16 at once over two driver threads
        let hosts = 120
        let server = try TestServer.start()
        defer { server.stop() }
        for index in 0..<hosts {
            server.route("/i/\(index).png", .ok(TestImages.png(width: 20, height: 20, seed: UInt64(index)), contentType: "image/png"))
        }
        let table = (0..<hosts).map { "http://host-\($0).test:\(server.port)/i/\($0).png" }.joined(separator: "\n") + "\n"
        let work = TemporaryFolder()

        // When mirror fetches them, honouring robots.txt (the server answers 404: no rules)
        let run = try await MirrorBinary.run(
            ["urls", "-", "--out", work.file("out").path, "--concurrency", "16", "--connect-to", "::127.0.0.1:\(server.port)", "--quiet"],
            stdin: table
        )

        // Then every image is saved, every host's robots.txt and TDMRep file were asked once, and each host cost one
        // connection
        #expect(run.status == 0, "\(run.stderr.suffix(400))")
        #expect(server.requestCount(path: "/robots.txt") == hosts)
        #expect(server.requestCount(path: "/.well-known/tdmrep.json") == hosts)
        #expect(server.connectionsAccepted == hosts, "\(server.connectionsAccepted) connections for \(hosts) hosts")
    }
}
