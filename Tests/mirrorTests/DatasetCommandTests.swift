import Foundation
import MirrorTestSupport
import Testing

/// Dataset collection end to end: tables in, WebDataset shards out, resized, resumable; opt-out headers and
/// robots.txt. The shards are listed and unpacked by GNU tar here; `scripts/check/check-datasets` reads them with the
/// `webdataset` package and Hugging Face `datasets`.
@Suite("mirror urls, datasets, end to end", .serialized)
struct DatasetCommandTests {
    static let rows = 1_000

    /// What row `index` of the test table is: an image, a missing one (404), or a bad row.
    enum Row {
        case image, missing, bad(String)

        init(_ index: Int) {
            if index % 50 == 7 { self = .bad(index % 100 == 7 ? "not a url" : "") }
            else if index % 97 == 3 { self = .missing }
            else { self = .image }
        }
    }

    /// A server with the table's images (PNGs of varied sizes) at /i/<row>.png, each after `latency`; those of rows
    /// `held` wait at `gate` until the test opens it.
    private func serve(latency: Duration = .zero, holding held: PartialRangeFrom<Int>? = nil, at gate: Gate? = nil) throws -> TestServer {
        let server = try TestServer.start(latency: latency)
        for index in 0..<Self.rows where { if case .image = Row(index) { true } else { false } }() {
            let png = TestImages.png(width: 70 + index % 50, height: 65 + index % 30, seed: UInt64(index))
            var response = Response.ok(png, contentType: "image/png")
            if let held, let gate, held.contains(index) { response = response.held(by: gate) }
            server.route("/i/\(index).png", response)
        }
        return server
    }

    /// The table as CSV, with quoted captions and two extra columns.
    private func csv(_ server: TestServer) -> String {
        var lines = ["url,caption,source,score"]
        for index in 0..<Self.rows {
            let url: String
            switch Row(index) {
            case .image, .missing: url = server.url("/i/\(index).png").absoluteString
            case let .bad(text): url = text
            }
            lines.append("\(url),\"image \(index), \"\"quoted\"\"\",web,\(index % 10)")
        }
        return lines.joined(separator: "\n") + "\n"
    }

    private var expected: (saved: Int, failed: Int, invalid: Int) {
        var counts = (saved: 0, failed: 0, invalid: 0)
        for index in 0..<Self.rows {
            switch Row(index) {
            case .image: counts.saved += 1
            case .missing: counts.failed += 1
            case .bad: counts.invalid += 1
            }
        }
        return counts
    }

    /// A JPEG's width and height, from its first start-of-frame segment.
    static func jpegSize(_ data: Data) -> (Int, Int)? {
        let bytes = [UInt8](data)
        guard bytes.starts(with: [0xFF, 0xD8]) else { return nil }
        var at = 2
        while at + 9 < bytes.count, bytes[at] == 0xFF {
            let marker = bytes[at + 1], length = Int(bytes[at + 2]) << 8 | Int(bytes[at + 3])
            if (0xC0...0xCF).contains(marker), ![0xC4, 0xC8, 0xCC].contains(marker) {
                return (Int(bytes[at + 7]) << 8 | Int(bytes[at + 8]), Int(bytes[at + 5]) << 8 | Int(bytes[at + 6]))
            }
            at += 2 + length
        }
        return nil
    }

    private static func stats(_ out: URL) throws -> [[String: Any]] {
        let names = try FileManager.default.contentsOfDirectory(atPath: out.path).filter { $0.hasSuffix("_stats.json") }.sorted()
        return try names.map { try JSONSerialization.jsonObject(with: Data(contentsOf: out.appendingPathComponent($0))) as! [String: Any] }
    }

