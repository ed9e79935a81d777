import Foundation
import MirrorTestSupport
import Testing

/// Folders the Hugging Face Hub takes, end to end: `--layout` (numbered subfolders), `--split`, `metadata.jsonl` as a
/// real copy of the manifest, a rerun that fetches nothing and a run killed with SIGKILL finished by the next.
/// (The switch at 9,000 images and subfolders of 1,000 are run for real by scripts/check/check_datasets.py: 12,500 rows.)
@Suite("Folder layout and splits, end to end", .serialized)
struct FolderLayoutCommandTests: EmulatedSearch {
    /// A server with `count` PNGs at /p/<i>.png, and their URLs.
    private func serve(_ count: Int) throws -> (TestServer, [String]) {
        let server = try TestServer.start()
        var urls: [String] = []
        for index in 0..<count {
            server.route("/p/\(index).png", .ok(TestImages.png(width: 10 + index, height: 10, seed: UInt64(index)), contentType: "image/png"))
            urls.append(server.url("/p/\(index).png").absoluteString)
        }
        return (server, urls)
    }

    private func records(_ folder: URL) -> [[String: Any]] {
        let text = (try? String(contentsOf: folder.appendingPathComponent("manifest.jsonl"), encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
    }

    private func names(_ folder: URL) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []).sorted()
    }

