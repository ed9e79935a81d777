import Foundation
import MirrorTestSupport
import Testing

/// libvips (and the 60-odd libraries it brings) is loaded with dlopen the first time an image is transformed: a run
/// that only saves bytes never maps it. Checked in the running process's /proc/PID/maps.
@Suite("libvips, loaded only when needed")
struct LazyLibraryTests {
    @Test(arguments: [false, true])
    func libvipsIsMappedOnlyWhenARunTransformsImages(_ resizes: Bool) async throws {
        // Given a table of a PNG and a URL that never finishes, so the run is still going after the PNG is saved
        let server = try TestServer.start()
        defer { server.stop() }
        server.route("/a.png", .ok(TestImages.png(width: 40, height: 30, seed: 1), contentType: "image/png"))
        let work = TemporaryFolder()
        let table = work.file("t.txt")
        try "\(server.url("/a.png").absoluteString)\n\(server.url("/stall?prefix=0&length=4096").absoluteString)\n"
            .write(to: table, atomically: true, encoding: .utf8)
        let out = work.file("out")
        var arguments = ["urls", table.path, "--out", out.path, "--no-cache", "--quiet"]
        if resizes { arguments += ["--resize", "keep-ratio", "--size", "16"] }

        // When the PNG is in the manifest
        let running = try MirrorBinary.start(arguments)
        let manifest = out.appendingPathComponent("manifest.jsonl")
        let deadline = ContinuousClock.now + .seconds(30)
        while ((try? String(contentsOf: manifest, encoding: .utf8)) ?? "").isEmpty, running.process.isRunning, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(10))
        }
        // Read to the end (a /proc file reports no size, so a sized read would stop at its first page).
        let maps = FileHandle(forReadingAtPath: "/proc/\(running.process.processIdentifier)/maps")
            .map { String(decoding: $0.readDataToEndOfFile(), as: UTF8.self) } ?? ""
        kill(running.process.processIdentifier, SIGINT)
        let run = await running.finish()

        // Then libvips is mapped exactly when the run resizes
        #expect(!maps.isEmpty, "the run ended before it could be looked at: \(run.stderr)")
        #expect(maps.contains("libcurl"), "the maps do not look like mirror's")
        #expect(maps.contains("libvips") == resizes)
        #expect(run.status == 130)
        let saved = try String(contentsOf: manifest, encoding: .utf8)
        #expect(saved.contains(resizes ? "\"width\":16" : "\"width\":40"), "\(saved)")
    }
}