    /// Checks every shard of `out`: samples complete and 64×64 JPEGs (the PNGs served, re-encoded: WebDataset's default),
    /// records one per row, stats adding up to the table, and `sizes.json` naming each shard's samples.
    private func checkShards(_ out: URL, shardSize: Int) throws {
        let stats = try Self.stats(out)
        #expect(stats.count == (Self.rows + shardSize - 1) / shardSize)
        #expect(stats.map { $0["rows"] as? Int ?? 0 }.reduce(0, +) == Self.rows)
        #expect(stats.map { $0["saved"] as? Int ?? 0 }.reduce(0, +) == expected.saved)
        #expect(stats.map { $0["failed"] as? Int ?? 0 }.reduce(0, +) == expected.failed)
        #expect(stats.map { $0["invalidRows"] as? Int ?? 0 }.reduce(0, +) == expected.invalid)
        for shard in stats {
            let parts = ["saved", "failed", "invalidRows", "duplicates", "nearDuplicates", "filtered", "optedOut", "disallowed"].map { shard[$0] as? Int ?? 0 }
            #expect(parts.reduce(0, +) == shard["rows"] as? Int, "\(shard)")
        }
        var keys = Set<String>()
        for index in 0..<stats.count {
            let name = String(format: "%05d", index)
            let unpacked = out.appendingPathComponent(".unpacked-\(name)")
            try FileManager.default.createDirectory(at: unpacked, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: unpacked) }
            try runTool("/bin/tar", ["-xf", out.appendingPathComponent(name + ".tar").path, "-C", unpacked.path])
            let members = try FileManager.default.contentsOfDirectory(atPath: unpacked.path)
            let samples = Set(members.map { String($0.split(separator: ".").first!) })
            #expect(samples.count == stats[index]["saved"] as? Int)
            for key in samples {
                #expect(keys.insert(key).inserted, "\(key) in two shards")
                let position = Int(key)!
                #expect(position / shardSize == index)
                guard case .image = Row(position) else {
                    Issue.record("row \(position) has no image but a sample")
                    continue
                }
                let image = try Data(contentsOf: unpacked.appendingPathComponent(key + ".jpg"))
                #expect(Self.jpegSize(image).map { [$0.0, $0.1] } == [64, 64], "\(key)")
                let record = try JSONSerialization.jsonObject(with: Data(contentsOf: unpacked.appendingPathComponent(key + ".json"))) as! [String: Any]
                #expect(record["key"] as? String == key)
                #expect(record["width"] as? Int == 64 && record["original_width"] as? Int == 70 + position % 50)
                #expect(record["format"] as? String == "jpeg" && record["original_format"] as? String == "png")
                #expect(record["source"] as? String == "web" && record["score"] as? String == String(position % 10))
                let caption = try String(contentsOf: unpacked.appendingPathComponent(key + ".txt"), encoding: .utf8)
                #expect(caption == "image \(position), \"quoted\"")
            }
            // One record line per row, in row order, failures with their status
            let lines = try String(contentsOf: out.appendingPathComponent(name + ".jsonl"), encoding: .utf8).split(separator: "\n")
            #expect(lines.count == stats[index]["rows"] as? Int)
            let statuses = lines.map { line in
                (try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])?["status"] as? String ?? "?"
            }
            for (offset, status) in statuses.enumerated() {
                let position = index * shardSize + offset
                switch Row(position) {
                case .image: #expect(status == "success", "row \(position)")
                case .missing: #expect(status == "failed", "row \(position)")
                case .bad: #expect(status == "invalid", "row \(position)")
                }
            }
        }
        #expect(keys.count == expected.saved)
        #expect(try FileManager.default.contentsOfDirectory(atPath: out.path).filter { $0.hasSuffix(".part") }.isEmpty)
        let sizes = try JSONSerialization.jsonObject(with: Data(contentsOf: out.appendingPathComponent("sizes.json"))) as? [String: Int]
        #expect(sizes == Dictionary(uniqueKeysWithValues: stats.enumerated().map { (String(format: "%05d.tar", $0.offset), $0.element["saved"] as? Int ?? -1) }))
    }

    @Test func aThousandRowCSVBecomesResizedShardsWhoseStatsAddUp() async throws {
        // Given a 1,000-row CSV with captions, two extra columns, 20 bad rows and 10 missing images
        let server = try serve()
        defer { server.stop() }
        let work = TemporaryFolder()
        let table = work.file("table.csv")
        try csv(server).write(to: table, atomically: true, encoding: .utf8)
        let out = work.file("out")

        // When it becomes WebDataset shards of 256, center-cropped to 64
        let run = try await MirrorBinary.run([
            "urls", table.path, "--out", out.path, "--format", "webdataset", "--shard-size", "256",
            "--resize", "center-crop", "--size", "64", "--keep-cols", "source,score", "--json",
        ])

        // Then it exits 3 (some rows gave no image), every bad row is named by its row number, and the shards hold it all
        #expect(run.status == 3, "stderr: \(run.stderr.suffix(500))")
        #expect(run.stderr.contains("skipped row 8: not an http(s) URL: not a url"))
        #expect(run.stderr.contains("skipped row 58: no URL"))
        let summary = try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any]
        #expect(summary?["saved"] as? Int == expected.saved)
        #expect(summary?["invalidRows"] as? Int == expected.invalid)
        #expect(summary?["shards"] as? Int == 4)
        try checkShards(out, shardSize: 256)

        // And a rerun is a no-op: no image requested, no shard touched, sizes.json not rewritten
        let sizesWritten = try FileManager.default.attributesOfItem(atPath: out.appendingPathComponent("sizes.json").path)[.modificationDate] as? Date
        server.resetCounters()
        let again = try await MirrorBinary.run(["urls", table.path, "--out", out.path, "--format", "webdataset", "--shard-size", "256", "--resize", "center-crop", "--size", "64", "--json"])
        #expect(server.totalRequests == 0)
        let second = try JSONSerialization.jsonObject(with: Data(again.stdout.utf8)) as? [String: Any]
        #expect(second?["shardsWritten"] as? Int == 0)
        #expect(second?["skipped"] as? Int == Self.rows - expected.invalid)
        #expect(try FileManager.default.attributesOfItem(atPath: out.appendingPathComponent("sizes.json").path)[.modificationDate] as? Date == sizesWritten)

        // And another shard size for the same folder is refused with one line
        let other = try await MirrorBinary.run(["urls", table.path, "--out", out.path, "--format", "webdataset", "--shard-size", "100"])
        #expect(other.status != 0 && other.stderr.contains("holds shards of 256 rows; run again with --shard-size 256"))
    }

    @Test func shardsOfMixedFormatsHoldOneFormatByDefault() async throws {
        // Given a table of every format hosts serve: JPEG (baseline, progressive, CMYK, with EXIF), PNG (grey,
        // interlaced, animated), GIF (still, animated), WebP (lossy, lossless, alpha, animated), BMP, TIFF, HEIC, AVIF
        let samples = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("MirrorImagesTests/Samples")
        let names = try FileManager.default.contentsOfDirectory(atPath: samples.path)
            .filter { ["jpg", "png", "gif", "webp", "bmp", "tiff", "heic", "avif"].contains($0.split(separator: ".").last.map(String.init)) }.sorted()
        let server = try TestServer.start()
        defer { server.stop() }
        var served: [String: Data] = [:]
        for name in names {
            served[name] = try Data(contentsOf: samples.appendingPathComponent(name))
            server.route("/s/" + name, .ok(served[name]!, contentType: "application/octet-stream"))
        }
        let work = TemporaryFolder()
        let table = work.file("table.txt")
        try names.map { server.url("/s/" + $0).absoluteString }.joined(separator: "\n").write(to: table, atomically: true, encoding: .utf8)
        let out = work.file("out")

        // When they become WebDataset shards with no --encode and no --resize
        let run = try await MirrorBinary.run(["urls", table.path, "--out", out.path, "--format", "webdataset", "--shard-size", "8", "--quiet"])

        // Then every sample is a .jpg, the JPEGs as served byte for byte, the others converted; the records say what
        // was served; sizes.json counts each shard's samples
        #expect(run.status == 0, "\(run.stderr)")
        let unpacked = work.file("unpacked")
        try FileManager.default.createDirectory(at: unpacked, withIntermediateDirectories: true)
        let tars = try FileManager.default.contentsOfDirectory(atPath: out.path).filter { $0.hasSuffix(".tar") }.sorted()
        for tar in tars { try runTool("/bin/tar", ["-xf", out.appendingPathComponent(tar).path, "-C", unpacked.path]) }
        let members = try FileManager.default.contentsOfDirectory(atPath: unpacked.path)
        #expect(Set(members.map { $0.split(separator: ".").last.map(String.init) ?? "" }) == ["jpg", "json"])  // no captions
        #expect(members.filter { $0.hasSuffix(".jpg") }.count == names.count)
        for (row, name) in names.enumerated() {
            let key = String(format: "%09d", row)
            let image = try Data(contentsOf: unpacked.appendingPathComponent(key + ".jpg"))
            let record = try JSONSerialization.jsonObject(with: Data(contentsOf: unpacked.appendingPathComponent(key + ".json"))) as? [String: Any]
            #expect(Self.jpegSize(image) != nil, "\(name) is not a JPEG in the shard")
            #expect(record?["format"] as? String == "jpeg" && record?["original_bytes"] as? Int == served[name]!.count, "\(name): \(record ?? [:])")
            if name.hasSuffix(".jpg") {
                #expect(image == served[name], "\(name) was re-encoded")
                #expect(record?["original_format"] as? String == "jpeg")
            } else {
                #expect(record?["original_format"] as? String != "jpeg", "\(name)")
            }
        }
        let sizes = try JSONSerialization.jsonObject(with: Data(contentsOf: out.appendingPathComponent("sizes.json"))) as? [String: Int]
        #expect(sizes == Dictionary(uniqueKeysWithValues: tars.enumerated().map { ($0.element, min(8, names.count - $0.offset * 8)) }))
    }

    @Test func theSameTableAsGzippedJSONLGivesTheSameShards() async throws {
        let server = try serve()
        defer { server.stop() }
        let work = TemporaryFolder()
        var lines: [String] = []
        for index in 0..<Self.rows {
            let url: Any
            switch Row(index) {
            case .image, .missing: url = server.url("/i/\(index).png").absoluteString
            case let .bad(text): url = text
            }
            let object: [String: Any] = ["url": url, "caption": "image \(index), \"quoted\"", "source": "web", "score": String(index % 10)]
            lines.append(String(decoding: try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]), as: UTF8.self))
        }
        let plain = work.file("table.jsonl")
        try (lines.joined(separator: "\n") + "\n").write(to: plain, atomically: true, encoding: .utf8)
        try runTool("/bin/gzip", [plain.path])
        let out = work.file("out")
        let run = try await MirrorBinary.run([
            "urls", plain.path + ".gz", "--out", out.path, "--format", "webdataset", "--shard-size", "256",
            "--resize", "center-crop", "--size", "64", "--keep-cols", "source,score", "--quiet",
        ])
        #expect(run.status == 3, "stderr: \(run.stderr.suffix(500))")
        try checkShards(out, shardSize: 256)
    }

    @Test func aKilledRunKeepsItsCompleteShardsAndRedoesOnlyTheOpenOne() async throws {
        // Given the table's rows past the first shard held at the server until the test says, with a disk cache shared
        // by the runs. (This test once raced the process instead — the images slowed to 45 ms, the kill sent when the
        // first stats file was seen — and on a busy machine the process finished every shard before the kill landed.
        // Held, the first run cannot go past shard 0, however fast or slow the machine.)
        let gate = Gate()
        let server = try serve(holding: 256..., at: gate)
        defer { server.stop() }
        defer { gate.open() }
        let work = TemporaryFolder()
        let table = work.file("table.csv")
        try csv(server).write(to: table, atomically: true, encoding: .utf8)
        let out = work.file("out")
        let arguments = [
            "urls", table.path, "--out", out.path, "--format", "webdataset", "--shard-size", "256",
            "--resize", "center-crop", "--size", "64", "--keep-cols", "source,score", "--quiet", "--concurrency", "8", "--cache",
        ]
        let environment = ["XDG_CACHE_HOME": work.file("cache").path]

        // When it is SIGKILLed once the first shard is complete: its rows are all served, the next shard's wait at the
        // gate, so its stats file must appear, and nothing after it can (the wait is for a state that stays, not a race)
        let running = try MirrorBinary.start(arguments, environment: environment)
        #expect(await gate.waitForArrivals(1), "no row past the first shard was asked for")
        let firstStats = out.appendingPathComponent("00000_stats.json").path
        let written = await eventually(within: .seconds(300)) { FileManager.default.fileExists(atPath: firstStats) }
        #expect(written && running.process.isRunning, "the first shard was not written, or the run ended while held")
        kill(running.process.processIdentifier, SIGKILL)
        _ = await running.finish()
        let complete = try Self.stats(out).map { $0["shard"] as! Int }
        #expect(complete == [0], "complete after the kill: \(complete)")
        var before: [String: (Data, Date)] = [:]
        for index in complete {
            for suffix in [".tar", ".jsonl", "_stats.json"] {
                let file = out.appendingPathComponent(String(format: "%05d", index) + suffix)
                let date = try FileManager.default.attributesOfItem(atPath: file.path)[.modificationDate] as! Date
                before[file.lastPathComponent] = (try Data(contentsOf: file), date)
            }
        }

        // And run again to the end, nothing held
        gate.open()
        server.resetCounters()
        let again = try await MirrorBinary.run(arguments, environment: environment)
        #expect(again.status == 3, "stderr: \(again.stderr.suffix(500))")

        // Then the complete shards are untouched (bytes and modification time), none of their rows was fetched again,
        // and the whole table is there exactly once
        for (name, (data, date)) in before {
            let file = out.appendingPathComponent(name)
            #expect(try Data(contentsOf: file) == data, "\(name) changed")
            #expect(try FileManager.default.attributesOfItem(atPath: file.path)[.modificationDate] as? Date == date, "\(name) rewritten")
        }
        let refetched = server.requests.compactMap { request -> Int? in
            guard request.path.hasPrefix("/i/") else { return nil }
            return Int(request.path.dropFirst(3).dropLast(4))
        }
        #expect(refetched.allSatisfy { !complete.contains($0 / 256) })
        try checkShards(out, shardSize: 256)
    }
}

