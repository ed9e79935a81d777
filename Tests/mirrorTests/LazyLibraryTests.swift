import Foundation
import MirrorTestSupport
import Testing

/// libvips (and the 60-odd libraries it brings) is loaded with dlopen the first time an image needs it: a run that only
/// saves bytes never loads it, nor does one that resizes JPEG, PNG, WebP or GIF (their codecs do it); a BMP does. The
/// dynamic loader itself says what it loaded (`LD_DEBUG=files`, written to files by `LD_DEBUG_OUTPUT`), so the check
/// depends on no timing.
@Suite("libvips, loaded only when needed")
struct LazyLibraryTests {
    @Test(arguments: [("png", false), ("png", true), ("bmp", true)])
    func libvipsIsLoadedOnlyWhenAnImageNeedsIt(_ format: String, _ resizes: Bool) async throws {
        // Given a table of one image
        let server = try TestServer.start()
        defer { server.stop() }
        let bmp = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("MirrorImagesTests/Samples/bgr24.bmp")
        let body = format == "bmp" ? try Data(contentsOf: bmp) : TestImages.png(width: 40, height: 30, seed: 1)
        server.route("/a." + format, .ok(body, contentType: "image/" + format))
        let work = TemporaryFolder()
        let table = work.file("t.txt")
        try "\(server.url("/a." + format).absoluteString)\n".write(to: table, atomically: true, encoding: .utf8)
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

        // Then libvips was loaded exactly when the run resized a BMP, and the image was saved every time
        #expect(run.status == 0, "\(run.stderr)")
        #expect(loaded.contains("libcurl"), "the loader's report is missing or not mirror's")
        #expect(loaded.contains("libvips.so.42") == (format == "bmp"))
        let saved = try String(contentsOf: out.appendingPathComponent("manifest.jsonl"), encoding: .utf8)
        let width = !resizes ? 40 : format == "bmp" ? 10 : 16  // the BMP is 23×37: its longer side becomes 16
        #expect(saved.contains("\"width\":\(width)"), "\(saved)")
    }
}
