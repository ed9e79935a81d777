import Foundation
import MirrorTestSupport
import Testing

/// Messages that say what happened: long values cut.
@Suite("Messages say what happened, end to end", .serialized)
struct MessageTests {
    // MARK: Long values

    @Test("a URL of 60 KB or 5 MB in a table leaves stderr short", arguments: [60_000, 5_000_000])
    func aLongURLIsCutOnStderr(length: Int) async throws {
        // Given a table of a good image and a URL of `length` bytes that the server does not have
        let server = try TestServer.start()
        defer { server.stop() }
        server.route("/good.png", .ok(TestImages.png(width: 12, height: 12, seed: 1), contentType: "image/png"))
        let base = server.url("/long/").absoluteString
        let long = base + String(repeating: "a", count: length - base.utf8.count)
        let work = TemporaryFolder()
        let table = work.file("table.txt")
        try (server.url("/good.png").absoluteString + "\n" + long + "\n").write(to: table, atomically: true, encoding: .utf8)

        // When mirror urls runs, printing a line for each event
        let run = try await MirrorBinary.run(["urls", table.path, "--out", work.file("out").path, "--retries", "0"])

        // Then the good image is saved, the long row is reported, and stderr stays a few lines long: wherever the URL
        // is quoted it is cut, with its length
        #expect(run.status == 3 || run.status == 5, "stderr: \(run.stderr.prefix(2_000))")
        #expect(run.stderr.contains("1 saved"), "\(run.stderr.prefix(2_000))")
        #expect(run.stderr.utf8.count < 4_000, "stderr is \(run.stderr.utf8.count) bytes: \(run.stderr.prefix(600))")
        let grouped = [60_000: "60,000", 5_000_000: "5,000,000"][length]!
        if run.stderr.contains(base + "aaaa") {
            #expect(run.stderr.contains("a… (\(grouped) bytes)"), "\(run.stderr.prefix(2_000))")
        }
    }
}