/// Opt-out headers and robots.txt, end to end.
@Suite("mirror urls, opt-out and robots.txt", .serialized)
struct ConsentCommandTests {
    @Test func xRobotsTagOptsImagesOutForAllAgentsOrForMirror() async throws {
        // Given images served with various X-Robots-Tag headers
        let server = try TestServer.start()
        defer { server.stop() }
        let cases: [(path: String, tag: String?, optedOut: Bool)] = [
            ("/plain.png", nil, false),
            ("/noai.png", "noai", true),
            ("/both.png", "noindex, nofollow", true),
            ("/other-agent.png", "googlebot: noimageai", false),
            ("/for-mirror.png", "mirror: noimageai", true),
            ("/unavailable.png", "unavailable_after: 25 Jun 2010 15:00:00 PST", false),
        ]
        for (index, item) in cases.enumerated() {
            let png = TestImages.png(width: 10 + index, height: 10, seed: UInt64(index))
            let headers = [("Content-Type", "image/png")] + (item.tag.map { [("X-Robots-Tag", $0)] } ?? [])
            server.route(item.path, Response(headers: headers, body: .bytes(png)))
        }
        let list = cases.map { server.url($0.path).absoluteString }.joined(separator: "\n") + "\n"

        // When the list runs
        let out = TemporaryFolder()
        let run = try await MirrorBinary.run(["urls", "-", "--out", out.path, "--json"], stdin: list)

        // Then exactly the opted-out images are skipped, counted, and said so; the exit code is 0
        #expect(run.status == 0, "stderr: \(run.stderr)")
        let summary = try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any]
        #expect(summary?["optedOut"] as? Int == cases.filter(\.optedOut).count)
        #expect(Set(out.visibleFiles) == Set(cases.filter { !$0.optedOut }.map { String($0.path.dropFirst()) } + ["manifest.jsonl"]))
        #expect(run.stderr.contains("X-Robots-Tag: noai"))

