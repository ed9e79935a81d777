import Foundation
import MirrorTestSupport
import Testing

/// Every reservation an image's owner can make, end to end: loopback origins serving robots.txt with
/// `Content-Signal` and `Content-Usage` lines, a TDMRep file, TDMRep, `Content-Usage` and `X-Robots-Tag` headers, and
/// images whose XMP or C2PA manifest (written by exiftool and the C2PA SDK: `Tests/MirrorImagesTests/Samples/Consent`)
/// reserve or allow training, or declare they were generated. Each reserved row must be refused with its signal in its
/// record, nothing else refused, each site file asked for once per origin, a rerun silent, and shards the same.
@Suite("mirror urls, what the owner reserved, end to end", .serialized)
struct ConsentEndToEndTests {
    /// The samples the real writers made.
    static let samples = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("MirrorImagesTests/Samples/Consent")

    /// One row of the table: where it is served, and how it must end for the default purpose (AI training).
    struct Row {
        var origin: String
        var path: String
        /// The signal that refuses it, or `nil` when it is saved.
        var refusedBy: String?
        /// Whether its saved record says it was generated, and carried a C2PA manifest.
        var generated = false
        var c2pa = false
    }

    /// Four origins, each a loopback server of its own (an origin is a scheme, host and port).
    final class Origins: @unchecked Sendable {
        // Set once in `init`, then only read (the servers record requests under their own locks).
        let servers: [String: TestServer]
        let rows: [Row]

        init() throws {
            func sample(_ name: String) throws -> Data { try Data(contentsOf: ConsentEndToEndTests.samples.appendingPathComponent(name)) }
            let png = { (seed: UInt64) in TestImages.png(width: 40 + Int(seed), height: 30, seed: seed) }
            var servers: [String: TestServer] = [:]
            var rows: [Row] = []

            // "managed": Cloudflare's managed robots.txt, reserving AI training for the whole site
            let managed = try TestServer.start()
            managed.route("/robots.txt", .ok(Data("User-agent: *\nContent-Signal: search=yes, ai-train=no\nAllow: /\n".utf8), contentType: "text/plain"))
            for index in 0..<2 {
                managed.route("/m\(index).png", .ok(png(UInt64(index)), contentType: "image/png"))
                rows.append(Row(origin: "managed", path: "/m\(index).png", refusedBy: "content-signal"))
            }
            servers["managed"] = managed

            // "open": says yes to everything in robots.txt; its images and their responses carry the rest
            let open = try TestServer.start()
            open.route("/robots.txt", .ok(Data("User-agent: *\nContent-Signal: search=yes, ai-train=yes\n".utf8), contentType: "text/plain"))
            let files: [(String, String?, Bool, Bool)] = [
                ("xmp-dmi-prohibited-aimltraining.jpg", "iptc", false, false),
                ("xmp-dmi-prohibited-aimltraining.png", "iptc", false, false),
                ("xmp-resource-dmi-prohibited.gif", "iptc", false, false),
                ("xmp-dmi-prohibited-aimltraining.webp", "iptc", false, false),
                ("xmp-extended-dmi-in-extension.jpg", "iptc", false, false),
                ("xmp-dmi-allowed.jpg", nil, false, false),
                ("c2pa-training-mining-notallowed.jpg", "c2pa", false, true),
                ("c2pa-cawg-ai-training-notallowed.jpg", "c2pa", false, true),
                ("c2pa-cawg-genai-training-constrained.jpg", "c2pa", false, true),
                ("c2pa-multisegment-training-mining-notallowed.jpg", "c2pa", false, true),
                ("c2pa-training-mining-allowed.jpg", nil, false, true),
                ("c2pa-cawg-training-mining-allowed.jpg", nil, false, true),
                ("xmp-dst-trainedalgorithmicmedia.jpg", nil, true, false),
                ("c2pa-generated-trainedalgorithmicmedia.png", nil, true, true),
                ("xmp-dst-digitalcapture.jpg", nil, false, false),
                ("plain.jpg", nil, false, false),
            ]
            for (name, signal, generated, c2pa) in files {
                let type = name.hasSuffix(".png") ? "image/png" : name.hasSuffix(".gif") ? "image/gif" : name.hasSuffix(".webp") ? "image/webp" : "image/jpeg"
                open.route("/" + name, .ok(try sample(name), contentType: type))
                rows.append(Row(origin: "open", path: "/" + name, refusedBy: signal, generated: generated, c2pa: c2pa))
            }
            let headers: [(String, [(String, String)], String?)] = [
                ("/usage-n.png", [("Content-Usage", "train-ai=n")], "content-usage"),
                ("/usage-y.png", [("Content-Usage", "train-ai=y, search=n")], nil),
                ("/noml.png", [("X-Robots-Tag", "noml")], "x-robots-tag"),
                ("/tdm-1.png", [("tdm-reservation", "1"), ("tdm-policy", "https://open.test/terms")], "tdmrep-header"),
                ("/tdm-0.png", [("tdm-reservation", "0")], nil),
            ]
            for (index, (path, extra, signal)) in headers.enumerated() {
                open.route(path, Response(headers: [("Content-Type", "image/png")] + extra, body: .bytes(png(UInt64(10 + index)))))
                rows.append(Row(origin: "open", path: path, refusedBy: signal))
            }
            servers["open"] = open

            // "tdmrep": no robots.txt, a TDMRep file reserving one folder with a policy
            let tdmrep = try TestServer.start()
            tdmrep.route("/robots.txt", .status(404))
            tdmrep.route("/.well-known/tdmrep.json", .ok(Data("""
                [{"location": "/reserved/", "tdm-reservation": 1, "tdm-policy": "https://tdmrep.test/policy.json"},
                 {"location": "/", "tdm-reservation": 0}]
                """.utf8), contentType: "application/json"))
            for (index, path) in ["/reserved/a.png", "/reserved/b.png", "/open/c.png"].enumerated() {
                tdmrep.route(path, .ok(png(UInt64(20 + index)), contentType: "image/png"))
                rows.append(Row(origin: "tdmrep", path: path, refusedBy: path.hasPrefix("/reserved/") ? "tdmrep-file" : nil))
            }
            servers["tdmrep"] = tdmrep

            // "usage": aipref's Content-Usage lines in robots.txt, the longest path winning
            let usage = try TestServer.start()
            usage.route("/robots.txt", .ok(Data("User-agent: *\nContent-Usage: train-ai=n\nContent-Usage: /ai-ok/ train-ai=y\n".utf8), contentType: "text/plain"))
            for (index, path) in ["/x.png", "/ai-ok/y.png"].enumerated() {
                usage.route(path, .ok(png(UInt64(30 + index)), contentType: "image/png"))
                rows.append(Row(origin: "usage", path: path, refusedBy: path == "/x.png" ? "content-usage" : nil))
            }
            servers["usage"] = usage

            self.servers = servers
            self.rows = rows
        }

