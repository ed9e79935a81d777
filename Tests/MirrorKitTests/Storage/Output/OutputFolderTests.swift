import Foundation
@testable import MirrorCore
@testable import MirrorFetch
import MirrorImages
@testable import MirrorKit
@testable import MirrorModel
@testable import MirrorSearch
@testable import MirrorStorage
import MirrorTestSupport
import Testing

@Suite("Output folder, publishing and the URL-list job", .serialized)
struct OutputFolderTests {
    private func verified(_ data: Data, in folder: URL, url: String) throws -> VerifiedImage {
        let temporary = try AtomicFile.makeTemporary(in: folder)
        _ = data.withUnsafeBytes { write(temporary.descriptor, $0.baseAddress, $0.count) }
        close(temporary.descriptor)
        let info = try ImageValidator().validate(data)
        return VerifiedImage(
            url: URL(string: url)!, effectiveURL: URL(string: url)!, temporaryFile: temporary.url, info: info,
            bytes: Int64(data.count), sha256: sha256Hex(data), source: .none, attempts: 1, fetchedAt: Date()
        )
    }

    private func commit(_ image: VerifiedImage, stem: String, to committer: ImageCommitter) async -> ImageCommitter.Outcome {
        await withCheckedContinuation { continuation in
            committer.commit(ImageCommitter.Item(
                image: image, stem: stem,
                record: { name in
                    ManifestRecord(file: name, url: image.url.absoluteString, width: image.info.width, height: image.info.height,
                                   bytes: image.bytes, sha256: image.sha256, format: image.info.format.rawValue, fetchedAt: image.fetchedAt)
                },
                completion: { continuation.resume(returning: $0) }
            ))
        }
    }

    @Test func publishesWithoutClobberingAndDropsDuplicates() async throws {
        // Given a folder that already has a file named cat.png that is not ours
        let directory = TemporaryFolder()
        try Data("someone else's".utf8).write(to: directory.url.appendingPathComponent("cat.png"))
        let folder = try OutputFolder(directory: directory.url)
        let committer = ImageCommitter(folder: folder)
        let one = TestImages.png(width: 5, height: 5, seed: 1)
        let two = TestImages.png(width: 5, height: 5, seed: 2)

        // When two different images named cat and a copy of the first arrive
        let first = await commit(try verified(one, in: directory.url, url: "http://a/cat.png"), stem: "cat", to: committer)
        let second = await commit(try verified(two, in: directory.url, url: "http://b/cat.png"), stem: "cat", to: committer)
        let copy = await commit(try verified(one, in: directory.url, url: "http://c/other.png"), stem: "other", to: committer)

        // Then the stranger's file is untouched, both images are saved under distinct names, the copy is not
        #expect(try String(contentsOf: directory.url.appendingPathComponent("cat.png"), encoding: .utf8) == "someone else's")
        guard case let .success(.saved(a, _)) = first, case let .success(.saved(b, _)) = second else {
            Issue.record("expected both saved, got \(first) and \(second)")
            return
        }
        #expect(a.file == "cat-\(sha256Hex(one).prefix(8)).png")
        #expect(b.file == "cat-\(sha256Hex(two).prefix(8)).png")
        #expect(copy == .success(.duplicate(of: a.file)))
        #expect(try Data(contentsOf: directory.url.appendingPathComponent(a.file)) == one)
        #expect(ManifestRecord.read(from: folder.manifestURL).map(\.file) == [a.file, b.file])
        #expect(directory.temporaryFiles.isEmpty)
    }

