import Foundation
import MirrorTestSupport
import Testing

/// What a dataset's rows ask beyond their URL, end to end through the built `mirror urls` against the loopback server:
/// the served bytes' hash (`--verify-hash`, `--hash`), faces to blur (`--blur-col`), and img2dataset's resize modes.
/// Images are judged by libpng and TurboJPEG decoding what was written.
@Suite("mirror urls, row checks, end to end", .serialized)
struct RowChecksCommandTests {
    /// A digest of `data` by the coreutils tool at `path` (`sha256sum`, `md5sum`), lowercase hex.
    private static func digest(_ data: Data, tool path: String, in work: TemporaryFolder) throws -> String {
        let file = work.file("digest-\(UUID().uuidString)")
        try data.write(to: file)
        return String(try runTool(path, [file.path]).prefix { $0 != " " })
    }

    private static func json(_ text: String) -> [String: Any]? {
        try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any]
    }

    private static func manifest(_ out: URL) throws -> [[String: Any]] {
        try String(contentsOf: out.appendingPathComponent("manifest.jsonl"), encoding: .utf8).split(separator: "\n").compactMap { json(String($0)) }
    }

    @Test(arguments: [("sha256", "/usr/bin/sha256sum"), ("md5", "/usr/bin/md5sum")])
    func aRowWhoseBytesHashOtherwiseFailsForGood(algorithm: String, tool: String) async throws {
        // Given four images, and a table giving each one's digest: uppercase and padded with spaces, wrong, empty, right
        let server = try TestServer.start()
        defer { server.stop() }
        let work = TemporaryFolder()
        var lines = ["url,digest"]
        for index in 0..<4 {
            let png = TestImages.png(width: 20 + index, height: 20, seed: UInt64(index))
            server.route("/i/\(index).png", .ok(png, contentType: "image/png"))
            let right = try Self.digest(png, tool: tool, in: work)
            let digest = switch index {
            case 0: "\"  \(right.uppercased()) \""
            case 1: String(right.reversed())
            case 2: ""
            default: right
            }
            lines.append("\(server.url("/i/\(index).png").absoluteString),\(digest)")
        }
        let table = work.file("table.csv")
        try lines.joined(separator: "\n").write(to: table, atomically: true, encoding: .utf8)
        let out = work.file("out")

        // When the table is downloaded with its digests checked
        var arguments = ["urls", table.path, "--out", out.path, "--verify-hash", "digest", "--json"]
        if algorithm == "md5" { arguments += ["--hash", "md5"] }
        let run = try await MirrorBinary.run(arguments)

        // Then the wrong one fails for good (exit 3, not 5) as hash-mismatch and is not saved; the empty one is not checked
        #expect(run.status == 3, "\(run.stderr)")
        let summary = try #require(Self.json(run.stdout))
        #expect(summary["saved"] as? Int == 3 && summary["failed"] as? Int == 1)
        #expect((summary["failures"] as? [String: Int]) == ["hash-mismatch": 1])
        #expect(run.stderr.contains("hash-mismatch") && run.stderr.contains("not the row's"), "\(run.stderr)")
        let records = try Self.manifest(out)
        #expect(Set(records.compactMap { $0["key"] as? String }) == ["000000000", "000000002", "000000003"])
        // And each record keeps the saved file's own SHA-256, as ever
        for record in records {
            let file = try Data(contentsOf: out.appendingPathComponent(try #require(record["file_name"] as? String)))
            #expect(record["sha256"] as? String == (try Self.digest(file, tool: "/usr/bin/sha256sum", in: work)))
        }

        // And a rerun passes the failed row over (permanent), without asking the server for it
        server.resetCounters()
        let again = try await MirrorBinary.run(arguments)
        #expect(again.status == 3 && server.requestCount(path: "/i/1.png") == 0)
    }

    @Test func aDigestIsCheckedOnAnImageTheDiskCacheGives() async throws {
        // Given an image fetched once into the disk cache
        let server = try TestServer.start()
        defer { server.stop() }
        let png = TestImages.png(width: 30, height: 20, seed: 42)
        server.route("/c.png", .ok(png, contentType: "image/png"))
        let work = TemporaryFolder()
        let md5 = try Self.digest(png, tool: "/usr/bin/md5sum", in: work)
        let cache = work.file("cache")
        let table = work.file("table.csv")
        try "url,md5\n\(server.url("/c.png").absoluteString),\(md5)\n".write(to: table, atomically: true, encoding: .utf8)
        let first = try await MirrorBinary.run(["urls", table.path, "--out", work.file("one").path, "--cache-dir", cache.path, "--verify-hash", "md5", "--hash", "md5"])
        #expect(first.status == 0, "\(first.stderr)")

        // When another folder asks for it with a digest it does not have
        try "url,md5\n\(server.url("/c.png").absoluteString),\(String(md5.reversed()))\n".write(to: table, atomically: true, encoding: .utf8)
        server.resetCounters()
        let second = try await MirrorBinary.run(["urls", table.path, "--out", work.file("two").path, "--cache-dir", cache.path, "--verify-hash", "md5", "--hash", "md5", "--json"])

        // Then the cached bytes are checked as the served ones are: the row fails, and the server was not asked
        #expect(second.status == 3, "\(second.stderr)")
        #expect((Self.json(second.stdout)?["failures"] as? [String: Int]) == ["hash-mismatch": 1])
        #expect(server.requestCount(path: "/c.png") == 0)
    }

    @Test func aMissingDigestOrBoxColumnIsAUsageError() async throws {
        let work = TemporaryFolder()
        let table = work.file("table.csv")
        try "url,sha256\nhttp://127.0.0.1:9/a.png,00\n".write(to: table, atomically: true, encoding: .utf8)
        for option in ["--verify-hash", "--blur-col"] {
            let run = try await MirrorBinary.run(["urls", table.path, "--out", work.file("out").path, option, "hash"])
            #expect(run.status == 64, "\(option): \(run.stderr)")
            #expect(run.stderr.contains(option) && run.stderr.contains("hash"), "\(run.stderr)")
        }
        // And --hash alone says what it is for
        let alone = try await MirrorBinary.run(["urls", table.path, "--out", work.file("out").path, "--hash", "md5"])
        #expect(alone.status == 64 && alone.stderr.contains("--verify-hash"), "\(alone.stderr)")
    }

    @Test func facesAreBlurredInTheSavedFilesAndTheRecordsSaySo() async throws {
        // Given three 200×120 noise PNGs and a table: two boxes on the first, none on the second, a broken list on the
        // third (so it must not even be fetched)
        let server = try TestServer.start()
        defer { server.stop() }
        var served: [Data] = []
        for index in 0..<3 {
            served.append(TestImages.png(width: 200, height: 120, seed: UInt64(10 + index)))
            server.route("/f/\(index).png", .ok(served[index], contentType: "image/png"))
        }
        let work = TemporaryFolder()
        let table = work.file("table.csv")
        let rows = [#""[[0.1, 0.1, 0.3, 0.5], [0.6, 0.5, 0.8, 0.9]]""#, "", #""[[0.1, 0.2, 0.3]]""#]
        try (["url,face_bboxes"] + rows.enumerated().map { "\(server.url("/f/\($0.offset).png").absoluteString),\($0.element)" })
            .joined(separator: "\n").write(to: table, atomically: true, encoding: .utf8)
        let out = work.file("out")

        // When it is downloaded into a folder with the boxes blurred, the files kept as PNG
        let run = try await MirrorBinary.run(["urls", table.path, "--out", out.path, "--blur-col", "face_bboxes", "--json"])

        // Then the broken row fails for good, unfetched; the others are saved
        #expect(run.status == 3, "\(run.stderr)")
        let summary = try #require(Self.json(run.stdout))
        #expect(summary["saved"] as? Int == 2 && (summary["failures"] as? [String: Int]) == ["bad-boxes": 1])
        #expect(server.requestCount(path: "/f/2.png") == 0)
        #expect(run.stderr.contains("box 1 has 3 numbers"), "\(run.stderr)")
        let records = Dictionary(uniqueKeysWithValues: try Self.manifest(out).map { ($0["key"] as? String ?? "", $0) })
        #expect(records["000000000"]?["blurred_boxes"] as? Int == 2)
        #expect(records["000000001"]?["blurred_boxes"] as? Int == 0)
        // And the first file's boxes are smooth while far from them nothing moved; the second is the bytes as served
        let first = try Data(contentsOf: out.appendingPathComponent(try #require(records["000000000"]?["file_name"] as? String)))
        let (after, before) = (try #require(HostileImages.decodePNG(first)), try #require(HostileImages.decodePNG(served[0])))
        #expect(after.width == 200 && after.height == 120)
        func energy(_ image: (width: Int, height: Int, channels: Int, pixels: [UInt8]), _ xs: Range<Int>, _ ys: Range<Int>) -> Int {
            var sum = 0
            for y in ys { for x in xs { for c in 0..<3 {
                let value = { (dx: Int, dy: Int) in Int(image.pixels[((y + dy) * image.width + x + dx) * image.channels + c]) }
                sum += abs(4 * value(0, 0) - value(-1, 0) - value(1, 0) - value(0, -1) - value(0, 1))
            } } }
            return sum
        }
        // (the boxes: 20..<60 × 12..<60 and 120..<160 × 60..<108)
        #expect(energy(after, 22..<58, 14..<58) * 8 < energy(before, 22..<58, 14..<58))
        #expect(energy(after, 122..<158, 62..<106) * 8 < energy(before, 122..<158, 62..<106))
        for y in 0..<120 { for x in 190..<200 { #expect(after.pixels[(y * 200 + x) * 3] == before.pixels[(y * 200 + x) * 3]) } }
        let second = try Data(contentsOf: out.appendingPathComponent(try #require(records["000000001"]?["file_name"] as? String)))
        #expect(second == served[1])
    }

    @Test func shardRecordsSayHowManyBoxesWereBlurredAfterTheResize() async throws {
        // Given one image and a JSONL table whose boxes are a JSON array, as pandas writes DataComp's parquet
        let server = try TestServer.start()
        defer { server.stop() }
        server.route("/p.jpg", .ok(TestImages.png(width: 300, height: 200, seed: 4), contentType: "image/png"))
        let work = TemporaryFolder()
        let table = work.file("table.jsonl")
        try #"{"url": "\#(server.url("/p.jpg").absoluteString)", "face_bboxes": [[0.4, 0.3, 0.6, 0.7]]}"#.write(to: table, atomically: true, encoding: .utf8)
        let out = work.file("out")

        // When it becomes a shard, centre-cropped to 64, the box blurred
        let run = try await MirrorBinary.run([
            "urls", table.path, "--out", out.path, "--format", "webdataset", "--resize", "center-crop", "--size", "64", "--blur-col", "face_bboxes",
        ])

        // Then the sample is a 64×64 JPEG whose record and record line count the box
        #expect(run.status == 0, "\(run.stderr)")
        let unpacked = work.file("unpacked")
        try FileManager.default.createDirectory(at: unpacked, withIntermediateDirectories: true)
        try runTool("/bin/tar", ["-xf", out.appendingPathComponent("00000.tar").path, "-C", unpacked.path])
        let record = try #require(Self.json(try String(contentsOf: unpacked.appendingPathComponent("000000000.json"), encoding: .utf8)))
        #expect(record["blurred_boxes"] as? Int == 1 && record["width"] as? Int == 64 && record["original_width"] as? Int == 300)
        let decoded = try #require(HostileImages.decodeJPEG(try Data(contentsOf: unpacked.appendingPathComponent("000000000.jpg"))))
        #expect(decoded.width == 64 && decoded.height == 64)
        let line = try #require(Self.json(try String(contentsOf: out.appendingPathComponent("00000.jsonl"), encoding: .utf8)))
        #expect(line["blurred_boxes"] as? Int == 1)
    }

    @Test func img2datasetsModesAreTheResizeOptionsValues() async throws {
        // Given a 120×60 PNG
        let server = try TestServer.start()
        defer { server.stop() }
        server.route("/w.png", .ok(TestImages.png(width: 120, height: 60, seed: 3), contentType: "image/png"))
        let work = TemporaryFolder()
        let table = work.file("table.txt")
        try server.url("/w.png").absoluteString.write(to: table, atomically: true, encoding: .utf8)

        // When it is fitted to 40 by each mode, and by keep-ratio, longer-side's earlier name
        var sizes: [String: [Int]] = [:]
        var corners: [String: [UInt8]] = [:]
        for mode in ["shorter-side", "longer-side", "keep-ratio", "center-crop", "border", "pad", "fixed"] {
            let out = work.file("out-\(mode)")
            var arguments = ["urls", table.path, "--out", out.path, "--resize", mode, "--size", "40", "--quiet"]
            if mode == "pad" { arguments += ["--pad-color", "#FF8000"] }
            let run = try await MirrorBinary.run(arguments)
            #expect(run.status == 0, "\(mode): \(run.stderr)")
            let record = try #require(try Self.manifest(out).first)
            let image = try #require(HostileImages.decodePNG(try Data(contentsOf: out.appendingPathComponent(record["file_name"] as? String ?? ""))))
            sizes[mode] = [image.width, image.height]
            corners[mode] = Array(image.pixels.prefix(3))
        }

        // Then each has img2dataset's size, and border's and pad's corners are white and orange
        #expect(sizes == ["shorter-side": [80, 40], "longer-side": [40, 20], "keep-ratio": [40, 20], "center-crop": [40, 40],
                          "border": [40, 40], "pad": [40, 40], "fixed": [40, 40]])
        #expect(corners["border"] == [255, 255, 255] && corners["pad"] == [255, 128, 0])

        // And --help names them, beside img2dataset's names
        let help = try await MirrorBinary.run(["urls", "--help"])
        for word in ["shorter-side", "longer-side", "center-crop", "border", "fixed", "keep_ratio_largest", "--pad-color", "--verify-hash", "--blur-col"] {
            #expect(help.stdout.contains(word), "--help lacks \(word)")
        }
        // And a pad colour for another mode is a usage error
        let wrong = try await MirrorBinary.run(["urls", table.path, "--out", work.file("x").path, "--resize", "border", "--pad-color", "black"])
        #expect(wrong.status == 64)
    }
}
