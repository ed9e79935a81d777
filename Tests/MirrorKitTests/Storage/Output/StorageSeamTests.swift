import Foundation
@testable import MirrorModel
import MirrorSync
@testable import MirrorCore
@testable import MirrorFetch
@testable import MirrorStorage
import MirrorImages
import MirrorTestSupport
import Testing

/// The storage seams on their own, against temporary folders: the state database, the tar writer (read back by GNU
/// tar, not by our reader) and the folder sink.
@Suite("Storage seams")
struct StorageSeamTests {
    let folder = TemporaryFolder()

    // MARK: StateStore

    @Test func theStateStoreRemembersFailuresByNormalizedURLAndCountsOnlyRealOnes() throws {
        // Given a state database on disk
        let store = try StateStore(url: folder.url.appendingPathComponent("state.sqlite"))
        let now = Date(timeIntervalSince1970: 1_700_000_000)

        // When failures of every kind are recorded, one URL twice under two spellings of the same address
        try store.recordFailure(url: URL(string: "https://A.test/x.png")!, provider: nil, reason: "timeout", isTransient: true, at: now)
        try store.recordFailure(url: URL(string: "https://a.test/x.png")!, provider: nil, reason: "http-404", isTransient: false, at: now + 1)
        try store.recordFailure(url: URL(string: "https://a.test/y.png")!, provider: nil, reason: "connect", isTransient: true, at: now + 2)
        for status in RowOutcome.Status.recordedAsReasons {
            try store.recordFailure(url: URL(string: "https://a.test/\(status.rawValue).png")!, provider: nil, reason: status.rawValue, isTransient: false, at: now + 3)
        }

        // Then the two spellings are one row, its last reason kept and its attempts counted
        let attempts = try store.attempts()
        let x = try #require(attempts.first { $0.url.hasSuffix("/x.png") })
        #expect(x.reason == "http-404" && x.attempts == 2 && !x.isTransient)
        #expect(attempts.count == 2 + RowOutcome.Status.recordedAsReasons.count)
        // and refusals and filters are remembered but are not failures the folder lacks
        let counts = try store.failedCounts()
        #expect(counts.transient == 1 && counts.permanent == 1)
        #expect(try store.permanentlyFailedURLs().count == 1 + RowOutcome.Status.recordedAsReasons.count)
        // and a reopened database says the same; a saved URL's failure is forgotten
        let reopened = try StateStore(url: folder.url.appendingPathComponent("state.sqlite"))
        #expect(try reopened.failedCounts() == counts)
        try reopened.forgetFailure(normalizedURL: try #require(try reopened.failedURLs().first { $0.normalizedURL.hasSuffix("/y.png") }).normalizedURL)
        #expect(try reopened.failedCounts().transient == 0)
        // and the folder's reasons read back as the statuses they stand for
        #expect(RowOutcome.Status(recordedReason: "opted_out") == .optedOut)
        #expect(RowOutcome.Status(recordedReason: "http-404") == .failed)
        #expect(RowOutcome.Status(recordedReason: "success") == .failed)
    }

    // MARK: TarWriter

    @Test func aTarIsWholeForGNUTarOrNotThereAtAll() throws {
        // Given a tar of three members, one empty
        let destination = folder.url.appendingPathComponent("00000.tar")
        let tar = try TarWriter(destination: destination)
        let image = TestImages.png(width: 8, height: 8, seed: 3)
        try tar.add("000000000.png", contents: image, modified: Date(timeIntervalSince1970: 1_700_000_000))
        try tar.add("000000000.json", contents: Data(#"{"key":"000000000"}"#.utf8), modified: Date(timeIntervalSince1970: 1_700_000_000))
        try tar.add("000000001.txt", contents: Data(), modified: Date(timeIntervalSince1970: 1_700_000_000))
        #expect(!FileManager.default.fileExists(atPath: destination.path), "visible before its commit")
        try tar.commit(sync: true)

        // Then GNU tar lists the members in order, with the bytes given, owned by 0:0 with mode 0644
        let listing = try runTool("/usr/bin/tar", ["--numeric-owner", "-tvf", destination.path])
        let lines = listing.split(separator: "\n")
        #expect(lines.count == 3)
        #expect(lines.allSatisfy { $0.hasPrefix("-rw-r--r-- 0/0") }, "\(listing)")
        #expect(lines.map { String($0.split(separator: " ").last!) } == ["000000000.png", "000000000.json", "000000001.txt"])
        let extracted = try runToolData("/usr/bin/tar", ["-xOf", destination.path, "000000000.png"])
        #expect(extracted == image)

        // And a tar dropped before its commit leaves nothing behind, not even its temporary file
        let second = folder.url.appendingPathComponent("00001.tar")
        do {
            let abandoned = try TarWriter(destination: second)
            try abandoned.add("a.png", contents: image, modified: Date())
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.url.path).sorted() == ["00000.tar"])
    }

    // MARK: FolderSink

    @Test func theFolderSinkSavesRefusesDuplicatesAndRemembersWhatItSettles() async throws {
        // Given a folder sink with a state database and room for two images
        let output = try OutputFolder(directory: folder.url.appendingPathComponent("out"))
        let store = try StateStore(url: output.stateDirectory.appendingPathComponent("state.sqlite"))
        let sink = try FolderSink(folder: output, store: store, admissionLimit: 2)
        let first = TestImages.png(width: 10, height: 10, seed: 1)
        let second = TestImages.png(width: 12, height: 12, seed: 2)

        // When an image is published, the same bytes under another URL, a second image, then a third past the limit
        let outcomes = [
            await publish(first, url: "https://a.test/1.png", stem: "one", into: sink),
            await publish(first, url: "https://b.test/copy.png", stem: "copy", into: sink),
            await publish(second, url: "https://a.test/2.png", stem: "two", into: sink),
            await publish(TestImages.png(width: 14, height: 14, seed: 3), url: "https://a.test/3.png", stem: "three", into: sink),
        ]
        sink.settle(url: URL(string: "https://a.test/robots.png"), provenance: ImageProvenance(), as: .disallowed(Self.disallowed("/robots.png")))
        sink.settle(url: URL(string: "https://a.test/small.png"), provenance: ImageProvenance(), as: .filtered("1×1 is smaller than 8×8"))
        await sink.finish(sourceExhausted: true)

        // Then the first and the second are saved under their stems, the copy is a duplicate, the fourth not admitted
        guard case let .success(.saved(one, _)) = outcomes[0], case .success(.duplicate) = outcomes[1], case let .success(.saved(two, _)) = outcomes[2],
              case .failure(.notAdmitted) = outcomes[3] else {
            Issue.record("unexpected outcomes \(outcomes)")
            return
        }
        #expect(one.file == "one.png" && two.file == "two.png")
        #expect(try Data(contentsOf: output.directory.appendingPathComponent("one.png")) == first)
        #expect(sink.publishedCount == 2)
        // and the manifest holds the two, the database knows them, no temporary file is left
        #expect(output.records.map(\.file).sorted() == ["one.png", "two.png"])
        #expect(try store.imageCount() == 2)
        #expect(try FileManager.default.contentsOfDirectory(atPath: output.directory.path).filter { $0.hasSuffix(AtomicFile.temporarySuffix) }.isEmpty)
        // and what was settled is remembered by its status, so that a later run passes over it
        #expect(Set(try store.attempts().map(\.reason)) == [RowOutcome.Status.disallowed.rawValue, RowOutcome.Status.filtered.rawValue])
        // and a refusal with the signal that made it
        #expect(try store.refusalsBySignal() == ["robots": 1])
    }

    /// A refusal by robots.txt's `Disallow: /`, as the site gate reports it.
    static func disallowed(_ path: String) -> Reservation {
        Reservation(
            evidence: ConsentEvidence(signal: .robots, value: "robots.txt disallows \(path)", location: "robots.txt Disallow: / (group *)", term: .disallow),
            purpose: .aiTrain
        )
    }

    // MARK: ShardSink

    @Test func theShardSinkWritesEachShardWholeOnceEveryRowSettled() async throws {
        // Given shards of two rows, and five rows that end in every way, out of order
        let directory = folder.url.appendingPathComponent("shards")
        let row = { (index: Int) in ImageProvenance(key: String(format: "%09d", index), caption: "row \(index)") }
        let url = { (index: Int) in URL(string: "https://a.test/\(index).png")! }
        // (in a scope of its own: the sink holds the folder's lock until it is gone)
        do {
            let sink = try ShardSink(configuration: ShardSink.Configuration(directory: directory, shardSize: 2))
            _ = await publish(TestImages.png(width: 9, height: 9, seed: 1), url: url(1).absoluteString, stem: "1", provenance: row(1), into: sink)
            #expect(!FileManager.default.fileExists(atPath: directory.appendingPathComponent("00000.tar").path), "a shard before its rows settled")
            _ = await publish(TestImages.png(width: 9, height: 9, seed: 0), url: url(0).absoluteString, stem: "0", provenance: row(0), into: sink)
            sink.settle(url: url(2), provenance: row(2), as: .failed(reason: "http-503", message: "HTTP 503", isTransient: true))
            _ = await publish(TestImages.png(width: 9, height: 9, seed: 3), url: url(3).absoluteString, stem: "3", provenance: row(3), into: sink)
            sink.settle(url: url(4), provenance: row(4), as: .disallowed(Self.disallowed("/4.png")))
            await sink.finish(sourceExhausted: true)
        }

        // Then three shards exist, each tar holding its saved rows' image and record in row order (by GNU tar)
        let listing = try runTool("/usr/bin/tar", ["-tf", directory.appendingPathComponent("00000.tar").path])
        #expect(listing.split(separator: "\n") == ["000000000.png", "000000000.json", "000000000.txt", "000000001.png", "000000001.json", "000000001.txt"])
        #expect(try runTool("/usr/bin/tar", ["-tf", directory.appendingPathComponent("00001.tar").path]).split(separator: "\n").count == 3)
        // and every row has a record line whose status is a RowOutcome.Status, and stats that count them
        let records = try String(contentsOf: directory.appendingPathComponent("00002.jsonl"), encoding: .utf8)
        #expect(ShardRecordLine.outcome(of: Data(records.utf8))?.status == .disallowed)
        // (with the signal as its reason, and where it was read)
        let line = try #require(try JSONSerialization.jsonObject(with: Data(records.utf8)) as? [String: Any])
        #expect(line["reason"] as? String == "robots" && line["signal_location"] as? String == "robots.txt Disallow: / (group *)")
        #expect(line["purpose"] as? String == "ai-train")
        let second = try ShardStats.verified(try Data(contentsOf: directory.appendingPathComponent("00001_stats.json")), name: "00001_stats.json").get()
        #expect(second.rows == 2 && second.tally.saved == 1 && second.tally.failed == 1 && second.tally.transient == 1)
        #expect(second.tally.failures == ["http-503": 1])
        // and a sink reopened on the folder knows the complete shards' rows, and their sum
        let reopened = try ShardSink(configuration: ShardSink.Configuration(directory: directory, shardSize: 2))
        #expect(reopened.contains(normalizedURL: "", provenance: row(3)))
        #expect(reopened.completeTally.saved == 3 && reopened.completeTally.disallowed == 1)
        #expect(reopened.completeTally.refusals == ["robots": 1])
        let status = try DatasetStatus(names: try FileManager.default.contentsOfDirectory(atPath: directory.path)) {
            try Data(contentsOf: directory.appendingPathComponent($0))
        }
        #expect(status.rows == 5 && status.shardsDone == 3 && status.tally.saved == 3)
    }

    private func publish(_ data: Data, url: String, stem: String, provenance: ImageProvenance = ImageProvenance(), into sink: any ImageSink) async -> Publication {
        let image: VerifiedImage
        do {
            image = try folder.verifiedImage(data, in: sink.stagingDirectory, from: URL(string: url)!)
        } catch {
            Issue.record("cannot stage \(url): \(error)")
            return .failure(.notAdmitted)
        }
        return await withCheckedContinuation { continuation in
            sink.publish(image, stem: stem, provenance: provenance) { continuation.resume(returning: $0) }
        }
    }
}
