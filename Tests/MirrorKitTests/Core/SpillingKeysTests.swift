import Foundation
@testable import MirrorCore
@testable import MirrorFetch
@testable import MirrorKit
@testable import MirrorModel
@testable import MirrorSearch
@testable import MirrorStorage
import MirrorTestSupport
import Testing

/// The run's large sets: a Bloom filter in front of a scratch SQLite file, and the dictionary that moves into that file
/// once it holds more than its limit.
@Suite("Spilling key sets")
struct SpillingKeysTests {
    @Test func theFilterNeverForgetsAKeyAndRarelyInventsOne() {
        var filter = BloomFilter()
        let held = (0..<200_000).map { Fingerprint("held \($0)") }
        for key in held { filter.insert(key) }
        #expect(held.allSatisfy { filter.mayContain($0) })
        // Four layers by now (65,536 doubling), each at about 1 %: well under 5 % in all.
        let invented = (0..<100_000).count(where: { filter.mayContain(Fingerprint("absent \($0)")) })
        #expect(invented < 5_000, "false positives: \(invented) of 100,000")
        #expect(invented > 0, "a filter this size should answer 'maybe' for some absent keys; is it a plain set?")
    }

    @Test func theFileKeepsTheFirstValueAcrossBatches() throws {
        let directory = TemporaryFolder()
        let keys = try DiskKeySet(directory: directory.url, name: "test")
        // 25,000 keys: six batches of 4,096 are written to the file, 424 still wait in memory.
        for index in 0..<25_000 {
            #expect(keys.insert("key \(index)", value: index.isMultiple(of: 2) ? "value \(index)" : nil))
        }
        #expect(!keys.insert("key 7", value: "another"))
        #expect(!keys.insert("key 24999", value: "another"))
        #expect(keys.value(for: "key 0") == "value 0")
        #expect(keys.value(for: "key 12000") == "value 12000")
        #expect(keys.value(for: "key 24998") == "value 24998")
        #expect(keys.entry(Fingerprint("key 7")) == .some(nil))  // present, no value
        #expect(keys.entry(Fingerprint("key 25000")) == nil)     // absent
        #expect((0..<25_000).allSatisfy { keys.entry(Fingerprint("key \($0)")) != nil })
        #expect(directory.fileNames.contains { $0.hasPrefix(".mirror-test-") })
    }

    @Test func concurrentInsertsCountEveryKeyOnceWhileBatchesAreWritten() async throws {
        let directory = TemporaryFolder()
        let keys = try DiskKeySet(directory: directory.url, name: "race")
        // Four tasks insert 0..<20,000 in overlapping halves, so every key is offered twice while batches of 4,096 are
        // being written: a key that waits in the batch being written must not look new to the other task.
        let added = await withTaskGroup(of: Int.self) { group in
            for start in [0, 5_000, 10_000, 15_000] {
                group.addTask {
                    (start..<start + 10_000).count { keys.insert("key \($0 % 20_000)") }
                }
            }
            return await group.reduce(0, +)
        }
        #expect(added == 20_000)
        #expect((0..<20_000).allSatisfy { keys.entry(Fingerprint("key \($0)")) != nil })
        #expect(keys.entry(Fingerprint("key 20000")) == nil)
    }

    @Test func keysMoveToTheFileBeyondTheLimitAndTheFileGoesWithThem() throws {
        let directory = TemporaryFolder()
        do {
            var keys = SpillingKeys(spillingInto: directory.url, name: "spill", after: 100)
            for index in 0..<50 { keys.insert(Fingerprint("k\(index)"), value: "v\(index)") }
            #expect(!keys.isSpilled)
            #expect(!directory.fileNames.contains { $0.hasPrefix(".mirror-spill-") })
            for index in 50..<1_000 { keys.insert(Fingerprint("k\(index)"), value: "v\(index)") }
            #expect(keys.isSpilled)
            #expect(directory.fileNames.contains { $0.hasPrefix(".mirror-spill-") })
            let changed = keys.insert(Fingerprint("k3"), value: "changed")
            #expect(!changed)
            #expect((0..<1_000).allSatisfy { keys.value(for: Fingerprint("k\($0)")) == "v\($0)" })
            #expect(keys.contains(Fingerprint("k999")) && !keys.contains(Fingerprint("k1000")))
        }
        #expect(!directory.fileNames.contains { $0.hasPrefix(".mirror-spill-") })
    }

    @Test func withoutADirectoryEverythingStaysInMemory() {
        var keys = SpillingKeys(spillingInto: nil, name: "none", after: 10)
        for index in 0..<100 { keys.insert(Fingerprint("k\(index)")) }
        #expect(!keys.isSpilled)
        #expect((0..<100).allSatisfy { keys.contains(Fingerprint("k\($0)")) })
    }

    @Test func aFolderLargerThanTheLimitStillKnowsEveryImage() throws {
        // Given a folder of 12,000 saved images (four keys each: over the 16,384 kept in memory)
        let directory = TemporaryFolder()
        var manifest = Data()
        for index in 0..<12_000 {
            let name = "image-\(index).png"
            _ = FileManager.default.createFile(atPath: directory.url.appendingPathComponent(name).path, contents: Data())
            let record = ManifestRecord(
                file: name, url: "http://host/\(index).png", width: 1, height: 1, bytes: 0,
                sha256: String(repeating: "0", count: 58) + String(format: "%06d", index), format: "png", fetchedAt: Date()
            )
            manifest.append(try record.jsonLine())
        }
        try manifest.write(to: directory.url.appendingPathComponent("manifest.jsonl"))

        // When it is opened
        let folder = try OutputFolder(directory: directory.url)

        // Then every URL, digest and name is known, and nothing else is
        #expect(folder.savedCount == 12_000)
        let scratch = (try? FileManager.default.contentsOfDirectory(atPath: directory.url.appendingPathComponent(".mirror").path)) ?? []
        #expect(scratch.contains { $0.hasPrefix(".mirror-saved-") }, "the lookups did not move to the file: \(scratch)")
        #expect((0..<12_000).allSatisfy { folder.contains(url: URL(string: "http://host/\($0).png")!) })
        #expect(!folder.contains(url: URL(string: "http://host/12000.png")!))
        #expect(folder.file(withSHA256: String(repeating: "0", count: 58) + "011999") == "image-11999.png")
        #expect(folder.file(withSHA256: String(repeating: "0", count: 58) + "012000") == nil)
        #expect(folder.isTaken("IMAGE-5.PNG"))
    }
}