        func stop() {
            for server in servers.values { server.stop() }
        }

        func url(_ row: Row) -> String { servers[row.origin]!.url(row.path).absoluteString }

        /// The table: a CSV with each row's path as its caption.
        var csv: String {
            "url,caption\n" + rows.map { "\(url($0)),\($0.path)" }.joined(separator: "\n") + "\n"
        }

        /// A temporary folder holding the table, as `table.csv`.
        func writeTable() throws -> (TemporaryFolder, URL) {
            let work = TemporaryFolder()
            let table = work.file("table.csv")
            try csv.write(to: table, atomically: true, encoding: .utf8)
            return (work, table)
        }

        /// Requests each origin received, by path.
        func requests(_ origin: String) -> [String] { servers[origin]!.requests.map(\.path) }

        var requestCount: Int { servers.values.map(\.requests.count).reduce(0, +) }
    }

    private static func json(_ text: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
    }

    private static func lines(_ file: URL) throws -> [[String: Any]] {
        try String(contentsOf: file, encoding: .utf8).split(separator: "\n").map { try json(String($0)) }
    }

    @Test func everyReservationIsHonouredWithItsEvidenceAndNothingElseIsRefused() async throws {
        // Given the four origins and a table of their images
        let origins = try Origins()
        defer { origins.stop() }
        let (work, table) = try origins.writeTable()
        let out = work.file("out")

        // When mirror collects them for AI training (the default) into a folder
        let run = try await MirrorBinary.run(["urls", table.path, "--out", out.path, "--json"])

        // Then every reserved row is refused, counted by its signal, and everything else is saved: exit 0, as nothing
        // that may be had is missing
        #expect(run.status == 0, "stderr: \(run.stderr)")
        let summary = try Self.json(run.stdout)
        var expected: [String: Int] = [:]
        for row in origins.rows { if let signal = row.refusedBy { expected[signal, default: 0] += 1 } }
        #expect(summary["refusals"] as? [String: Int] == expected)
        #expect(summary["optedOut"] as? Int == expected.values.reduce(0, +))
        #expect(summary["saved"] as? Int == origins.rows.filter { $0.refusedBy == nil }.count)
        #expect(summary["generated"] as? Int == 2 && summary["purpose"] as? String == "ai-train")

        // And each saved record says which purpose applied, whether the image declares it was generated, and whether it
        // carried Content Credentials
        let records = try Self.lines(out.appendingPathComponent("manifest.jsonl"))
        #expect(Set(records.compactMap { $0["caption"] as? String }) == Set(origins.rows.filter { $0.refusedBy == nil }.map(\.path)))
        for row in origins.rows where row.refusedBy == nil {
            let record = try #require(records.first { $0["caption"] as? String == row.path })
            #expect(record["purpose"] as? String == "ai-train")
            #expect(record["generated"] as? Bool == row.generated, "\(row.path)")
            #expect(record["c2pa"] as? Bool == row.c2pa, "\(row.path)")
            if row.generated {
                #expect((record["source_type"] as? String)?.hasSuffix("/trainedAlgorithmicMedia") == true)
                #expect(record["source_type_from"] as? String == (row.c2pa ? "c2pa" : "iptc"))
            }
        }
        // and each refused row's evidence is in the folder's state database: the signal, what it said, where
        let state = out.appendingPathComponent(".mirror/state.sqlite").path
        let refused = try runTool("/usr/bin/sqlite3", ["-separator", "|", state, "SELECT url, signal, value, location, purpose, policy FROM attempts WHERE reason = 'opted_out' ORDER BY url"])
        let byURL = Dictionary(uniqueKeysWithValues: refused.split(separator: "\n").map { line in
            let fields = line.split(separator: "|", omittingEmptySubsequences: false).map(String.init)
            return (fields[0], fields)
        })
        for row in origins.rows {
            let fields = byURL[origins.url(row)]
            #expect(fields?[1] == row.refusedBy, "\(row.path)")
            #expect(fields.map { $0[4] == "ai-train" } ?? (row.refusedBy == nil))
        }
        #expect(byURL[origins.url(Row(origin: "tdmrep", path: "/reserved/a.png"))]?[5] == "https://tdmrep.test/policy.json")
        #expect(byURL[origins.url(Row(origin: "tdmrep", path: "/reserved/a.png"))]?[3] == "/.well-known/tdmrep.json rule 1 (location /reserved/)")
        #expect(byURL[origins.url(Row(origin: "managed", path: "/m0.png"))]?[2] == "ai-train=no")
        #expect(byURL[origins.url(Row(origin: "open", path: "/c2pa-cawg-genai-training-constrained.jpg"))]?[2].hasPrefix("cawg.ai_generative_training: constrained") == true)
        #expect(byURL[origins.url(Row(origin: "open", path: "/xmp-extended-dmi-in-extension.jpg"))]?[3] == "extended XMP plus:DataMining")
        // and mirror status counts them by signal
        let status = try await MirrorBinary.run(["status", out.path, "--json"])
        #expect(try Self.json(status.stdout)["refusals"] as? [String: Int] == expected)

        // And every origin's site files were asked for once, before its images; refused-by-site images never requested
        for origin in ["managed", "open", "tdmrep", "usage"] {
            let paths = origins.requests(origin)
            #expect(paths.filter { $0 == "/robots.txt" }.count == 1, "\(origin): \(paths)")
            #expect(paths.filter { $0 == "/.well-known/tdmrep.json" }.count == 1, "\(origin): \(paths)")
        }
        #expect(!origins.requests("managed").contains("/m0.png"))
        #expect(!origins.requests("tdmrep").contains("/reserved/a.png"))
        #expect(!origins.requests("usage").contains("/x.png"))

        // And a rerun makes no request at all: saved rows are there, refused rows are remembered, and so are the
        // site files, for a day
        let before = origins.requestCount
        let rerun = try await MirrorBinary.run(["urls", table.path, "--out", out.path, "--json"])
        #expect(rerun.status == 0, "stderr: \(rerun.stderr)")
        #expect(origins.requestCount == before)
        #expect(try Self.json(rerun.stdout)["saved"] as? Int == 0)
    }

