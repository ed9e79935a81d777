import Foundation
import MirrorTestSupport
import Testing

/// Messages that say what happened: long values cut, a symbolic link called one, usage errors exiting 64.
@Suite("Messages say what happened, end to end", .serialized)
struct MessageTests: EmulatedSearch {
    // MARK: Long values

    @Test("a URL of 60 KB or 5 MB in a table leaves stderr short", arguments: [60_000, 5_000_000])
    func aLongURLIsCutOnStderr(length: Int) async throws {
        // Given a table of a good image and a URL of `length` bytes that the server does not have
        let server = try TestServer.start()
        defer { server.stop() }
        server.route("/good.png", .ok(TestImages.png(width: 12, height: 12, seed: 1), contentType: "image/png"))
        let base = server.url("/long/").absoluteString
        let long = base + String(repeating: "a", count: length - base.utf8.count)
        let work = TemporaryFolder()
        let table = work.file("table.txt")
        try (server.url("/good.png").absoluteString + "\n" + long + "\n").write(to: table, atomically: true, encoding: .utf8)

        // When mirror urls runs, printing a line for each event
        let run = try await MirrorBinary.run(["urls", table.path, "--out", work.file("out").path, "--retries", "0"])

        // Then the good image is saved, the long row is reported, and stderr stays a few lines long: wherever the URL
        // is quoted it is cut, with its length
        #expect(run.status == 3 || run.status == 5, "stderr: \(run.stderr.prefix(2_000))")
        #expect(run.stderr.contains("1 saved"), "\(run.stderr.prefix(2_000))")
        #expect(run.stderr.utf8.count < 4_000, "stderr is \(run.stderr.utf8.count) bytes: \(run.stderr.prefix(600))")
        let grouped = [60_000: "60,000", 5_000_000: "5,000,000"][length]!
        if run.stderr.contains(base + "aaaa") {
            #expect(run.stderr.contains("a… (\(grouped) bytes)"), "\(run.stderr.prefix(2_000))")
        }
    }

    // MARK: A symbolic link as --out

