import Foundation
@testable import MirrorCore
import MirrorImages
@testable import MirrorKit
@testable import MirrorModel
@testable import MirrorStorage
import MirrorTestSupport
import Testing

/// Where images go in a folder: flat, or numbered subfolders of a fixed size, so that no folder passes the Hub's 10,000
/// files; top-ups that move nothing; a table job that decides by what it may add. Small sizes (3 images a subfolder,
/// 4 flat) stand for the real 1,000 and 9,000; scripts/check/check_datasets.py runs the real ones on 12,500 rows.
@Suite("Folder layout", .serialized)
struct FolderLayoutTests: PublishingToFolders {
    /// 3 images a subfolder, at most 4 flat.
    static func small(_ mode: FolderLayout.Mode) -> FolderLayout {
        FolderLayout(mode: mode, imagesPerSubfolder: 3, flatLimit: 4)
    }

    // MARK: The placement rule (a value, no I/O)

    @Test func automaticStaysFlatToTheLimitThenFillsSubfoldersInOrder() {
        // Given an empty folder and an automatic layout
        var placement = FolderPlacement()

        // When eleven images are placed
        let places = (0..<11).map { _ in placement.place(in: "", layout: Self.small(.automatic)) }

        // Then four go in the folder itself, the rest into 00000, 00001, … three at a time
        #expect(places == [nil, nil, nil, nil, 0, 0, 0, 1, 1, 1, 2])
        #expect(FolderLayout.subfolderName(0) == "00000" && FolderLayout.subfolderName(12) == "00012")
        #expect(FolderLayout.subfolderName(123_456) == "123456")
        #expect(FolderLayout.subfolderNumber("00012") == 12 && FolderLayout.subfolderNumber("0012") == nil)
        #expect(FolderLayout.subfolderNumber("red-fox") == nil)
    }

    @Test func thePlacementIsLearntFromTheSavedPathsAndGoesOnFromTheLast() {
        // Given saved images: two flat, a full 00000, one in 00001; and a label's folder with one subfolder
        var placement = FolderPlacement()
        for file in ["a.png", "b.png", "00000/c.png", "00000/d.png", "00000/e.png", "00001/f.png", "odd/x/y.png"] {
            placement.add(file: file, labelled: false)
        }
        placement.add(file: "red-fox/00000/g.png", labelled: true)
        placement.add(file: "red-fox/h.png", labelled: true)

        // Then the next images go on in 00001 and then 00002, whatever the layout but flat; the label's on its own
        var copy = placement
        #expect((0..<3).map { _ in copy.place(in: "", layout: Self.small(.automatic)) } == [1, 1, 2])
        copy = placement
        #expect(copy.place(in: "", layout: Self.small(.subfolders)) == 1)
        #expect(copy.place(in: "", layout: Self.small(.flat)) == nil)
        #expect(placement.bases[""]?.flat == 2 && placement.bases[""]?.subfolders == [0: 3, 1: 1])
        #expect(placement.bases["red-fox"]?.flat == 1 && placement.bases["red-fox"]?.subfolders == [0: 1])
        #expect(copy.place(in: "red-fox", layout: Self.small(.automatic)) == 0)
    }

    @Test func aJobThatMayPassTheLimitIsInSubfoldersFromItsFirstImage() {
        let layout = FolderLayout()
        #expect(layout.mode == .automatic && layout.imagesPerSubfolder == 1_000 && layout.flatLimit == 9_000)
        #expect(layout.resolved(saved: 0, adding: 12_500).mode == .subfolders)
        #expect(layout.resolved(saved: 9_000, adding: 2_000).mode == .subfolders)
        #expect(layout.resolved(saved: 0, adding: 500).mode == .automatic)
        #expect(layout.resolved(saved: 8_999, adding: 1).mode == .automatic)
        #expect(layout.resolved(saved: 0, adding: nil).mode == .automatic)
        #expect(FolderLayout(mode: .flat).resolved(saved: 0, adding: 50_000).mode == .flat)
    }

    // MARK: Publishing into a folder

