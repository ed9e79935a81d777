import Foundation
import MirrorTestSupport
import Testing

/// `mirror urls` over Parquet tables pyarrow wrote (`Tests/mirrorTests/Tables`, scripts/fixtures/make_table_fixtures.py), LAION's
/// columns, their `http://images.test/…` URLs sent to the loopback server with `--connect-to`.
@Suite("mirror urls, Parquet tables", .serialized)
struct ParquetCommandTests {
    static let tables = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Tables")

    /// A server with the ten images the tables name.
    private func imageServer() throws -> TestServer {
        let server = try TestServer.start()
        for index in 0..<10 {
            server.route("/\(index).png", .ok(TestImages.png(width: 20 + index, height: 20, seed: UInt64(index)), contentType: "image/png"))
        }
        return server
    }

    private func records(_ folder: TemporaryFolder) throws -> [[String: Any]] {
        let text = try String(contentsOf: folder.url.appendingPathComponent("manifest.jsonl"), encoding: .utf8)
        return text.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
    }

    @Test func aLAIONPartIsDownloadedWithItsCaptionsAndKeptColumns() async throws {
        // Given LAION's columns in a file of three row groups, two of its twelve rows without an http URL
        let server = try imageServer()
        defer { server.stop() }
        let out = TemporaryFolder()

        // When it is run as LAION is
        let run = try await MirrorBinary.run([
            "urls", Self.tables.appendingPathComponent("laion-part.parquet").path, "--out", out.path, "--url-col", "URL",
            "--caption-col", "TEXT", "--keep-cols", "WIDTH,similarity,pwatermark", "--connect-to", "::127.0.0.1:\(server.port)", "--json",
        ])

        // Then the ten images are saved, each record keyed by its row with its caption and kept columns as pyarrow reads
        // them, and the two bad rows are counted (exit 3: rows missing)
        #expect(run.status == 3, "stderr: \(run.stderr)")
        let summary = try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any]
        #expect(summary?["saved"] as? Int == 10, "\(run.stdout)")
        #expect(summary?["invalidRows"] as? Int == 2, "\(run.stdout)")
        let byKey = Dictionary(uniqueKeysWithValues: try records(out).map { ($0["key"] as? String ?? "", $0) })
        #expect(byKey.count == 10)
        let third = try #require(byKey["000000003"])
        #expect(third["caption"] as? String == "caption 3 — café")
        #expect(third["WIDTH"] as? Int == 23)
        #expect((third["similarity"] as? Double).map { abs($0 - 0.28) < 1e-12 } == true)
        #expect(byKey["000000000"]?["pwatermark"] is NSNull)
        #expect(run.stderr.contains("row 11") && run.stderr.contains("row 12"), "\(run.stderr)")
    }

    @Test func aFolderOfPartsKeepsItsKeysAcrossFiles() async throws {
        // Given the same table split in two files (zstd, and gzip with v2 pages)
        let server = try imageServer()
        defer { server.stop() }
        let folder = Self.tables.appendingPathComponent("laion-folder").path

        // When its URLs are listed, and then fetched
        let listed = try await MirrorBinary.run(["urls", folder, "--out", TemporaryFolder().path, "--url-col", "URL", "--dry-run"])
        let out = TemporaryFolder()
        let run = try await MirrorBinary.run([
            "urls", folder, "--out", out.path, "--url-col", "URL", "--caption-col", "TEXT", "--connect-to", "::127.0.0.1:\(server.port)",
        ])

        // Then rows are in file order and keys continue from the first file into the second
        #expect(listed.status == 0, "stderr: \(listed.stderr)")
        #expect(listed.stdout.split(separator: "\n") == (0..<10).map { "http://images.test/\($0).png"[...] })
        #expect(listed.stderr.contains("part-00001.parquet row 5"), "\(listed.stderr)")
        #expect(run.status == 3, "stderr: \(run.stderr)")
        let keys = try records(out).compactMap { $0["key"] as? String }.sorted()
        #expect(keys == (0..<10).map { String(format: "%09d", $0) })
        let seventh = try records(out).first { $0["key"] as? String == "000000007" }
        #expect(seventh?["caption"] as? String == "caption 7 — café")
    }

    @Test func aDataCompPartIsCheckedAndBlurredFromItsColumns() async throws {
        // Given DataComp's columns: a face to blur, a digest no served image has, a row with neither, boxes that are
        // not boxes (a list<list<double>> column, as DataComp writes face_bboxes)
        let server = try imageServer()
        defer { server.stop() }
        let out = TemporaryFolder()

        // When it is run as DataComp's download script runs img2dataset
        let run = try await MirrorBinary.run([
            "urls", Self.tables.appendingPathComponent("datacomp-part.parquet").path, "--out", out.path, "--caption-col", "text",
            "--keep-cols", "uid", "--verify-hash", "sha256", "--blur-col", "face_bboxes", "--connect-to", "::127.0.0.1:\(server.port)",
            "--json",
        ])

        // Then the face is blurred (one box), the wrong digest fails its row for good, and the bad boxes fail theirs
        // before anything is fetched
        #expect(run.status == 3, "stderr: \(run.stderr)")
        let summary = try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any]
        #expect(summary?["saved"] as? Int == 2, "\(run.stdout)")
        let failures = summary?["failures"] as? [String: Int]
        #expect(failures?["hash-mismatch"] == 1 && failures?["bad-boxes"] == 1, "\(run.stdout)")
        let byKey = Dictionary(uniqueKeysWithValues: try records(out).map { ($0["key"] as? String ?? "", $0) })
        #expect(byKey["000000000"]?["blurred_boxes"] as? Int == 1, "\(byKey)")
        #expect(byKey["000000000"]?["uid"] as? String == String(repeating: "0", count: 32))
        #expect(byKey["000000002"]?["blurred_boxes"] as? Int == 0, "\(byKey)")
        #expect(!server.requests.contains { $0.path == "/3.png" })
    }

    @Test func aFileThatIsNotReadableIsOneLineAndExit65() async throws {
        // Given a Parquet file cut in the middle, and one whose footer is damaged
        let whole = try Data(contentsOf: Self.tables.appendingPathComponent("laion-part.parquet"))
        let folder = TemporaryFolder()
        let cut = folder.url.appendingPathComponent("cut.parquet")
        try whole.prefix(whole.count / 2).write(to: cut)
        var damaged = whole
        damaged[damaged.count - 20] ^= 0xFF
        damaged[damaged.count - 40] ^= 0xFF
        let broken = folder.url.appendingPathComponent("broken.parquet")
        try damaged.write(to: broken)

        for file in [cut, broken] {
            let run = try await MirrorBinary.run(["urls", file.path, "--out", TemporaryFolder().path, "--url-col", "URL"])
            #expect(run.status == 65 || run.status == 64, "\(file.lastPathComponent): \(run.status) \(run.stderr)")
            #expect(run.stderr.contains(file.lastPathComponent), "\(run.stderr)")
            #expect(run.stderr.split(separator: "\n").count == 1, "\(run.stderr)")
        }
        // and a column the file lacks names the columns it has
        let missing = try await MirrorBinary.run(["urls", Self.tables.appendingPathComponent("laion-part.parquet").path, "--out", TemporaryFolder().path])
        #expect(missing.status == 64)
        #expect(missing.stderr.contains("its columns: URL, TEXT, WIDTH"), "\(missing.stderr)")
    }
}