    @Test func aLargeBatchIsSyncedWithItsFileSystemAndSaved() async throws {
        // Given a folder, and the call that syncs a whole batch at once
        let directory = TemporaryFolder()
        try AtomicFile.syncFileSystem(of: directory.url)
        #expect(throws: FileError.self) { try AtomicFile.syncFileSystem(of: directory.url.appendingPathComponent("missing")) }
        let folder = try OutputFolder(directory: directory.url)
        let committer = ImageCommitter(folder: folder)

        // When more images than `fileSystemSyncBatch` arrive at once (synced, the default)
        let count = ImageCommitter.fileSystemSyncBatch * 4
        let images = try (0..<count).map { seed in
            try verified(TestImages.png(width: 4, height: 4, seed: UInt64(seed)), in: directory.url, url: "http://x/\(seed).png")
        }
        let outcomes = await withTaskGroup(of: ImageCommitter.Outcome.self) { group in
            for (index, image) in images.enumerated() {
                group.addTask { await commit(image, stem: "\(index)", to: committer) }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }

        // Then every one is saved, listed and in place, and no temporary file is left
        #expect(outcomes.allSatisfy { if case .success(.saved) = $0 { true } else { false } })
        #expect(folder.savedCount == count)
        #expect(directory.fileNames.filter { $0.hasSuffix(".png") }.count == count)
        #expect(directory.temporaryFiles.isEmpty)
    }

    @Test func neverAdmitsMoreThanTheLimit() async throws {
        let directory = TemporaryFolder()
        let folder = try OutputFolder(directory: directory.url)
        let committer = ImageCommitter(folder: folder, isSyncEnabled: false, admissionLimit: 3)
        var saved = 0
        for seed in 0..<6 {
            let image = try verified(TestImages.png(width: 3, height: 3, seed: UInt64(seed)), in: directory.url, url: "http://x/\(seed).png")
            if case .success(.saved) = await commit(image, stem: "\(seed)", to: committer) { saved += 1 }
        }
        #expect(saved == 3)
        #expect(folder.savedCount == 3)
        #expect(directory.temporaryFiles.isEmpty)
        #expect(directory.fileNames.filter { $0.hasSuffix(".png") }.count == 3)
    }

    @Test func reopeningReconcilesWhatAKillLeft() async throws {
        // Given a folder with one saved image, then the debris of a killed run:
        let directory = TemporaryFolder()
        let png = TestImages.png(width: 6, height: 6, seed: 9)
        let adopted = TestImages.png(width: 7, height: 7, seed: 10)
        do {
            let folder = try OutputFolder(directory: directory.url)
            let committer = ImageCommitter(folder: folder)
            _ = await commit(try verified(png, in: directory.url, url: "http://a/keep.png"), stem: "keep", to: committer)
        }
        // a temporary file, a published file the manifest never heard of (named in the journal),
        // a journal entry whose file never appeared, and a torn last manifest line
        try Data([1, 2, 3]).write(to: directory.url.appendingPathComponent(".mirror-abc.part"))
        try adopted.write(to: directory.url.appendingPathComponent("late.png"))
        let late = ManifestRecord(file: "late.png", url: "http://a/late.png", width: 7, height: 7, bytes: Int64(adopted.count), sha256: sha256Hex(adopted), format: "png", fetchedAt: Date())
        let ghost = ManifestRecord(file: "ghost.png", url: "http://a/ghost.png", width: 1, height: 1, bytes: 1, sha256: String(repeating: "0", count: 64), format: "png", fetchedAt: Date())
        try (late.jsonLine() + ghost.jsonLine()).write(to: directory.url.appendingPathComponent(".mirror/journal.jsonl"))
        let handle = try FileHandle(forWritingTo: directory.url.appendingPathComponent("manifest.jsonl"))
        handle.seekToEndOfFile()
        handle.write(Data(#"{"file":"half"#.utf8))
        try handle.close()

        // When the folder is opened again
        let folder = try OutputFolder(directory: directory.url)

        // Then the debris is gone, the late file adopted, and the manifest agrees with the files
        #expect(folder.reconciliation.removedTemporaryFiles == 1)
        #expect(folder.reconciliation.adoptedFiles == 1)
        #expect(folder.records.map(\.file) == ["keep.png", "late.png"])
        #expect(ManifestRecord.read(from: folder.manifestURL).map(\.file) == ["keep.png", "late.png"])
        #expect(!ManifestRecord.hasTornLine(folder.manifestURL))
        #expect(directory.temporaryFiles.isEmpty)
        #expect(folder.contains(url: URL(string: "http://a/late.png")!))
    }

    @Test func aSecondRunCannotTakeTheLock() throws {
        let directory = TemporaryFolder()
        let first = try OutputFolder(directory: directory.url)
        #expect(throws: FolderLock.Held.self) { try OutputFolder(directory: directory.url) }
        withExtendedLifetime(first) {}
    }

    @Test func aReleasedLockIsFreeWhileACopyOfItsDescriptorIsStillOpen() throws {
        // Given a folder's lock, and a copy of its descriptor — what a child this process is spawning holds between its
        // fork and its exec
        let directory = TemporaryFolder()
        let folder = try OutputFolder(directory: directory.url)
        let lockPath = directory.url.appendingPathComponent(".mirror/lock").resolvingSymlinksInPath().path
        let descriptors = try FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").compactMap(Int32.init)
        let original = try #require(descriptors.first { descriptor in
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(descriptor)")) == lockPath
        })
        let copy = dup(original)
        try #require(copy >= 0)
        defer { close(copy) }

        // When the folder lets its lock go, the copy still open
        folder.releaseLock()

        // Then another run can take it at once
        let again = try OutputFolder(directory: directory.url)
        again.releaseLock()
    }

    @Test func aFileIsNotAFolder() throws {
        let directory = TemporaryFolder()
        let file = directory.url.appendingPathComponent("plain")
        try Data().write(to: file)
        #expect(throws: FileError(operation: "use as a folder", path: file.path, code: ENOTDIR)) { try OutputFolder(directory: file) }
    }

    @Test func twoThousandImagesWithTenPercentFaults() async throws {
        // Given 2,000 URLs: 1,800 good images and 200 faults of mixed kinds
        let server = try TestServer.start(latency: .milliseconds(2))
        defer { server.stop() }
        var lines: [String] = []
        var good = Set<String>()
        for index in 0..<2000 {
            let path = "/img/\(index).png"
            let image = TestImages.png(width: 16, height: 16, seed: UInt64(index))
            switch index % 10 == 0 ? (index / 10) % 4 : -1 {
            case 0: server.route(path, .status(404))
            case 1: server.route(path, .ok(TestImages.htmlErrorPage, contentType: "image/png"))
            case 2: server.route(path, Response(status: 200, body: .truncated(image.prefix(300), declaredLength: image.count)))
            case 3: server.route(path, .status(500))
            default:
                server.route(path, .ok(image, contentType: "image/png"))
                good.insert(sha256Hex(image))
            }
            lines.append(server.url(path).absoluteString)
        }
        let directory = TemporaryFolder()
        var configuration = URLListJob.Configuration(directory: directory.url)
        configuration.downloads.concurrency = 64
        configuration.downloads.perHost = 64
        configuration.downloads.retry = RetryPolicy(maximumRetries: 1, baseDelay: .milliseconds(5), maximumDelay: .milliseconds(10))
        // Not a stall test: a ThreadSanitizer run on a loaded machine saw 7 of the 2,000 answers wait past the default
        // 20 s under 1,000 bytes/s, and fail as stalled
        configuration.downloads.stall = TransferRequest.StallPolicy(minimumBytesPerSecond: 1, window: .seconds(600))

        // When the list runs
        let summary = try await URLListJob(configuration: configuration).run(try urlTable(lines))

        // Then exactly the good images are saved, each valid, and nothing else is left
        #expect(summary.tally.saved == 1800)
        #expect(summary.tally.failed == 200)
        #expect(summary.tally.failures == ["http-404": 50, "not-image-html": 50, "truncated": 50, "http-500": 50])
        let records = ManifestRecord.read(from: directory.url.appendingPathComponent("manifest.jsonl"))
        #expect(Set(records.map(\.sha256)) == good)
        let validator = ImageValidator()
        for record in records {
            let data = try Data(contentsOf: directory.url.appendingPathComponent(record.file))
            #expect(sha256Hex(data) == record.sha256)
            #expect((try? validator.validate(data)) != nil)
        }
        #expect(directory.fileNames.filter { !$0.hasPrefix(".") && $0 != "manifest.jsonl" && $0 != "metadata.jsonl" }.count == 1800)
        #expect(directory.temporaryFiles.isEmpty)

        // And a second run downloads no image again
        server.resetCounters()
        let again = try await URLListJob(configuration: configuration).run(try urlTable(lines))
        #expect(again.tally.saved == 0)
        #expect(again.tally.alreadySaved == 1800)
        #expect(server.requests.filter { $0.path != "/robots.txt" }.allSatisfy { request in
            let index = Int(request.path.dropFirst(5).dropLast(4)) ?? -1
            return index % 10 == 0
        })
    }

    @Test func aRunKeepsTheCacheWithinItsLimit() async throws {
        // Given 40 images of ~10 KB and a cache limited to 100 KB
        let server = try TestServer.start()
        defer { server.stop() }
        var lines: [String] = []
        for index in 0..<40 {
            server.route("/c/\(index).png", .ok(TestImages.png(approximateBytes: 10_000, seed: UInt64(index)), contentType: "image/png"))
            lines.append(server.url("/c/\(index).png").absoluteString)
        }
        let directory = TemporaryFolder()
        let cacheDirectory = TemporaryFolder()
        let cache = DiskCache(directory: cacheDirectory.url, sizeLimit: 100_000, prefersHardLinks: false)
        var configuration = URLListJob.Configuration(directory: directory.url)
        configuration.downloads.cache = ImageCache(memory: nil, disk: cache)
        configuration.isSyncEnabled = false

        // When the list runs through the cache
        let summary = try await URLListJob(configuration: configuration).run(try urlTable(lines))

        // Then all are saved, and the cache was swept back under its limit at the end
        #expect(summary.tally.saved == 40)
        #expect(cache.stats().bytes <= 70_000)
        #expect(cache.stats().entries > 0)
    }
}