    /// The most images (`.png` files) any folder under `directory` holds, itself included, with the folder.
    private func fullestFolder(_ directory: URL) -> (images: Int, folder: String) {
        var fullest = (images: 0, folder: "")
        var stack = [directory]
        while let next = stack.popLast() {
            let names = (try? FileManager.default.contentsOfDirectory(atPath: next.path)) ?? []
            let images = names.filter { $0.hasSuffix(".png") }.count
            if images > fullest.images { fullest = (images, next.lastPathComponent) }
            for name in names where !name.hasPrefix(".") {
                var isDirectory: ObjCBool = false
                let url = next.appendingPathComponent(name)
                if FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory), isDirectory.boolValue { stack.append(url) }
            }
        }
        return fullest
    }

    @Test func subfoldersOfAFixedSizeNamedInSavingOrderWithMetadataACopyOfTheManifest() async throws {
        // Given an empty folder laid out in subfolders
        let directory = TemporaryFolder()

        // When ten images are published
        let saved = files(try await publish(0..<10, into: directory, layout: Self.small(.subfolders)))

        // Then they are in 00000 to 00003, three a folder, in saving order, and the manifest names each by its path
        #expect(saved == ["00000/0.png", "00000/1.png", "00000/2.png", "00001/3.png", "00001/4.png", "00001/5.png",
                          "00002/6.png", "00002/7.png", "00002/8.png", "00003/9.png"])
        #expect(ManifestRecord.read(from: directory.file("manifest.jsonl")).map(\.file) == saved)
        for file in saved { #expect(isRegularFile(directory.file(file)), "\(file) is missing") }
        #expect(directory.visibleFiles == ["00000", "00001", "00002", "00003", "manifest.jsonl"])
        #expect(fullestFolder(directory.url).images == 3)
        // and metadata.jsonl is a real file with the manifest's bytes
        #expect(isRegularFile(directory.file("metadata.jsonl")))
        #expect(bytes(directory.file("metadata.jsonl")) == bytes(directory.file("manifest.jsonl")))
        #expect(directory.temporaryFiles.isEmpty)
    }

    @Test func aTopUpOfAFlatFolderMovesNothingAndGoesOnInSubfolders() async throws {
        // Given a folder of three images, flat (under the limit)
        let directory = TemporaryFolder()
        let first = files(try await publish(0..<3, into: directory, layout: Self.small(.automatic)))
        #expect(first == ["0.png", "1.png", "2.png"])
        let inodes = try first.map { try FileManager.default.attributesOfItem(atPath: directory.file($0).path)[.systemFileNumber] as? Int }

        // When a top-up job that may add four (3 + 4 > 4) runs, then one that adds three more with the automatic rule
        let topUp = Self.small(.automatic).resolved(saved: 3, adding: 4)
        #expect(topUp.mode == .subfolders)
        let second = files(try await publish(3..<7, into: directory, layout: topUp))
        let third = files(try await publish(7..<10, into: directory, layout: Self.small(.automatic)))

        // Then the first three are where they were (same files), and the rest fill subfolders in order
        #expect(second == ["00000/3.png", "00000/4.png", "00000/5.png", "00001/6.png"])
        #expect(third == ["00001/7.png", "00001/8.png", "00002/9.png"])
        #expect(try first.map { try FileManager.default.attributesOfItem(atPath: directory.file($0).path)[.systemFileNumber] as? Int } == inodes)
        let records = ManifestRecord.read(from: directory.file("manifest.jsonl"))
        #expect(records.map(\.file) == first + second + third)
        #expect(bytes(directory.file("metadata.jsonl")) == bytes(directory.file("manifest.jsonl")))
    }

    @Test func automaticSwitchesToSubfoldersByItselfAtTheLimit() async throws {
        // Given a job that could not say how many it adds (automatic, unresolved)
        let directory = TemporaryFolder()

        // When six images come
        let saved = files(try await publish(0..<6, into: directory, layout: Self.small(.automatic)))

        // Then the folder holds four, and the next go into 00000
        #expect(saved == ["0.png", "1.png", "2.png", "3.png", "00000/4.png", "00000/5.png"])
    }

    @Test func aLabelsFolderHasItsOwnSubfolders() async throws {
        let directory = TemporaryFolder()
        let saved = files(try await publish(0..<4, into: directory, layout: Self.small(.subfolders), label: "red-fox"))
        #expect(saved == ["red-fox/00000/0.png", "red-fox/00000/1.png", "red-fox/00000/2.png", "red-fox/00001/3.png"])
        #expect(directory.visibleFiles == ["manifest.jsonl", "red-fox"])
        // and reopened, the label's folder goes on in its last subfolder
        let more = files(try await publish(4..<6, into: directory, layout: Self.small(.automatic), label: "red-fox"))
        #expect(more == ["red-fox/00001/4.png", "red-fox/00001/5.png"])
    }

    @Test func duplicatesAreFoundAcrossSubfolders() async throws {
        // Given images in two subfolders
        let directory = TemporaryFolder()
        _ = try await publish(0..<4, into: directory, layout: Self.small(.subfolders))

        // When the first image's bytes come again from another URL
        let folder = try await reopen(directory)
        defer { folder.releaseLock() }
        let sink = try FolderSink(folder: folder, layout: Self.small(.subfolders))
        let copy = try verified(TestImages.png(width: 4, height: 4, seed: 0), in: directory.url, url: "http://y/copy.png")
        let outcome = await withCheckedContinuation { continuation in
            sink.publish(copy, stem: "copy", provenance: ImageProvenance()) { continuation.resume(returning: $0) }
        }

        // Then it is the duplicate of the file in its subfolder, and the URLs saved are known
        #expect(outcome == .success(.duplicate(of: "00000/0.png")))
        #expect(folder.contains(url: URL(string: "http://x/3.png")!))
    }

    // MARK: A table job decides by what it may add

    private func serve(_ count: Int) throws -> (TestServer, [String]) {
        let server = try TestServer.start()
        var lines: [String] = []
        for index in 0..<count {
            server.route("/p/\(index).png", .ok(TestImages.png(width: 6, height: 6, seed: UInt64(100 + index)), contentType: "image/png"))
            lines.append(server.url("/p/\(index).png").absoluteString)
        }
        return (server, lines)
    }

    @Test func aTableThatMayPassTheLimitIsInSubfoldersAndATopUpKeepsTheRule() async throws {
        // Given 12 images, a folder laid out automatically (3 a subfolder, 4 flat)
        let (server, lines) = try serve(12)
        defer { server.stop() }
        let small = TemporaryFolder()
        let large = TemporaryFolder()
        func run(_ rows: ArraySlice<String>, into directory: TemporaryFolder) async throws -> URLListJob.Summary {
            var configuration = URLListJob.Configuration(directory: directory.url)
            configuration.layout = Self.small(.automatic)
            configuration.readsSiteFiles = false
            return try await URLListJob(configuration: configuration).run(try urlTable(Array(rows)))
        }

        // When a table of 3 rows fills one folder, and a table of 7 (more than the 4 flat) another
        _ = try await run(lines[0..<3], into: small)
        _ = try await run(lines[0..<7], into: large)

        // Then the first is flat, the second in subfolders from its first image
        // (Downloads end in any order: the files, not their order.)
        #expect(ManifestRecord.read(from: small.file("manifest.jsonl")).map(\.file).sorted() == ["0.png", "1.png", "2.png"])
        let files = ManifestRecord.read(from: large.file("manifest.jsonl")).map(\.file)
        #expect(files.count == 7 && files.allSatisfy { $0.hasPrefix("0000") })
        #expect(Set(files.map { $0.prefix(5) }) == ["00000", "00001", "00002"])

        // When the tables grow to all 12 rows and run again (a rerun of the 3 saves nothing it has)
        server.resetCounters()
        let topUp = try await run(lines[0..<12], into: small)
        let topUpLarge = try await run(lines[0..<12], into: large)

        // Then each saves only the rows it lacks, moves nothing, and no folder passes its size
        #expect(topUp.tally.saved == 9 && topUp.tally.alreadySaved == 3)
        #expect(topUpLarge.tally.saved == 5 && topUpLarge.tally.alreadySaved == 7)
        #expect(server.totalRequests == 14)
        let topped = ManifestRecord.read(from: small.file("manifest.jsonl")).map(\.file)
        #expect(topped.prefix(3).sorted() == ["0.png", "1.png", "2.png"])  // 3 + 9 > 4: the new ones in subfolders
        #expect(topped.dropFirst(3).allSatisfy { $0.hasPrefix("0000") })
        for folder in [small, large] {
            #expect(fullestFolder(folder.url).images <= 4, "\(fullestFolder(folder.url))")
            #expect(bytes(folder.file("metadata.jsonl")) == bytes(folder.file("manifest.jsonl")))
            let records = ManifestRecord.read(from: folder.file("metadata.jsonl"))
            #expect(records.count == 12 && Set(records.map(\.file)).count == 12 && Set(records.map(\.url)).count == 12)
        }
    }
}