    /// metadata.jsonl is a regular file holding the manifest's bytes.
    private func expectMetadataIsTheManifest(_ folder: URL, sourceLocation: SourceLocation = #_sourceLocation) {
        var info = stat()
        let metadata = folder.appendingPathComponent("metadata.jsonl")
        #expect(lstat(metadata.path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFREG, "metadata.jsonl is no regular file", sourceLocation: sourceLocation)
        #expect(FileManager.default.contents(atPath: metadata.path) == FileManager.default.contents(atPath: folder.appendingPathComponent("manifest.jsonl").path),
                sourceLocation: sourceLocation)
    }

    private func imagePaths(of server: TestServer) -> [String] {
        server.requests.map(\.path).filter { $0.hasPrefix("/p/") }
    }

    @Test func aTableInSubfoldersHasItsPathsInTheManifestAndARerunFetchesNothing() async throws {
        // Given 20 images listed in a file
        let (server, urls) = try serve(20)
        defer { server.stop() }
        let work = TemporaryFolder()
        try (urls.joined(separator: "\n") + "\n").write(to: work.file("list.txt"), atomically: true, encoding: .utf8)
        let out = work.url.appendingPathComponent("out")

        // When mirror urls runs with --layout subfolders
        let first = try await MirrorBinary.run(["urls", work.file("list.txt").path, "--out", out.path, "--layout", "subfolders", "--quiet"])

        // Then every image is in 00000/, named by its path in the manifest, and metadata.jsonl is the manifest's copy
        #expect(first.status == 0, "stderr: \(first.stderr)")
        #expect(names(out) == [".mirror", "00000", "manifest.jsonl", "metadata.jsonl"])
        let files = records(out).compactMap { $0["file_name"] as? String }
        #expect(files.sorted() == (0..<20).map { "00000/\($0).png" }.sorted())
        #expect(names(out.appendingPathComponent("00000")) == (0..<20).map { "\($0).png" }.sorted())
        expectMetadataIsTheManifest(out)

        // When it runs again, with the default layout
        server.resetCounters()
        let again = try await MirrorBinary.run(["urls", work.file("list.txt").path, "--out", out.path, "--json", "--quiet"])

        // Then nothing is requested, and mirror status counts the folder
        #expect(again.status == 0, "stderr: \(again.stderr)")
        #expect(server.totalRequests == 0)
        let status = try await MirrorBinary.run(["status", out.path, "--json"])
        let counts = try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any]
        #expect(status.status == 0 && counts?["saved"] as? Int == 20, "\(status.stdout) \(status.stderr)")
        // and mirror gallery finds the images in their subfolder
        let gallery = try await MirrorBinary.run(["gallery", out.path])
        let attribution = (try? String(contentsOf: out.appendingPathComponent("ATTRIBUTION.md"), encoding: .utf8)) ?? ""
        #expect(gallery.status == 0 && attribution.contains("`00000/19.png`"), "\(gallery.stderr) \(attribution.prefix(400))")
    }

    @Test func aSplitGoesIntoItsOwnFolder() async throws {
        // Given a table of 6 images
        let (server, urls) = try serve(6)
        defer { server.stop() }
        let work = TemporaryFolder()
        let out = work.url.appendingPathComponent("ds")

        // When its first four rows go to the train split and the rest to test
        let train = try await MirrorBinary.run(["urls", "-", "--out", out.path, "--split", "train", "--quiet"], stdin: urls.prefix(4).joined(separator: "\n"))
        let test = try await MirrorBinary.run(["urls", "-", "--out", out.path + "/", "--split", "test", "--quiet"], stdin: urls.suffix(2).joined(separator: "\n"))

        // Then OUT holds the two splits' folders, each a folder of its own with its copy of its manifest
        #expect(train.status == 0 && test.status == 0, "\(train.stderr) \(test.stderr)")
        #expect(names(out) == ["test", "train"])
        #expect(names(out.appendingPathComponent("train")) == [".mirror", "0.png", "1.png", "2.png", "3.png", "manifest.jsonl", "metadata.jsonl"])
        #expect(records(out.appendingPathComponent("test")).compactMap { $0["file_name"] as? String }.sorted() == ["4.png", "5.png"])
        expectMetadataIsTheManifest(out.appendingPathComponent("train"))
        expectMetadataIsTheManifest(out.appendingPathComponent("test"))

        // and mirror status OUT sums the splits, naming each
        let status = try await MirrorBinary.run(["status", out.path])
        #expect(status.status == 0 && status.stdout.contains("train       4 saved") && status.stdout.contains("test        2 saved")
                && status.stdout.contains("saved       6"), "\(status.stdout) \(status.stderr)")
        // and the gallery of OUT shows both splits' images
        let gallery = try await MirrorBinary.run(["gallery", out.path])
        #expect(gallery.status == 0, "stderr: \(gallery.stderr)")
        let attribution = (try? String(contentsOf: out.appendingPathComponent("ATTRIBUTION.md"), encoding: .utf8)) ?? ""
        #expect(["train/0.png", "train/3.png", "test/5.png"].allSatisfy(attribution.contains), "\(attribution.prefix(600))")
    }

    @Test func aSearchFillsItsSplitInSubfolders() async throws {
        let api = try emulator()
        defer { api.stop() }
        let out = TemporaryFolder()
        let arguments = ["kittens", "--count", "12", "--out", out.path, "--split", "validation", "--layout", "subfolders", "--no-cache", "--quiet"]

        let run = try await MirrorBinary.run(arguments, environment: environment(api))

        #expect(run.status == 0, "stderr: \(run.stderr)")
        #expect(out.visibleFiles == ["validation"])
        let split = out.url.appendingPathComponent("validation")
        let files = records(split).compactMap { $0["file_name"] as? String }
        #expect(files.count == 12 && files.allSatisfy { $0.hasPrefix("00000/") && FileManager.default.fileExists(atPath: split.appendingPathComponent($0).path) })
        expectMetadataIsTheManifest(split)

        // A rerun makes no request
        api.resetCounters()
        let again = try await MirrorBinary.run(arguments, environment: environment(api))
        #expect(again.status == 0 && api.totalAPIRequests == 0 && api.totalImageRequests == 0)
    }

    @Test func aLayoutOrSplitNotKnownIsAUsageError() async throws {
        let out = TemporaryFolder()
        for (arguments, words) in [
            (["urls", "-", "--out", out.path, "--layout", "sideways"], "Please provide one of 'auto', 'flat' or 'subfolders'"),
            (["urls", "-", "--out", out.path, "--split", "holdout"], "Please provide one of 'train', 'validation' or 'test'"),
            (["urls", "-", "--out", out.path, "--layout", "flat", "--format", "webdataset"], "--layout is for --format folder"),
            (["kittens", "--count", "5", "--out", out.path, "--split", "dev"], "Please provide one of 'train', 'validation' or 'test'"),
        ] {
            let run = try await MirrorBinary.run(arguments, stdin: "")
            #expect(run.status == 64, "\(arguments): \(run.status) \(run.stderr)")
            #expect(run.stderr.contains(words), "\(arguments): \(run.stderr)")
        }
        #expect(out.fileNames.isEmpty)
    }

    @Test func aRunKilledWhileFillingSubfoldersIsFinishedByTheNext() async throws {
        // Given 30 rows whose first 10 answer at once and the rest are held (headers sent, no body) until released
        let (server, urls) = try serve(30)
        defer { server.stop() }
        for index in 10..<30 {
            server.route("/p/\(index).png", Response(headers: [("Content-Type", "image/png")], body: .stall(prefix: Data(), declaredLength: 1_000)))
        }
        let work = TemporaryFolder()
        try (urls.joined(separator: "\n") + "\n").write(to: work.file("list.txt"), atomically: true, encoding: .utf8)
        let out = work.url.appendingPathComponent("out")
        // (the held rows must stay held: no deadline of mirror's may end them first)
        let arguments = ["urls", work.file("list.txt").path, "--out", out.path, "--layout", "subfolders", "--no-cache", "--quiet",
                         "--timeout", "3600", "--stall-timeout", "3600"]

        // When mirror runs until the 10 are saved, and is killed with SIGKILL while the rest are held
        let running = try MirrorBinary.start(arguments)
        let savedTen = await eventually { records(out).count == 10 }
        kill(running.process.processIdentifier, SIGKILL)
        let killed = await running.finish()
        #expect(savedTen && killed.status == SIGKILL, "manifest \(records(out).count) lines, exit \(killed.status): \(killed.stderr)")
        // the rows are released, and the same command runs again — once the server has closed every connection of the
        // killed run, so that a request it sent just before dying (read late on a loaded machine) is not counted as the
        // second run's
        #expect(await eventually(within: .seconds(120)) { server.openConnections == 0 })
        for index in 10..<30 {
            server.route("/p/\(index).png", .ok(TestImages.png(width: 10 + index, height: 10, seed: UInt64(index)), contentType: "image/png"))
        }
        server.resetCounters()
        let resumed = try await MirrorBinary.run(arguments)

        // Then it finishes: all 30 in 00000/, each on one line of both files, the 10 saved not fetched again, nothing half-done
        #expect(resumed.status == 0, "stderr: \(resumed.stderr)")
        let files = records(out).compactMap { $0["file_name"] as? String }
        #expect(files.sorted() == (0..<30).map { "00000/\($0).png" }.sorted())
        #expect(names(out.appendingPathComponent("00000")).count == 30)
        expectMetadataIsTheManifest(out)
        #expect(Set(imagePaths(of: server)) == Set((10..<30).map { "/p/\($0).png" }) && imagePaths(of: server).count == 20)
        let leftovers = (names(out) + names(out.appendingPathComponent(".mirror")) + names(out.appendingPathComponent("00000"))).filter { $0.hasSuffix(".part") }
        #expect(leftovers.isEmpty, "\(leftovers)")
    }
}