    @Test func shardRecordsCarryTheSameEvidence() async throws {
        // Given the same origins and table
        let origins = try Origins()
        defer { origins.stop() }
        let (work, table) = try origins.writeTable()
        let out = work.file("shards")

        // When they are collected as WebDataset shards (one shard of them all)
        let run = try await MirrorBinary.run(["urls", table.path, "--out", out.path, "--format", "webdataset", "--shard-size", "100", "--json"])
        #expect(run.status == 0, "stderr: \(run.stderr)")

        // Then every row has a record line: refused ones with their signal as reason and their evidence, saved ones
        // with the purpose, generated and c2pa; and the stats count the refusals by signal
        let lines = try Self.lines(out.appendingPathComponent("00000.jsonl"))
        #expect(lines.count == origins.rows.count)
        for row in origins.rows {
            let line = try #require(lines.first { $0["caption"] as? String == row.path }, "\(row.path)")
            if let signal = row.refusedBy {
                #expect(line["status"] as? String == "opted_out", "\(row.path)")
                #expect(line["reason"] as? String == signal, "\(row.path)")
                #expect(line["signal_value"] is String && line["signal_location"] is String, "\(row.path)")
                #expect(line["purpose"] as? String == "ai-train")
            } else {
                #expect(line["status"] as? String == "success", "\(row.path)")
                #expect(line["generated"] as? Bool == row.generated && line["c2pa"] as? Bool == row.c2pa, "\(row.path)")
            }
        }
        let reserved = try #require(lines.first { $0["caption"] as? String == "/reserved/b.png" })
        #expect(reserved["tdm_policy"] as? String == "https://tdmrep.test/policy.json")
        let stats = try Self.json(try String(contentsOf: out.appendingPathComponent("00000_stats.json"), encoding: .utf8))
        var expected: [String: Int] = [:]
        for row in origins.rows { if let signal = row.refusedBy { expected[signal, default: 0] += 1 } }
        #expect(stats["refusals"] as? [String: Int] == expected)
        #expect(stats["generated"] as? Int == 2 && stats["purpose"] as? String == "ai-train")
        #expect(try Self.json(try await MirrorBinary.run(["status", out.path, "--json"]).stdout)["refusals"] as? [String: Int] == expected)
    }

