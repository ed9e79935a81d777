import Foundation
import MirrorTestSupport
import Testing

/// No image ends the run, end to end: `mirror urls` over a table of crafted files beside ordinary ones, written as
/// WebDataset shards with a resize and without, and a decoder that crashes inside a decode.
@Suite("Poison images, end to end", .serialized)
struct PoisonImageTests {
    /// A server of the crafted files at /h/NAME and the ordinary ones at /o/NAME, and the table listing them all.
    private func serve(_ crafted: [HostileImages.Sample]) throws -> (TestServer, String) {
        let server = try TestServer.start()
        var lines: [String] = []
        for (index, file) in HostileImages.ordinary().enumerated() {
            server.route("/o/\(file.name)", .ok(file.data, contentType: file.contentType))
            lines.append(server.url("/o/\(file.name)").absoluteString)
            if index < crafted.count {
                server.route("/h/\(crafted[index].name)", .ok(crafted[index].data, contentType: crafted[index].contentType))
                lines.append(server.url("/h/\(crafted[index].name)").absoluteString)
            }
        }
        for sample in crafted.dropFirst(HostileImages.ordinary().count) {
            server.route("/h/\(sample.name)", .ok(sample.data, contentType: sample.contentType))
            lines.append(server.url("/h/\(sample.name)").absoluteString)
        }
        return (server, lines.joined(separator: "\n") + "\n")
    }

    /// Runs `mirror` and watches its peak resident memory (VmHWM) while it runs.
    private func run(_ arguments: [String], environment: [String: String] = [:]) async throws -> (run: MirrorBinary.Run, signalled: Bool, peakMB: Int) {
        let running = try MirrorBinary.start(arguments, environment: environment)
        let process = running.process
        let peak = await onDispatchThread { () -> Int in
            var peak = 0
            let status = "/proc/\(process.processIdentifier)/status"
            while process.isRunning {
                if let text = try? String(contentsOfFile: status, encoding: .utf8),
                   let line = text.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
                   let kilobytes = Int(line.split(separator: " ").dropFirst().first ?? "") {
                    peak = max(peak, kilobytes / 1024)
                }
                usleep(5_000)
            }
            return peak
        }
        let result = await running.finish()
        return (result, process.terminationReason == .uncaughtSignal, peak)
    }