        // And --opt-out-tokens narrows the directives, --ignore-opt-out x-robots-tag takes them all, says so once, and
        // lists in each record the reservation it set aside
        let narrow = TemporaryFolder()
        let onlyNoAI = try await MirrorBinary.run(["urls", "-", "--out", narrow.path, "--json", "--opt-out-tokens", "noai"], stdin: list)
        #expect((try JSONSerialization.jsonObject(with: Data(onlyNoAI.stdout.utf8)) as? [String: Any])?["optedOut"] as? Int == 1)
        let all = TemporaryFolder()
        let ignoring = try await MirrorBinary.run(["urls", "-", "--out", all.path, "--json", "--ignore-opt-out", "x-robots-tag"], stdin: list)
        #expect(ignoring.status == 0)
        #expect(all.visibleFiles.count == cases.count + 1)
        #expect(ignoring.stderr.components(separatedBy: "warning: --ignore-opt-out x-robots-tag").count == 2)
        let records = try String(contentsOf: all.url.appendingPathComponent("manifest.jsonl"), encoding: .utf8).split(separator: "\n")
            .compactMap { try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        #expect(records.first { $0["file_name"] as? String == "noai.png" }?["opt_outs_ignored"] as? [String] == ["x-robots-tag noai (X-Robots-Tag header)"])
        #expect(records.first { $0["file_name"] as? String == "plain.png" }?["opt_outs_ignored"] is NSNull)
        // And a bare --ignore-opt-out names what it takes
        let bare = try await MirrorBinary.run(["urls", "-", "--out", all.path, "--ignore-opt-out"], stdin: list)
        #expect(bare.status == 64 && bare.stderr.contains("--ignore-opt-out"))
    }

