import Foundation
import MirrorTestSupport
import Testing

/// libvips (and the 60-odd libraries it brings) is loaded with dlopen the first time an image is transformed: a run
/// that only saves bytes never loads it. The dynamic loader itself says what it loaded (`LD_DEBUG=files`, written to
/// files by `LD_DEBUG_OUTPUT`), so the check depends on no timing.
@Suite("libvips, loaded only when needed")
struct LazyLibraryTests {
    @Test(arguments: [false, true])
    func libvipsIsLoadedOnlyWhenARunTransformsImages(_ resizes: Bool) async throws {
        // Given a table of one PNG
        let server = try TestServer.start()
        defer { server.stop() }
        server.route("/a.png", .ok(TestImages.png(width: 40, height: 30, seed: 1), contentType: "image/png"))
        let work = TemporaryFolder()
        let table = work.file("t.txt")
        try "\(server.url("/a.png").absoluteString)\n".write(to: table, atomically: true, encoding: .utf8)
        let out = work.file("out")
        var arguments = ["urls", table.path, "--out", out.path, "--no-cache", "--quiet"]
        if resizes { arguments += ["--resize", "keep-ratio", "--size", "16"] }

        // When it runs with the loader reporting every library it loads
        let logs = work.file("ld")
        try FileManager.default.createDirectory(at: logs, withIntermediateDirectories: true)
        let run = try await MirrorBinary.run(arguments, environment: ["LD_DEBUG": "files", "LD_DEBUG_OUTPUT": logs.appendingPathComponent("ld").path])
        let loaded = try FileManager.default.contentsOfDirectory(at: logs, includingPropertiesForKeys: nil)
            .map { String(decoding: (try? Data(contentsOf: $0)) ?? Data(), as: UTF8.self) }
            .joined()

        // Then libvips was loaded exactly when the run resized, and the image was saved either way
        #expect(run.status == 0, "\(run.stderr)")
        #expect(loaded.contains("libcurl"), "the loader's report is missing or not mirror's")
        #expect(loaded.contains("libvips.so.42") == resizes)
        let saved = try String(contentsOf: out.appendingPathComponent("manifest.jsonl"), encoding: .utf8)
        #expect(saved.contains(resizes ? "\"width\":16" : "\"width\":40"), "\(saved)")
    }
}
