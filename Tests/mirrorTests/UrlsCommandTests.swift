import Foundation
import MirrorTestSupport
import Testing

@Suite("mirror urls, end to end", .serialized)
struct UrlsCommandTests {
    /// A server with `count` PNGs at /p/<i>.png, plus a 404 and an HTML page posing as a JPEG.
    private func serve(_ count: Int) throws -> TestServer {
        let server = try TestServer.start()
        for index in 0..<count {
            server.route("/p/\(index).png", .ok(TestImages.png(width: 10 + index, height: 10, seed: UInt64(index)), contentType: "image/png"))
        }
        server.route("/fake.jpg", .ok(TestImages.htmlErrorPage, contentType: "image/jpeg"))
        return server
    }

    private func list(_ server: TestServer, _ count: Int) -> String {
        var lines = ["# images", ""]
        for index in 0..<count { lines.append(server.url("/p/\(index).png").absoluteString) }
        return lines.joined(separator: "\n") + "\n"
    }

    @Test func downloadsAListFromAFileThenDoesNothingTheSecondTime() async throws {
        // Given 20 images listed in a file
        let server = try serve(20)
        defer { server.stop() }
        let work = TemporaryFolder()
        let listFile = work.file("list.txt")
        try list(server, 20).write(to: listFile, atomically: true, encoding: .utf8)
        let out = TemporaryFolder()

        // When mirror urls runs with --json
        let first = try await MirrorBinary.run(["urls", listFile.path, "--out", out.path, "--json"])

        // Then all 20 are saved, named after their URLs, with a manifest line each, and exit 0
        #expect(first.status == 0, "stderr: \(first.stderr)")
        #expect(out.visibleFiles == (0..<20).map { "\($0).png" }.sorted() + ["manifest.jsonl"])
        let manifest = try String(contentsOf: out.file("manifest.jsonl"), encoding: .utf8)
        #expect(manifest.split(separator: "\n").count == 20)
        let summary = try JSONSerialization.jsonObject(with: Data(first.stdout.utf8)) as? [String: Any]
        #expect(summary?["saved"] as? Int == 20)
        #expect(summary?["failed"] as? Int == 0)
        #expect(server.requests.filter { !["/robots.txt", "/.well-known/tdmrep.json"].contains($0.path) }.count == 20)
        #expect(server.requests.filter { $0.path == "/robots.txt" }.count == 1)  // honoured, fetched once
        #expect(server.requests.filter { $0.path == "/.well-known/tdmrep.json" }.count == 1)  // and TDMRep's file

        // When it runs again
        server.resetCounters()
        let second = try await MirrorBinary.run(["urls", listFile.path, "--out", out.path, "--json"])

        // Then nothing is downloaded and it still exits 0
        #expect(second.status == 0)
        #expect(server.totalRequests == 0)
        let again = try JSONSerialization.jsonObject(with: Data(second.stdout.utf8)) as? [String: Any]
        #expect(again?["skipped"] as? Int == 20)
        #expect(again?["saved"] as? Int == 0)
    }

    @Test func readsTheListFromStandardInput() async throws {
        let server = try serve(5)
        defer { server.stop() }
        let out = TemporaryFolder()
        let run = try await MirrorBinary.run(["urls", "-", "--out", out.path, "--quiet"], stdin: list(server, 5))
        #expect(run.status == 0, "stderr: \(run.stderr)")
        #expect(run.stdout.isEmpty)
        #expect(run.stderr.isEmpty)
        #expect(out.visibleFiles.count == 6)
    }

    @Test func failuresSetTheExitCode() async throws {
        let server = try serve(2)
        defer { server.stop() }
        server.route("/down.png", .status(503))
        let out = TemporaryFolder()

        // A 404 and an HTML page: no image exists there, the rest is saved: exit 3
        let permanent = try await MirrorBinary.run(["urls", "-", "--out", out.path], stdin: list(server, 2) + server.url("/nothing.png").absoluteString + "\n" + server.url("/fake.jpg").absoluteString + "\n")
        #expect(permanent.status == 3)
        #expect(permanent.stderr.contains("HTML page, not an image") || permanent.stderr.contains("not an image"))
        #expect(permanent.stderr.contains("HTTP 404"))
        #expect(out.visibleFiles.count == 3)

        // A server error that retries could not overcome: exit 5
        let transient = try await MirrorBinary.run(["urls", "-", "--out", out.path, "--retries", "0"], stdin: server.url("/down.png").absoluteString + "\n")
        #expect(transient.status == 5)
        #expect(transient.stderr.contains("HTTP 503"))
    }

    @Test func theSummaryLineCountsFailuresLargestFirst() async throws {
        // Given two HTML pages posing as JPEGs and one 404: by name the 404 would come first, by count it comes last
        let server = try serve(1)
        defer { server.stop() }
        server.route("/fake2.jpg", .ok(TestImages.htmlErrorPage, contentType: "image/jpeg"))
        let urls = ["/p/0.png", "/fake.jpg", "/fake2.jpg", "/nothing.png"].map { server.url($0).absoluteString }
        let out = TemporaryFolder()

        // When they are fetched
        let run = try await MirrorBinary.run(["urls", "-", "--out", out.path], stdin: urls.joined(separator: "\n") + "\n")

        // Then the summary names the reasons by count, the largest first
        #expect(run.status == 3, "\(run.stderr)")
        #expect(run.stderr.contains("1 saved, 0 duplicates, 3 failed (not-image-html 2, http-404 1)"), "\(run.stderr)")
    }

    @Test func usageErrorsExit64() async throws {
        let missingOut = try await MirrorBinary.run(["urls", "-"], stdin: "")
        #expect(missingOut.status == 64)
        #expect(missingOut.stderr.contains("--out"))
        let badConcurrency = try await MirrorBinary.run(["urls", "-", "--out", "/tmp/x", "--concurrency", "0"], stdin: "")
        #expect(badConcurrency.status == 64)
        let missingFile = try await MirrorBinary.run(["urls", "/nonexistent/list.txt", "--out", "/tmp/x"])
        #expect(missingFile.status == 64)
        #expect(missingFile.stderr.hasPrefix("mirror: error: cannot read the table: /nonexistent/list.txt: No such file"))
    }

    @Test func anOutputPathThatIsAFileIsAClearError() async throws {
        let work = TemporaryFolder()
        let file = work.file("not-a-folder")
        try Data("x".utf8).write(to: file)
        let run = try await MirrorBinary.run(["urls", "-", "--out", file.path], stdin: "http://127.0.0.1:1/a.png\n")
        #expect(run.status == 1)
        #expect(run.stderr.split(separator: "\n").count == 1)
        #expect(run.stderr.contains("could not use as a folder"))
        #expect(try Data(contentsOf: file) == Data("x".utf8))
    }
}