    @Test func robotsTxtIsHonouredPerHostFetchedOnce() async throws {
        // Given a host whose robots.txt shuts out every agent but gives mirror its own, narrower group
        let host = try TestServer.start()
        defer { host.stop() }
        host.route("/robots.txt", .ok(Data("""
            User-agent: *
            Disallow: /

            User-agent: mirror
            Disallow: /private/
            Allow: /private/ok
            """.utf8), contentType: "text/plain"))
        let paths = ["/public/a.png", "/private/b.png", "/private/ok.png", "/c.png"]
        for (index, path) in paths.enumerated() {
            host.route(path, .ok(TestImages.png(width: 12 + index, height: 12, seed: UInt64(index)), contentType: "image/png"))
        }
        // And a host whose robots.txt answers 503 (RFC 9309: assume complete disallow, for now)
        let down = try TestServer.start()
        defer { down.stop() }
        down.route("/robots.txt", .status(503))
        down.route("/d.png", .ok(TestImages.png(width: 20, height: 20, seed: 9), contentType: "image/png"))
        let list = (paths.map { host.url($0).absoluteString } + [down.url("/d.png").absoluteString]).joined(separator: "\n") + "\n"

        // When the list runs
        let out = TemporaryFolder()
        let run = try await MirrorBinary.run(["urls", "-", "--out", out.path, "--json"], stdin: list)

        // Then the disallowed URLs are never requested and are counted, and each robots.txt was fetched once; the host
        // whose file could not be had is not fetched either, and its row is transient (exit 5), for a later run
        #expect(run.status == 5, "stderr: \(run.stderr)")
        let summary = try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any]
        #expect(summary?["disallowed"] as? Int == 1)
        #expect((summary?["failures"] as? [String: Int])?["robots-unavailable"] == 1, "\(run.stdout)")
        #expect(Set(out.visibleFiles) == ["a.png", "ok.png", "c.png", "manifest.jsonl"])
        #expect(host.requests.filter { $0.path == "/robots.txt" }.count == 1)
        #expect(!host.requests.contains { $0.path == "/private/b.png" })
        #expect(down.requests.map(\.path) == ["/robots.txt"])
        #expect(run.stderr.contains("robots.txt disallows /private/b.png"))
        #expect(run.stderr.contains("robots.txt could not be had (HTTP 503)"))

