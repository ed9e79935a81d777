import Foundation
import MirrorTestSupport
import Testing

/// Hostile tables through the built `mirror urls` against the loopback server (issue 43): bytes that are not UTF-8 in a
/// caption and in a URL, a quote left open, a line longer than the bound. Keys match the table's rows, a table that
/// cannot be split into rows ends with exit 65 naming its line, and what was saved before stays.
@Suite("Hostile tables, end to end", .serialized)
struct HostileTableCommandTests {
    /// A server with `count` PNGs at /p/<i>.png.
    private func serve(_ count: Int) throws -> TestServer {
        let server = try TestServer.start()
        for index in 0..<count {
            server.route("/p/\(index).png", .ok(TestImages.png(width: 10 + index, height: 10, seed: UInt64(index)), contentType: "image/png"))
        }
        return server
    }

    private static func manifest(_ folder: TemporaryFolder) -> [[String: Any]] {
        let text = (try? String(contentsOf: folder.file("manifest.jsonl"), encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
    }

    private static func images(_ server: TestServer) -> [String] {
        server.requests.map(\.path).filter { $0 != "/robots.txt" && $0 != "/.well-known/tdmrep.json" }
    }

    @Test func aWindows1252CaptionKeepsEveryKeyOnItsRow() async throws {
        // Given a CSV of 6 images whose second caption holds a cp1252 é inside quotes and whose fourth holds one bare
        let server = try serve(6)
        defer { server.stop() }
        let work = TemporaryFolder()
        var bytes = Array("url,caption\n".utf8)
        for index in 0..<6 {
            bytes += Array("\(server.url("/p/\(index).png").absoluteString),".utf8)
            switch index {
            case 1: bytes += Array("\"caf".utf8) + [0xE9] + Array(", au lait\"".utf8)
            case 3: bytes += Array("cr".utf8) + [0xE8] + Array("me".utf8)
            default: bytes += Array("image \(index)".utf8)
            }
            bytes.append(0x0A)
        }
        let table = work.file("cp1252.csv")
        try Data(bytes).write(to: table)
        let out = TemporaryFolder()

        // When mirror downloads it
        let run = try await MirrorBinary.run(["urls", table.path, "--out", out.path, "--quiet"])

        // Then every row is saved under its own key with its caption read as Windows-1252, and the exit is 0
        #expect(run.status == 0, "stderr: \(run.stderr)")
        #expect(run.stderr.isEmpty)
        let records = Self.manifest(out)
        #expect(records.count == 6)
        for record in records {
            let key = try #require(record["key"] as? String)
            let row = try #require(Int(key))
            #expect((record["url"] as? String)?.hasSuffix("/p/\(row).png") == true, "key \(key) holds \(record["url"] ?? "nil")")
        }
        let captions = Dictionary(uniqueKeysWithValues: records.compactMap { record in
            (record["key"] as? String).map { ($0, record["caption"] as? String) }
        })
        #expect(captions["000000001"] == "café, au lait")
        #expect(captions["000000003"] == "crème")
    }

    @Test func anOpenQuoteExits65NamingItsLineAndKeepsWhatWasSaved() async throws {
        // Given a CSV whose rows on lines 2–4 are good and whose line 5 opens a quote it never closes, 300 rows after it
        let server = try serve(4)
        defer { server.stop() }
        let work = TemporaryFolder()
        var text = "url,caption\n"
        for index in 0..<3 { text += "\(server.url("/p/\(index).png").absoluteString),image \(index)\n" }
        text += "\(server.url("/p/3.png").absoluteString),\"an open quote\n"
        for index in 4..<304 { text += "\(server.url("/p/\(index).png").absoluteString),image \(index)\n" }
        let table = work.file("open.csv")
        try text.write(to: table, atomically: true, encoding: .utf8)
        let out = TemporaryFolder()

        // When mirror downloads it
        let run = try await MirrorBinary.run(["urls", table.path, "--out", out.path, "--quiet"])

        // Then it exits 65 with one line naming the line the quote opened on, and the three rows before it are saved
        #expect(run.status == 65, "stderr: \(run.stderr)")
        #expect(run.stderr == "mirror: error: \(table.path): a quoted field opened on line 5 is still open at the end of the table (line 305); close the quote or fix the row; what was saved is kept\n")
        #expect(Self.manifest(out).compactMap { $0["key"] as? String }.sorted() == ["000000000", "000000001", "000000002"])
        #expect(Self.images(server).sorted() == ["/p/0.png", "/p/1.png", "/p/2.png"])

        // When it runs again on the same folder, the same: nothing saved is lost, nothing fetched twice
        server.resetCounters()
        let again = try await MirrorBinary.run(["urls", table.path, "--out", out.path, "--quiet"])
        #expect(again.status == 65, "stderr: \(again.stderr)")
        #expect(Self.manifest(out).count == 3)
        #expect(Self.images(server).isEmpty)
    }

    @Test func aURLByteThatIsNotUTF8IsRequestedAsItself() async throws {
        // Given a server with an image at /caf%E9.jpg (é in Windows-1252), and a list naming it with the raw byte
        let server = try TestServer.start()
        defer { server.stop() }
        server.route("/caf%E9.jpg", .ok(TestImages.png(width: 12, height: 12), contentType: "image/png"))
        let work = TemporaryFolder()
        let table = work.file("list.txt")
        try Data(Array(server.url("/caf").absoluteString.utf8) + [0xE9] + Array(".jpg\n".utf8)).write(to: table)
        let out = TemporaryFolder()

        // When mirror downloads it
        let run = try await MirrorBinary.run(["urls", table.path, "--out", out.path, "--quiet"])

        // Then the byte was sent as %E9, the image is saved (named as the segment reads in Windows-1252), and the exit is 0
        #expect(run.status == 0, "stderr: \(run.stderr)")
        #expect(Self.images(server) == ["/caf%E9.jpg"])
        #expect(out.visibleFiles == ["café.png", "manifest.jsonl"])
        let records = Self.manifest(out)
        #expect(records.count == 1)
        #expect((records.first?["url"] as? String)?.hasSuffix("/caf%E9.jpg") == true)
    }

    @Test func aLineLongerThanTheBoundInAGzipTableIsABadRowAndTheRestIsSaved() async throws {
        // Given a gzipped list: two images, a line of 5 MB, two images
        let server = try serve(4)
        defer { server.stop() }
        let work = TemporaryFolder()
        let table = work.file("long.txt.gz").path
        let urls = (0..<4).map { server.url("/p/\($0).png").absoluteString }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", "{ printf '\(urls[0])\\n\(urls[1])\\nhttps://a.test/'; head -c 5000000 /dev/zero | tr '\\000' a; printf '\\n\(urls[2])\\n\(urls[3])\\n'; } | gzip -1 > '\(table)'"]
        try process.run()
        process.waitUntilExit()
        let out = TemporaryFolder()

        // When mirror downloads it
        let run = try await MirrorBinary.run(["urls", table, "--out", out.path])

        // Then the long line is skipped as a bad row with its place, the four images are saved, and the exit says a row is missing
        #expect(run.status == 3, "stderr: \(run.stderr)")
        #expect(run.stderr.contains("skipped line 3: the line is longer than 1 MiB"), "stderr: \(run.stderr)")
        #expect(Self.manifest(out).compactMap { $0["key"] as? String }.sorted() == ["000000000", "000000001", "000000003", "000000004"])
    }
}
