import Foundation
import MirrorTestSupport
import Testing

/// `--dedup near` end to end: the built binary against the emulated APIs, whose results come in groups that show one
/// picture at several sizes, as PNG and as BMP (``APIEmulator/Settings/pictureVariants``), and against tables of them.
@Suite("Near-duplicates, end to end", .serialized)
struct NearDuplicateTests: EmulatedSearch {
    private func lines(_ url: URL) -> [[String: Any]] {
        let text = (try? String(contentsOf: url, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
    }

    /// The picture (group) a saved or listed URL of the emulator shows.
    private func group(_ api: APIEmulator, _ url: String) -> Int? {
        guard let id = URL(string: url, relativeTo: URL(string: "http://127.0.0.1/"))?.deletingPathExtension().lastPathComponent else { return nil }
        return api.image(provider: .openverse, id: id)?.picture?.group
    }

    /// The smallest Hamming distance between any hashes of two manifest records (`pdq` and `pdq_trimmed`).
    private func distance(_ a: [String: Any], _ b: [String: Any]) -> Int {
        func hashes(_ record: [String: Any]) -> [[UInt8]] {
            ([record["pdq"] as? String] + ((record["pdq_trimmed"] ?? record["trimmed"]) as? [String] ?? []).map { $0 }).compactMap { $0 }.map { Array($0.utf8) }
        }
        var best = 256
        for x in hashes(a) {
            for y in hashes(b) {
                let bits = zip(x, y).reduce(0) { sum, pair in
                    sum + ((Int(String(UnicodeScalar(pair.0)), radix: 16) ?? 0) ^ (Int(String(UnicodeScalar(pair.1)), radix: 16) ?? 0)).nonzeroBitCount
                }
                best = min(best, bits)
            }
        }
        return best
    }

    @Test func aSearchSavesExactlyNDistinctPicturesAndATopUpFetchesOnlyNewOnes() async throws {
        // Given Openverse results in groups of three: one picture at three sizes, as PNG, BMP and PNG
        let api = try emulator { $0.pictureVariants = 3 }
        defer { api.stop() }
        api.drawPictures(provider: .openverse, query: "kittens", count: 80)
        let out = TemporaryFolder()

        // When mirror asks for 10 (its default is --dedup near)
        let run = try await MirrorBinary.run(
            ["kittens", "--provider", "openverse", "--count", "10", "--out", out.path, "--json", "--quiet", "--no-cache"], environment: environment(api)
        )

        // Then it saves exactly 10 files, each another picture, none within the distance of another
        #expect(run.status == 0, "stderr: \(run.stderr)")
        let records = lines(out.file("manifest.jsonl"))
        #expect(records.count == 10)
        let groups = records.compactMap { group(api, $0["url"] as? String ?? "") }
        #expect(Set(groups).count == 10, "groups \(groups)")
        for (index, record) in records.enumerated() {
            #expect((record["pdq"] as? String)?.count == 64)
            for other in records[(index + 1)...] { #expect(distance(record, other) > 31) }
        }
        let summary = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any])
        let near = try #require(summary["nearDuplicates"] as? Int)
        #expect(near > 0 && summary["saved"] as? Int == 10)

        // When the folder is topped up to 14
        let requestsBefore = api.imageRequests
        let again = try await MirrorBinary.run(
            ["kittens", "--provider", "openverse", "--count", "14", "--out", out.path, "--json", "--quiet", "--no-cache"], environment: environment(api)
        )

        // Then it holds 14 different pictures, and no copy the first run dropped was fetched again
        #expect(again.status == 0, "stderr: \(again.stderr)")
        let topped = lines(out.file("manifest.jsonl"))
        #expect(topped.count == 14)
        #expect(Set(topped.compactMap { group(api, $0["url"] as? String ?? "") }).count == 14)
        let savedFirst = Set(groups)
        let savedPaths = Set(records.compactMap { ($0["url"] as? String).flatMap { URL(string: $0)?.path } })
        let copiesFetchedFirst = requestsBefore.keys.filter { savedFirst.contains(group(api, $0) ?? -1) && !savedPaths.contains($0) }
        let copiesFetchedAgain = copiesFetchedFirst.filter { api.imageRequests[$0, default: 0] > requestsBefore[$0, default: 0] }
        // Of the copies the first run fetched, `near` were looked at, dropped and remembered: never fetched again; the
        // rest were cut off in flight when the count was reached, and may be. (A copy no run has seen yet can only be
        // known for one by fetching it.)
        #expect(copiesFetchedAgain.count <= copiesFetchedFirst.count - near, "again: \(copiesFetchedAgain.sorted())")
    }

    @Test func withExactTheSamePicturesAreKeptAgain() async throws {
        // Given the same results, and --dedup exact
        let api = try emulator { $0.pictureVariants = 3 }
        defer { api.stop() }
        api.drawPictures(provider: .openverse, query: "kittens", count: 40)
        let out = TemporaryFolder()
        let run = try await MirrorBinary.run(
            ["kittens", "--provider", "openverse", "--count", "9", "--out", out.path, "--dedup", "exact", "--quiet", "--no-cache"], environment: environment(api)
        )

        // Then 9 files hold fewer pictures (copies of one picture are different bytes), and none is hashed
        #expect(run.status == 0, "stderr: \(run.stderr)")
        let records = lines(out.file("manifest.jsonl"))
        #expect(records.count == 9)
        #expect(Set(records.compactMap { group(api, $0["url"] as? String ?? "") }).count < 9)
        #expect(records.allSatisfy { $0["pdq"] is NSNull })
    }

    @Test func aTableWithDedupNearNamesWhatEachDroppedRowMatchedInItsShardRecords() async throws {
        // Given a table of 24 rows: 8 pictures, each at three sizes and in two formats, in table order
        let api = try emulator { $0.pictureVariants = 3 }
        defer { api.stop() }
        let urls = (0..<24).map { api.image(provider: .openverse, query: "table", index: $0).url.absoluteString }
        api.drawPictures(provider: .openverse, query: "table", count: 24)
        let folder = TemporaryFolder()
        let table = folder.url.appendingPathComponent("urls.txt")
        try urls.joined(separator: "\n").write(to: table, atomically: true, encoding: .utf8)
        let out = folder.url.appendingPathComponent("shards")

        // When it is written to WebDataset shards of 8 with --dedup near
        let run = try await MirrorBinary.run(
            ["urls", table.path, "--out", out.path, "--format", "webdataset", "--shard-size", "8", "--dedup", "near", "--ignore-robots", "--json", "--quiet"]
        )

        // Then each picture is one sample, and each dropped row's record says near_duplicate and names the sample it
        // looks like, which shows the same picture
        #expect(run.status == 0, "stderr: \(run.stderr)")
        let records = (0..<3).flatMap { lines(out.appendingPathComponent(String(format: "%05d.jsonl", $0))) }
        #expect(records.count == 24)
        let saved = records.filter { $0["status"] as? String == "success" }
        let dropped = records.filter { $0["status"] as? String == "near_duplicate" }
        #expect(saved.count == 8 && dropped.count == 16)
        let groupOfKey = Dictionary(uniqueKeysWithValues: saved.map { ($0["key"] as? String ?? "", group(api, $0["url"] as? String ?? "")) })
        for row in dropped {
            let message = row["error"] as? String ?? ""
            let key = try #require(message.split(separator: " ").dropFirst(4).first.map(String.init), "\(message)")
            #expect(message.hasPrefix("looks the same as "), "\(message)")
            #expect(groupOfKey[key] == group(api, row["url"] as? String ?? ""), "\(message)")
        }
        let summary = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any])
        #expect(summary["nearDuplicates"] as? Int == 16 && summary["saved"] as? Int == 8)
        // And the stats count them apart, and the tars hold the 8 samples whole (GNU tar lists them)
        let stats = (0..<3).compactMap { try? JSONSerialization.jsonObject(with: Data(contentsOf: out.appendingPathComponent(String(format: "%05d_stats.json", $0)))) as? [String: Any] }
        #expect(stats.reduce(0) { $0 + ($1["nearDuplicates"] as? Int ?? 0) } == 16)
        var members = 0
        for shard in 0..<3 {
            let listing = try runTool("/usr/bin/tar", ["-tf", out.appendingPathComponent(String(format: "%05d.tar", shard)).path])
            members += listing.split(separator: "\n").filter { !$0.hasSuffix(".json") && !$0.hasSuffix(".txt") }.count
        }
        #expect(members == 8)
    }

    @Test func mirrorHashPrintsWhatDedupNearCompares() async throws {
        // Given a picture, a smaller copy of it as BMP, another picture, and a text file
        let folder = TemporaryFolder()
        let files = ["a.png": TestImages.picture(width: 480, height: 360, seed: 21), "b.bmp": TestImages.picture(width: 240, height: 180, seed: 21, format: .bmp),
                     "c.png": TestImages.picture(width: 480, height: 360, seed: 22), "notes.txt": Data("not an image\n".utf8)]
        for (name, data) in files { try data.write(to: folder.file(name)) }

        // When they are hashed
        let run = try await MirrorBinary.run(["hash", "--json"] + ["a.png", "b.bmp", "c.png", "notes.txt"].map { folder.file($0).path })

        // Then each image has a line with its hash, quality, trimmed centres and size, the text file an error, and the
        // exit status says one file failed; the copy is within the distance of the original, the other picture far
        #expect(run.status == 1)
        let objects = run.stdout.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        #expect(objects.count == 4)
        let hashes = Dictionary(uniqueKeysWithValues: objects.compactMap { object -> (String, [String: Any])? in
            guard let file = object["file"] as? String, object["pdq"] != nil else { return nil }
            return (URL(fileURLWithPath: file).lastPathComponent, object)
        })
        #expect(hashes.count == 3)
        #expect(hashes.values.allSatisfy { ($0["trimmed"] as? [String])?.count == 3 && ($0["quality"] as? Int ?? 0) >= 50 && $0["version"] as? Int == 2 })
        #expect(hashes["b.bmp"]?["width"] as? Int == 240)
        #expect(distance(hashes["a.png"] ?? [:], hashes["b.bmp"] ?? [:]) <= 31)
        #expect(distance(hashes["a.png"] ?? [:], hashes["c.png"] ?? [:]) > 62)
        #expect(objects.contains { ($0["file"] as? String)?.hasSuffix("notes.txt") == true && $0["error"] != nil })
    }
}