        // And --ignore-robots fetches them all
        let all = TemporaryFolder()
        let ignoring = try await MirrorBinary.run(["urls", "-", "--out", all.path, "--ignore-robots"], stdin: list)
        #expect(ignoring.status == 0)
        #expect(all.visibleFiles.count == paths.count + 2)
    }
}

/// `--queries`: one labelled subfolder per query, one manifest, one exit status.
@Suite("mirror --queries, end to end", .serialized)
struct QueriesCommandTests: EmulatedSearch {
    @Test func threeQueriesFillThreeLabelledFoldersWithOneManifest() async throws {
        // Given three queries, two of which the emulator answers with the same images ("src:2" is dropped from the
        // query it searches), and one comment line
        let api = try emulator()
        defer { api.stop() }
        let work = TemporaryFolder()
        let queries = work.file("queries.txt")
        try "kittens\n# a comment\nkittens src:2\npuppies\n".write(to: queries, atomically: true, encoding: .utf8)
        let out = work.file("out")

        // When mirror fills 12 of each
        let run = try await MirrorBinary.run(
            ["--queries", queries.path, "--count", "12", "--out", out.path, "--provider", "openverse", "--json"],
            environment: environment(api)
        )

        // Then each query has its folder of exactly 12, the manifest lists all 36 with the query as label, and the
        // images found by both kitten queries are kept in both and counted as cross-label duplicates
        #expect(run.status == 0, "stderr: \(run.stderr)")
        let folders = ["kittens": "kittens", "kittens-src-2": "kittens src:2", "puppies": "puppies"]
        for folder in folders.keys {
            let files = try FileManager.default.contentsOfDirectory(atPath: out.appendingPathComponent(folder).path)
            #expect(files.count == 12, "\(folder): \(files)")
        }
        let manifest = try String(contentsOf: out.appendingPathComponent("manifest.jsonl"), encoding: .utf8).split(separator: "\n")
        #expect(manifest.count == 36)
        var labels: [String: Int] = [:]
        for line in manifest {
            let record = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            let file = try #require(record["file_name"] as? String)
            let label = try #require(record["label"] as? String)
            #expect(folders[String(file.split(separator: "/").first ?? "")] == label, "\(file) labelled \(label)")
            #expect(FileManager.default.fileExists(atPath: out.appendingPathComponent(file).path))
            labels[label, default: 0] += 1
        }
        #expect(labels == ["kittens": 12, "kittens src:2": 12, "puppies": 12])
        let summary = try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any]
        #expect(summary?["saved"] as? Int == 36)
        #expect(summary?["crossLabelDuplicates"] as? Int == 12)