    @Test func aPurposeASignalDoesNotCoverRefusesNothingForItAndTheRecordsSaySo() async throws {
        // Given the origins, and a table of what reserves AI training alone, and of what reserves search too
        let origins = try Origins()
        defer { origins.stop() }
        let work = TemporaryFolder()
        let table = work.file("table.txt")
        let trainingOnly = ["/m0.png", "/m1.png", "/xmp-dmi-prohibited-aimltraining.jpg", "/c2pa-cawg-ai-training-notallowed.jpg", "/usage-n.png", "/x.png"]
        let rows = origins.rows.filter { trainingOnly.contains($0.path) || $0.path == "/reserved/a.png" || $0.path == "/noml.png" }
        try (rows.map { origins.url($0) }.joined(separator: "\n") + "\n").write(to: table, atomically: true, encoding: .utf8)
        let out = work.file("search")

        // When a search index collects them (a mirror kept for search, not for training)
        let run = try await MirrorBinary.run(["urls", table.path, "--out", out.path, "--json", "--purpose", "search"])

        // Then the training-only reservations refuse nothing; TDMRep's text-and-data-mining reservation still does; noml
        // (machine learning) does not
        #expect(run.status == 0, "stderr: \(run.stderr)")
        let summary = try Self.json(run.stdout)
        #expect(summary["refusals"] as? [String: Int] == ["tdmrep-file": 1])
        #expect(summary["saved"] as? Int == rows.count - 1 && summary["purpose"] as? String == "search")
        let records = try Self.lines(out.appendingPathComponent("manifest.jsonl"))
        #expect(records.count == rows.count - 1 && records.allSatisfy { $0["purpose"] as? String == "search" })
        let refused = try runTool("/usr/bin/sqlite3", [out.appendingPathComponent(".mirror/state.sqlite").path, "SELECT signal, purpose FROM attempts"])
        #expect(refused.trimmingCharacters(in: .whitespacesAndNewlines) == "tdmrep-file|search")
    }

