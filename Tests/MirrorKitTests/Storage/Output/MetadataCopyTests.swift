import Foundation
@testable import MirrorCore
import MirrorImages
@testable import MirrorModel
@testable import MirrorStorage
import MirrorTestSupport
import Testing

/// `metadata.jsonl`, the file Hugging Face `imagefolder` reads, as a real file holding the manifest's bytes: kept by
/// every batch, repaired after a kill between the two appends or during the manifest's repair, an older mirror's
/// symbolic link replaced, someone else's file left alone, and a batch the copy cannot take taken back from both.
@Suite("metadata.jsonl, the manifest's copy", .serialized)
struct MetadataCopyTests: PublishingToFolders {
    @Test func publishedImagesAreOnOneLineOfEachFileTheSameBytes() async throws {
        // Given an empty folder
        let directory = TemporaryFolder()

        // When three images are published, each its own batch
        let saved = files(try await publish(0..<3, into: directory))

        // Then metadata.jsonl is a regular file with the manifest's bytes, one line an image
        #expect(saved == ["0.png", "1.png", "2.png"])
        #expect(isRegularFile(directory.file("metadata.jsonl")))
        #expect(bytes(directory.file("metadata.jsonl")) == bytes(directory.file("manifest.jsonl")))
        #expect(ManifestRecord.read(from: directory.file("metadata.jsonl")).map(\.file) == saved)
    }

    @Test func anOlderMirrorsLinkIsReplacedByACopy() async throws {
        // Given a folder made by an older mirror: metadata.jsonl a symbolic link to manifest.jsonl
        let directory = TemporaryFolder()
        _ = try await publish(0..<3, into: directory)
        unlink(directory.file("metadata.jsonl").path)
        #expect(symlink("manifest.jsonl", directory.file("metadata.jsonl").path) == 0)

        // When the folder is opened
        let folder = try await reopen(directory)
        folder.releaseLock()

        // Then metadata.jsonl is a real file with the manifest's bytes, and the manifest is untouched
        #expect(folder.reconciliation.rewroteMetadata)
        #expect(isRegularFile(directory.file("metadata.jsonl")))
        #expect(bytes(directory.file("metadata.jsonl")) == bytes(directory.file("manifest.jsonl")))
        #expect(ManifestRecord.read(from: folder.manifestURL).map(\.file) == ["0.png", "1.png", "2.png"])
        #expect(directory.temporaryFiles.isEmpty)
    }

    @Test func aKillBetweenTheTwoAppendsLosesNoLineAndDoublesNone() async throws {
        // Given a folder of four images, then what a kill between the manifest's append and the copy's leaves:
        // the copy without the last line, and the end of the line before it torn off
        let directory = TemporaryFolder()
        _ = try await publish(0..<4, into: directory)
        let manifest = try #require(bytes(directory.file("manifest.jsonl")))
        let lines = manifest.split(separator: 0x0A)
        let behind = Data(lines.prefix(2).joined(separator: [0x0A])) + Data([0x0A]) + lines[2].prefix(20)
        try behind.write(to: directory.file("metadata.jsonl"))

        // When the folder is opened again, and one more image published
        let folder = try await reopen(directory)
        #expect(folder.reconciliation.rewroteMetadata && !folder.reconciliation.foreignMetadata)
        #expect(bytes(directory.file("metadata.jsonl")) == manifest)
        folder.releaseLock()
        _ = try await publish(4..<5, into: directory)

        // Then each image is on exactly one line of each file, and the two are the same bytes
        let metadata = ManifestRecord.read(from: directory.file("metadata.jsonl")).map(\.file)
        #expect(metadata == ["0.png", "1.png", "2.png", "3.png", "4.png"])
        #expect(bytes(directory.file("metadata.jsonl")) == bytes(directory.file("manifest.jsonl")))
    }

    @Test func aKillWhileTheManifestIsRepairedLeavesNoStaleCopy() async throws {
        // Given a folder whose manifest must be rewritten on opening (an image deleted by hand, a torn last line)
        let directory = TemporaryFolder()
        _ = try await publish(0..<3, into: directory)
        unlink(directory.file("1.png").path)
        let handle = try FileHandle(forWritingTo: directory.file("manifest.jsonl"))
        handle.seekToEndOfFile()
        handle.write(Data(#"{"file_name":"ha"#.utf8))
        try handle.close()

        // When it is opened
        let folder = try await reopen(directory)
        folder.releaseLock()

        // Then both files list the two images left, the same bytes
        #expect(folder.reconciliation.droppedRecords == 1)
        #expect(ManifestRecord.read(from: directory.file("metadata.jsonl")).map(\.file) == ["0.png", "2.png"])
        #expect(bytes(directory.file("metadata.jsonl")) == bytes(directory.file("manifest.jsonl")))
        // (The copy is removed before the manifest is replaced: a kill in between leaves it missing, and missing it is
        // written anew, as a missing one is here.)
        unlink(directory.file("metadata.jsonl").path)
        let again = try await reopen(directory)
        again.releaseLock()
        #expect(again.reconciliation.rewroteMetadata)
        #expect(bytes(directory.file("metadata.jsonl")) == bytes(directory.file("manifest.jsonl")))
    }

    @Test func someoneElsesMetadataIsLeftAsItIs() async throws {
        // Given a folder whose metadata.jsonl someone wrote (no part of the manifest)
        let directory = TemporaryFolder()
        let theirs = Data(#"{"file_name":"mine.png","caption":"theirs"}"#.utf8 + [0x0A])
        try theirs.write(to: directory.file("metadata.jsonl"))

        // When mirror publishes into it
        let folder = try await reopen(directory)
        #expect(folder.reconciliation.foreignMetadata)
        folder.releaseLock()
        let saved = files(try await publish(0..<2, into: directory))

        // Then their file is untouched, and the manifest has the images
        #expect(saved.count == 2)
        #expect(bytes(directory.file("metadata.jsonl")) == theirs)
        #expect(ManifestRecord.read(from: directory.file("manifest.jsonl")).map(\.file) == saved)
    }

    @Test func aBatchTheCopyCannotTakeIsTakenBackFromBoth() async throws {
        // Given a folder of two images whose metadata.jsonl becomes, mid-run, something an append refuses (a link)
        let directory = TemporaryFolder()
        _ = try await publish(0..<2, into: directory)
        let before = try #require(bytes(directory.file("manifest.jsonl")))
        let folder = try await reopen(directory)
        let sink = try FolderSink(folder: folder)
        unlink(directory.file("metadata.jsonl").path)
        #expect(symlink("elsewhere.jsonl", directory.file("metadata.jsonl").path) == 0)

        // When an image is published
        let image = try verified(TestImages.png(width: 4, height: 4, seed: 7), in: directory.url, url: "http://x/7.png")
        let outcome = await withCheckedContinuation { continuation in
            sink.publish(image, stem: "7", provenance: ImageProvenance()) { continuation.resume(returning: $0) }
        }
        await sink.drain()
        folder.releaseLock()

        // Then it failed, its file is gone, and the manifest is as it was: in both files or in neither
        guard case .failure(.unwritable) = outcome else {
            Issue.record("expected a failure, got \(outcome)")
            return
        }
        #expect(!FileManager.default.fileExists(atPath: directory.file("7.png").path))
        #expect(bytes(directory.file("manifest.jsonl")) == before)
        #expect(directory.temporaryFiles.isEmpty)
    }
}
