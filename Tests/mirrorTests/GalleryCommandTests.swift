import Foundation
import MirrorTestSupport
import Testing

/// `mirror gallery`, rendered by a real browser: headless Chromium (Debian's `chromium`, installed by scripts/setup)
/// loads the page from file:// and runs its script; the tests count what it shows in the DOM it dumps.
@Suite("mirror gallery, in headless Chromium", .serialized)
struct GalleryCommandTests {
    static let images = 1_200
    static let providers = ["openverse", "wikimedia", "flickr"]
    static let licenses = ["cc-by 4.0", "cc0 1.0", "cc-by-sa 4.0", "pdm"]
    static let hostile = #"<script>alert("pwned")</script><b>bold</b>"#

    /// A folder as `mirror search` leaves it: 1,200 PNGs and their manifest, over three providers, four licences and
    /// two queries; image 7's title is markup.
    private func folder(_ work: TemporaryFolder) throws -> URL {
        let root = work.file("cats")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        var lines = ""
        for index in 0..<Self.images {
            let name = "img-\(index).png"
            let png = TestImages.png(width: 40 + index % 30, height: 30 + index % 20, seed: UInt64(index))
            try png.write(to: root.appendingPathComponent(name))
            let record: [String: Any] = [
                "file_name": name, "url": "https://images.example/\(index).png", "page_url": "https://example.org/photo/\(index)",
                "provider": Self.providers[index % 3], "id": "\(index)", "title": index == 7 ? Self.hostile : "Cat \(index)",
                "creator": index == 7 ? "A & B" : "Photographer \(index % 5)", "license": Self.licenses[index % 4],
                "license_url": "https://creativecommons.org/licenses/\(index % 4)/", "width": 40 + index % 30, "height": 30 + index % 20,
                "bytes": png.count, "sha256": String(format: "%064x", index), "format": "png", "query": index % 2 == 0 ? "kittens" : "cats",
                "fetched_at": "2026-11-25T10:00:00Z",
            ]
            lines += String(decoding: try JSONSerialization.data(withJSONObject: record, options: [.sortedKeys]), as: UTF8.self) + "\n"
        }
        try lines.write(to: root.appendingPathComponent("manifest.jsonl"), atomically: true, encoding: .utf8)
        return root
    }

    /// Chromium's DOM of a page after its script ran.
    private static func dom(_ page: URL, query: String = "") throws -> String {
        let chromium = ["/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"].first { FileManager.default.isExecutableFile(atPath: $0) }
        guard let chromium else {
            Issue.record("no headless Chromium: install Debian's chromium (scripts/setup does)")
            return ""
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: chromium)
        process.arguments = ["--headless", "--no-sandbox", "--disable-gpu", "--user-data-dir=\(page.deletingLastPathComponent().path)/.chromium", "--dump-dom", page.absoluteString + query]
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        try process.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: data, as: UTF8.self)
    }

    private static func count(_ needle: String, in text: String) -> Int { text.components(separatedBy: needle).count - 1 }

    @Test func aTwelveHundredImageFolderBecomesThreePagesThatFilterAndEscape() async throws {
        let work = TemporaryFolder()
        let root = try folder(work)

        // When the gallery is written
        let run = try await MirrorBinary.run(["gallery", root.path])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stderr.contains("(1200 images, 3 pages; 1200 thumbnails made, 0 kept"), "\(run.stderr)")

        // Then page 1 shows 500 tiles with their thumbnails, links to 3 pages, and all 500 pass the empty filter
        let index = root.appendingPathComponent("gallery/index.html")
        let first = try Self.dom(index)
        #expect(Self.count("<figure class=\"tile\"", in: first) == 500)
        #expect(Self.count("src=\"../.mirror/thumbs/", in: first) == 500)
        #expect(first.contains("500 of 500 on this page"))
        #expect(first.contains("href=\"page-3.html\"") && !first.contains("page-4.html"))
        let last = try Self.dom(root.appendingPathComponent("gallery/page-3.html"))
        #expect(Self.count("<figure class=\"tile\"", in: last) == 200)
        #expect(!FileManager.default.fileExists(atPath: root.appendingPathComponent("gallery/page-4.html").path))

        // And a filter by licence (and by provider and query at once) hides the rest of the page
        let cc0 = try Self.dom(index, query: "?license=cc0%201.0")
        let shown = Self.count("<figure class=\"tile\"", in: cc0) - Self.count("hidden=\"\"", in: cc0)
        #expect(shown == 125 && cc0.contains("125 of 500 on this page"))
        let narrow = try Self.dom(index, query: "?provider=wikimedia&query=kittens")
        let expected = (0..<500).filter { $0 % 3 == 1 && $0 % 2 == 0 }.count
        #expect(narrow.contains("\(expected) of 500 on this page"), "\(narrow.suffix(300))")

        // And the hostile title is text: no script of its own ran or exists, no bold element was made
        #expect(first.contains("&lt;script&gt;alert(\"pwned\")&lt;/script&gt;&lt;b&gt;bold&lt;/b&gt;"))
        #expect(Self.count("<script", in: first) == 1 && !first.contains("<b>bold</b>"))
        #expect(first.contains("A &amp; B"))

        // And the attribution groups the images by licence, the title escaped
        let attribution = try String(contentsOf: root.appendingPathComponent("ATTRIBUTION.md"), encoding: .utf8)
        #expect(Self.count("\n## ", in: attribution) == 4)
        #expect(attribution.contains("CC0 1.0](<https://creativecommons.org/licenses/1/>) — 300 images"))
        #expect(attribution.contains(#"[\<script\>alert("pwned")\</script\>\<b\>bold\</b\>](<https://example.org/photo/7>) by A \& B"#))

        // And a second run keeps the thumbnails
        let again = try await MirrorBinary.run(["gallery", root.path, "--page-size", "1000"])
        #expect(again.stderr.contains("(1200 images, 2 pages; 0 thumbnails made, 1200 kept"), "\(again.stderr)")
        #expect(!FileManager.default.fileExists(atPath: root.appendingPathComponent("gallery/page-3.html").path))
    }

    @Test func shardsAreShownFromInsideTheirTars() async throws {
        let server = try TestServer.start()
        defer { server.stop() }
        let work = TemporaryFolder()
        var lines = ["url,caption"]
        for index in 0..<30 {
            server.route("/i/\(index).png", .ok(TestImages.png(width: 50, height: 40, seed: UInt64(index)), contentType: "image/png"))
            lines.append("\(server.url("/i/\(index).png").absoluteString),caption <i>\(index)</i>")
        }
        let table = work.file("t.csv")
        try (lines.joined(separator: "\n") + "\n").write(to: table, atomically: true, encoding: .utf8)
        let out = work.file("shards")
        let run = try await MirrorBinary.run(["urls", table.path, "--out", out.path, "--format", "webdataset", "--shard-size", "10", "--quiet", "--gallery"])
        #expect(run.status == 0, "\(run.stderr)")
        let dom = try Self.dom(out.appendingPathComponent("gallery/index.html"))
        #expect(Self.count("<figure class=\"tile\"", in: dom) == 30)
        #expect(Self.count("src=\"../.mirror/thumbs/", in: dom) == 30)
        #expect(dom.contains("caption &lt;i&gt;3&lt;/i&gt;"))
    }
}