        // And a rerun with a higher count tops each folder up, fetching only the difference
        let again = try await MirrorBinary.run(
            ["--queries", queries.path, "--count", "14", "--out", out.path, "--provider", "openverse", "--json"],
            environment: environment(api)
        )
        #expect(again.status == 0, "stderr: \(again.stderr)")
        let second = try JSONSerialization.jsonObject(with: Data(again.stdout.utf8)) as? [String: Any]
        #expect(second?["saved"] as? Int == 6)
        #expect(second?["total"] as? Int == 42)
    }

    @Test func twoCopiesShareTheQueriesOneByOne() async throws {
        let api = try emulator()
        defer { api.stop() }
        let work = TemporaryFolder()
        let queries = work.file("queries.txt")
        try "kittens\npuppies\nfoxes\n".write(to: queries, atomically: true, encoding: .utf8)
        let out = work.file("out")

        // Given the two copies of an Indexed Job (completions 2)
        var folders: [Set<String>] = []
        for index in 0..<2 {
            let run = try await MirrorBinary.run(
                ["--queries", queries.path, "--count", "5", "--out", out.path, "--provider", "openverse", "--shards", "2"],
                environment: environment(api).merging(["JOB_COMPLETION_INDEX": "\(index)"]) { $1 }
            )
            #expect(run.status == 0, "stderr: \(run.stderr)")
            #expect(run.stderr.contains("mirror: shard \(index)/2 (from JOB_COMPLETION_INDEX=\(index) of 2): \(2 - index) of 3 queries"))
            let mine = out.appendingPathComponent("shard-\(index)-of-2")
            folders.append(Set(try FileManager.default.contentsOfDirectory(atPath: mine.path).filter { !$0.hasPrefix(".") && !$0.hasSuffix(".jsonl") }))
        }

        // Then copy 0 took queries 0 and 2, copy 1 query 1, each into its own folder with its own manifest
        #expect(folders == [["kittens", "foxes"], ["puppies"]])
        let refused = try await MirrorBinary.run(["kittens", "--count", "5", "--out", out.path, "--shard", "0/2"], environment: environment(api))
        #expect(refused.status == 64 && refused.stderr.contains("--shard shares the queries of --queries FILE"))
    }

    @Test func uniqueAcrossQueriesKeepsAnImageOnlyInTheFirstFolder() async throws {
        let api = try emulator()
        defer { api.stop() }
        let work = TemporaryFolder()
        let queries = work.file("queries.txt")
        try "kittens\nkittens src:2\n".write(to: queries, atomically: true, encoding: .utf8)
        let out = work.file("out")
        let run = try await MirrorBinary.run(
            ["--queries", queries.path, "--count", "10", "--out", out.path, "--provider", "openverse", "--unique-across-queries", "--json"],
            environment: environment(api)
        )
        #expect(run.status == 0, "stderr: \(run.stderr)")
        // Both folders hold 10, and no bytes are in both
        let records = try String(contentsOf: out.appendingPathComponent("manifest.jsonl"), encoding: .utf8).split(separator: "\n").map {
            try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
        }
        #expect(records.count == 20)
        #expect(Set(records.compactMap { $0["sha256"] as? String }).count == 20)
        let summary = try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any]
        #expect(summary?["crossLabelDuplicates"] as? Int == 0)
    }

    @Test func queriesThatWouldShareAFolderAreAUsageError() async throws {
        let work = TemporaryFolder()
        let queries = work.file("queries.txt")
        try "red car\nred-car\n".write(to: queries, atomically: true, encoding: .utf8)
        let run = try await MirrorBinary.run(["--queries", queries.path, "--count", "3", "--out", work.file("out").path])
        #expect(run.status == 64)
        #expect(run.stderr.contains("would share the folder red-car"))
    }
}