    /// Every shard record line of `out`, by URL.
    private static func records(_ out: URL) throws -> [String: [String: Any]] {
        var records: [String: [String: Any]] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: out.path) where name.hasSuffix(".jsonl") && name.first?.isNumber == true {
            let text = try String(contentsOf: out.appendingPathComponent(name), encoding: .utf8)
            for line in text.split(separator: "\n") {
                guard let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], let url = object["url"] as? String else { continue }
                records[url] = object
            }
        }
        return records
    }

    /// The modes a dataset run has: two resizes, and none (JPEGs stored as served, other formats re-encoded).
    static let modes: [(name: String, arguments: [String])] = [
        ("center-crop", ["--resize", "center-crop", "--size", "224"]),
        ("keep-ratio", ["--resize", "keep-ratio", "--size", "256"]),
        ("no resize", []),
    ]

    @Test(.timeLimit(.minutes(10)), arguments: 0..<3)
    func craftedImagesCostTheirRowNeverTheRun(mode: Int) async throws {
        // Given a table of crafted files, each beside an ordinary one, on a server
        let crafted = HostileImages.samples()
        let (server, table) = try serve(crafted)
        defer { server.stop() }
        let work = TemporaryFolder()
        let tableFile = work.file("table.txt")
        try table.write(to: tableFile, atomically: true, encoding: .utf8)
        let out = work.url.appendingPathComponent("shards")
        let (name, options) = Self.modes[mode]

        // When mirror writes them as WebDataset shards at its default concurrency, twice (the second run resumes)
        for attempt in 1...2 {
            let (run, signalled, peakMB) = try await run(["urls", tableFile.path, "--out", out.path, "--format", "webdataset", "--quiet"] + options)

            // Then the process ends by itself, with a documented code, within 1 GB whatever the files claim
            #expect(!signalled && [0, 3, 5].contains(run.status), "\(name) run \(attempt): exit \(run.status), stderr: \(run.stderr)")
            #expect(peakMB <= 1_024, "\(name) run \(attempt): peak RSS \(peakMB) MB")
        }

        // And every ordinary image is saved, and every crafted row failed with its reason or saved as Pillow shows it
        let records = try Self.records(out)
        for file in HostileImages.ordinary() {
            #expect(records[server.url("/o/\(file.name)").absoluteString]?["status"] as? String == "success", "\(name): \(file.name)")
        }
        let tars = try FileManager.default.contentsOfDirectory(atPath: out.path).filter { $0.hasSuffix(".tar") }
        let extracted = work.url.appendingPathComponent("extracted")
        try FileManager.default.createDirectory(at: extracted, withIntermediateDirectories: true)
        for tar in tars { try runTool("/bin/tar", ["-xf", out.appendingPathComponent(tar).path, "-C", extracted.path]) }
        for sample in crafted {
            let record = try #require(records[server.url("/h/\(sample.name)").absoluteString], "\(name): no record of \(sample.name)")
            let expected = options.isEmpty ? sample.whenNotResized : sample.whenResized
            if let expected {
                #expect(record["status"] as? String == "failed" && record["reason"] as? String == expected,
                        "\(name) \(sample.name): \(record["status"] ?? "") \(record["reason"] ?? ""), expected \(expected)")
            } else {
                #expect(record["status"] as? String == "success", "\(name) \(sample.name): \(record["status"] ?? "") \(record["reason"] ?? "") \(record["error"] ?? "")")
                if let grey = sample.meanGrey, let key = record["key"] as? String {
                    let image = try Data(contentsOf: extracted.appendingPathComponent("\(key).jpg"))
                    let mean = try #require(HostileImages.meanGrey(ofJPEG: image))
                    #expect(abs(mean - grey) < 4, "\(name) \(sample.name): mean grey \(mean), Pillow shows \(grey)")
                }
            }
        }
    }

    @Test(.timeLimit(.minutes(5)), arguments: ["webdataset", "folder"])
    func aDecoderThatCrashesCostsItsRowOnce(format: String) async throws {
        // Given a table whose third image crashes the decoder (a hook for tests: its decoding thread dies of SIGSEGV
        // while the image is marked as being decoded), and other images decoded beside it
        let server = try TestServer.start()
        defer { server.stop() }
        var lines: [String] = []
        for (index, file) in HostileImages.ordinary().enumerated() {
            let name = index == 2 ? "poison-\(file.name)" : file.name
            server.route("/o/\(name)", .ok(file.data, contentType: file.contentType))
            lines.append(server.url("/o/\(name)").absoluteString)
        }
        let work = TemporaryFolder()
        let out = work.url.appendingPathComponent("out")
        let arguments = ["urls", "-", "--out", out.path, "--format", format, "--resize", "keep-ratio", "--size", "32", "--json"]
        let environment = ["MIRROR_TEST_CRASH_DECODING": "/poison-"]  // the Swift runtime's backtracer on, as users have it
        let table = lines.joined(separator: "\n") + "\n"

        // When mirror runs, dies, and runs again
        let first = try await MirrorBinary.start(arguments, stdin: table, environment: environment).finish()
        let second = try await MirrorBinary.start(arguments, stdin: table, environment: environment).finish()

        // Then the first run died in the decode; the second files that row as a decoder crash, without decoding it,
        // saves the rest and ends with 3 (a row is missing), as every later run does
        #expect(![0, 3, 5].contains(first.status), "the first run should have crashed: \(first.status)")
        #expect(second.status == 3, "stderr: \(second.stderr)")
        let summary = try #require(try JSONSerialization.jsonObject(with: Data(second.stdout.utf8)) as? [String: Any])
        #expect((summary["failures"] as? [String: Any])?["decoder-crash"] as? Int == 1, "\(second.stdout)")
        let crashes = try String(contentsOf: out.appendingPathComponent(".mirror/decoder-crashes"), encoding: .utf8)
        #expect(crashes.contains("culprit\t") && crashes.contains("/poison-"))
        let third = try await MirrorBinary.start(arguments, stdin: table, environment: environment).finish()
        #expect(third.status == 3, "stderr: \(third.stderr)")
    }
}