    @Test("a symbolic link named as --out is followed to its folder", arguments: ["folder", "webdataset"])
    func aSymlinkedOutIsFollowed(format: String) async throws {
        // Given a folder, a symbolic link to it, and a table of 3 images
        let server = try TestServer.start()
        defer { server.stop() }
        let work = TemporaryFolder()
        var lines: [String] = []
        for index in 0..<3 {
            server.route("/i/\(index).png", .ok(TestImages.png(width: 10 + index, height: 10, seed: UInt64(index)), contentType: "image/png"))
            lines.append(server.url("/i/\(index).png").absoluteString)
        }
        try (lines.joined(separator: "\n") + "\n").write(to: work.file("table.txt"), atomically: true, encoding: .utf8)
        let real = work.file("real")
        try FileManager.default.createDirectory(at: real, withIntermediateDirectories: true)
        let link = work.file("link")
        try FileManager.default.createSymbolicLink(atPath: link.path, withDestinationPath: real.path)
        let arguments = ["urls", work.file("table.txt").path, "--out", link.path, "--format", format, "--shard-size", "10"]

        // When mirror urls writes to the link, twice
        let run = try await MirrorBinary.run(arguments)
        let again = try await MirrorBinary.run(arguments)

        // Then the images are in the folder it names, the link is still a link, and the second run finds them there
        #expect(run.status == 0, "stderr: \(run.stderr)")
        #expect(again.status == 0 && again.stderr.contains("0 saved, 3 already there"), "stderr: \(again.stderr)")
        let names = try FileManager.default.contentsOfDirectory(atPath: real.path)
        #expect(names.contains(format == "folder" ? "manifest.jsonl" : "00000_stats.json") && names.contains(".mirror"), "\(names)")
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: link.path) == real.path)
    }

    @Test func aSymlinkedOutIsFollowedBySearchesToo() async throws {
        // Given the API emulator and --out a link to a folder
        let api = try emulator()
        defer { api.stop() }
        let work = TemporaryFolder()
        let real = work.file("real")
        try FileManager.default.createDirectory(at: real, withIntermediateDirectories: true)
        let link = work.file("link")
        try FileManager.default.createSymbolicLink(atPath: link.path, withDestinationPath: real.path)

        // When a search fills it
        let run = try await MirrorBinary.run(["kittens", "--count", "3", "--out", link.path, "--provider", "openverse", "--no-cache", "--quiet"], environment: environment(api))

        // Then the folder holds the three images and the manifest
        #expect(run.status == 0, "stderr: \(run.stderr)")
        let images = try FileManager.default.contentsOfDirectory(atPath: real.path).filter { $0.hasSuffix(".png") }
        #expect(images.count == 3)
    }

    @Test func aSymlinkedOutThatLeadsToNoFolderSaysWhatItIs() async throws {
        // Given links as --out: to nothing, and to a file
        let work = TemporaryFolder()
        try Data("x".utf8).write(to: work.file("a-file"))
        try "http://127.0.0.1:1/a.png\n".write(to: work.file("table.txt"), atomically: true, encoding: .utf8)
        let dangling = work.file("dangling"), toFile = work.file("to-file")
        try FileManager.default.createSymbolicLink(atPath: dangling.path, withDestinationPath: work.file("gone").path)
        try FileManager.default.createSymbolicLink(atPath: toFile.path, withDestinationPath: work.file("a-file").path)

        for (link, what) in [(dangling, "\(work.file("gone").path), which does not exist; make that folder, or give another"),
                             (toFile, "\(work.file("a-file").path), which is not a folder")] {
            // When mirror urls and a search are given it
            let urls = try await MirrorBinary.run(["urls", work.file("table.txt").path, "--out", link.path])
            let search = try await MirrorBinary.run(["kittens", "--count", "3", "--out", link.path, "--endpoint", "http://127.0.0.1:1/", "--provider", "openverse"])

            // Then each says the link is one and where it leads, in one line, and exits 1, creating nothing
            let line = "mirror: error: could not use as the output folder \(link.path): it is a symbolic link to \(what)\n"
            #expect(urls.status == 1 && urls.stderr == line, "\(urls.stderr)")
            #expect(search.status == 1 && search.stderr == line, "\(search.stderr)")
        }
        #expect(work.fileNames == ["a-file", "dangling", "table.txt", "to-file"])
    }

    @Test func aStateFolderOfShardsThatIsASymlinkIsRefused() async throws {
        // Given a shards folder whose .mirror is a symbolic link to a folder outside
        let work = TemporaryFolder()
        let outside = TemporaryFolder()
        let out = work.file("out")
        try FileManager.default.createDirectory(at: out, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: out.appendingPathComponent(".mirror").path, withDestinationPath: outside.path)
        try "http://127.0.0.1:1/a.png\n".write(to: work.file("table.txt"), atomically: true, encoding: .utf8)

        // When mirror urls writes shards there
        let run = try await MirrorBinary.run(["urls", work.file("table.txt").path, "--out", out.path, "--format", "webdataset"])

        // Then it refuses the link, saying it is one, and writes nothing through it
        #expect(run.status == 1, "stderr: \(run.stderr)")
        #expect(run.stderr == "mirror: error: could not use as a folder \(out.appendingPathComponent(".mirror").path): \(HostileInputTests.linkRefused)\n")
        #expect(outside.fileNames.isEmpty)
    }

    // MARK: Usage

    @Test("a name template without a part that differs per image is a usage error", arguments: ["{title}", "{title}.{ext}", "{provider}-{title}"])
    func aNameTemplateWithoutAnIdIsAUsageError(template: String) async throws {
        // When a search is given it
        let run = try await MirrorBinary.run(["kittens", "--count", "3", "--out", "/tmp/mirror-never-made", "--name", template])

        // Then it exits 64 saying what is needed, before anything is made
        let stem = template.replacingOccurrences(of: ".{ext}", with: "")
        #expect(run.status == 64, "\(run.stderr)")
        #expect(run.stderr.contains("--name '\(template)' would give two images one name: add {id}, {index} or {sha8}, which differ per image (e.g. --name '\(stem)-{id}.{ext}')"), "\(run.stderr)")
        #expect(!FileManager.default.fileExists(atPath: "/tmp/mirror-never-made"))
    }
}