    @Test func generatedImagesAreKeptOutWithSkipGeneratedAndIgnoredSignalsAreListed() async throws {
        // Given the origins
        let origins = try Origins()
        defer { origins.stop() }
        let (work, table) = try origins.writeTable()
        let out = work.file("out")

        // When the run keeps generated images out and sets aside the managed site's content signals (a licence)
        let run = try await MirrorBinary.run([
            "urls", table.path, "--out", out.path, "--json", "--skip-generated", "--ignore-opt-out", "content-signal",
        ])

        // Then the two generated images are filtered, the managed site's images saved with the reservation they set
        // aside in their records, the warning said once, and the run's ignored signals in its summary
        #expect(run.status == 0, "stderr: \(run.stderr)")
        let summary = try Self.json(run.stdout)
        #expect(summary["filtered"] as? Int == 2)
        #expect(summary["ignoredOptOuts"] as? [String] == ["content-signal"])
        #expect((summary["refusals"] as? [String: Int])?["content-signal"] == nil)
        #expect(run.stderr.components(separatedBy: "warning: --ignore-opt-out content-signal").count == 2)
        let records = try Self.lines(out.appendingPathComponent("manifest.jsonl"))
        #expect(!records.contains { $0["generated"] as? Bool == true })
        let managed = try #require(records.first { $0["caption"] as? String == "/m0.png" })
        #expect(managed["opt_outs_ignored"] as? [String] == ["content-signal ai-train=no (robots.txt, group *, line 2)"])
    }
}

/// A search whose providers serve some images their owners reserved: the count still ends at N with unmarked images,
/// and the refusals are counted by signal.
@Suite("mirror <query>, what the owner reserved", .serialized)
struct ConsentSearchTests: EmulatedSearch {
    @Test func theCountEndsAtNWithUnreservedImagesAndRefusalsAreCountedBySignal() async throws {
        // Given Openverse's 20 results, every 4th with XMP that prohibits AI training, and Wikimedia's, every 3rd with a
        // TDMRep header, so that the search must pass over them to reach 30
        let api = try emulator {
            $0.corpus[.openverse] = .init(count: 20)
            $0.reservations[.openverse] = .init(.xmp, every: 4)
            $0.reservations[.wikimedia] = .init(.tdmHeader, every: 3)
        }
        defer { api.stop() }
        let out = TemporaryFolder()

        // When 30 are asked for, for AI training (the default)
        let run = try await MirrorBinary.run(["kittens", "--count", "30", "--out", out.path, "--json"], environment: environment(api))

        // Then the folder holds exactly 30, none of them reserved, and the summary counts the refusals by signal
        #expect(run.status == 0, "stderr: \(run.stderr)")
        let summary = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any])
        #expect(summary["total"] as? Int == 30 && summary["saved"] as? Int == 30)
        let refusals = try #require(summary["refusals"] as? [String: Int])
        #expect(Set(refusals.keys) == ["iptc", "tdmrep-header"])
        #expect(refusals["iptc"] == 5, "Openverse ran dry: all 5 of its reserved images were met")
        #expect(summary["optedOut"] as? Int == refusals.values.reduce(0, +))
        let records = try String(contentsOf: out.url.appendingPathComponent("manifest.jsonl"), encoding: .utf8).split(separator: "\n")
            .compactMap { try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        #expect(records.count == 30)
        for record in records {
            let provider = try #require(record["provider"] as? String)
            let id = try #require(record["id"] as? String)
            let index = (0..<100).first { api.image(provider: APIEmulator.Provider(rawValue: provider)!, query: "kittens", index: $0).id == id }
            let reserved = index.map { $0 % (provider == "openverse" ? 4 : 3) == 0 }
            #expect(reserved == false, "\(provider) \(id) is reserved")
            #expect(record["purpose"] as? String == "ai-train")
        }
        // and the stderr summary says so
        #expect(run.stderr.contains("reserved against ai-train"), "\(run.stderr)")
    }
}
