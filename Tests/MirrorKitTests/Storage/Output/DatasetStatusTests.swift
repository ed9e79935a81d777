import Foundation
@testable import MirrorCore
@testable import MirrorFetch
@testable import MirrorKit
@testable import MirrorSearch
@testable import MirrorStorage
import Testing

/// `mirror status`'s sum of shard stats, whichever copy wrote them.
@Suite("Dataset status")
struct DatasetStatusTests {
    private func stats(_ shard: Int, rows: Int, saved: Int, failures: [String: Int] = [:], started: Double, finished: Double, copies: Int? = nil) -> Data {
        var object: [String: Any] = [
            "shard": shard, "rows": rows, "saved": saved, "failed": failures.values.reduce(0, +), "failures": failures,
            "invalid": rows - saved - failures.values.reduce(0, +), "bytes": saved * 100, "started": started, "finished": finished,
        ]
        if let copies {
            object["copies"] = copies
            object["copy"] = shard % copies
            object["split"] = "host"
        }
        return try! JSONSerialization.data(withJSONObject: object)
    }

    @Test func shardsAddUpAndGapsAreNamed() throws {
        let files: [String: Data] = [
            "00000_stats.json": stats(0, rows: 10, saved: 8, failures: ["http-404": 2], started: 100, finished: 110),
            "00002_stats.json": stats(2, rows: 10, saved: 9, failures: ["http-404": 1], started: 105, finished: 120),
            "00003.tar": Data(), "00000.tar": Data(), "00002.tar": Data(), "notes.txt": Data(),
        ]
        let status = DatasetStatus(names: Array(files.keys)) { files[$0]! }
        #expect(status.rows == 20 && status.tally.saved == 17 && status.tally.failed == 3 && status.tally.failures == ["http-404": 3])
        #expect(status.tally.bytes == 1_700 && status.shardsDone == 2)
        #expect(status.shardsMissing == [1] && status.shardsIncomplete == [3])
        #expect(status.imagesPerSecond == 17.0 / 20)
    }

    @Test func copiesSplitByHostAreMissingOnlyBelowTheirOwnHighest() throws {
        // 3 copies by host: copy 0 wrote 0 and 3, copy 1 wrote 1, copy 2 wrote 2 and 5: nothing is missing
        var files: [String: Data] = [:]
        for shard in [0, 3, 1, 2, 5] { files[String(format: "%05d_stats.json", shard)] = stats(shard, rows: 1, saved: 1, started: 1, finished: 2, copies: 3) }
        #expect(DatasetStatus(names: Array(files.keys)) { files[$0]! }.shardsMissing == [])
        files["00003_stats.json"] = nil
        files["00006_stats.json"] = stats(6, rows: 1, saved: 1, started: 1, finished: 2, copies: 3)
        #expect(DatasetStatus(names: Array(files.keys)) { files[$0]! }.shardsMissing == [3])
    }

    @Test("stats that do not mark their shard complete are named, and the shard counts as incomplete", arguments: [
        ("not json at all", "not JSON"),
        ("[]", "not a JSON object"),
        ("{}", #"no "rows""#),
        (#"{"rows": 10}"#, #"no "saved""#),
        (#"{"rows": "ten", "saved": 1}"#, #"its "rows" has the wrong type"#),
        (#"{"shard": 1, "rows": 10, "saved": 8, "failed": 1}"#, "its rows' outcomes add up to 9, not its 10 rows"),
        (#"{"shard": 1, "rows": 0, "saved": 0}"#, "0 rows"),
        (#"{"shard": 1, "rows": 2, "saved": 3, "failed": -1}"#, "a count below zero"),
        (#"{"shard": 4, "rows": 2, "saved": 2}"#, "it names shard 4"),
    ])
    func aStatsFileNotToBeTrustedIsNamed(contents: String, reason: String) {
        // Given shard 0 complete, and shard 1 with a tar, records and the stats file `contents`
        let files: [String: Data] = [
            "00000_stats.json": stats(0, rows: 10, saved: 10, started: 1, finished: 2),
            "00001_stats.json": Data(contents.utf8), "00001.tar": Data(), "00001.jsonl": Data(),
        ]

        // When they are summed
        let status = DatasetStatus(names: Array(files.keys)) { files[$0]! }

        // Then only shard 0 is done; shard 1 is incomplete, its stats file named with what is wrong with it
        #expect(status.shardsDone == 1 && status.rows == 10 && status.tally.saved == 10)
        #expect(status.shardsIncomplete == [1] && status.shardsMissing == [])
        #expect(status.shardsUntrusted.map(\.description) == ["00001_stats.json is not this shard's stats (\(reason))"])
    }

    @Test func aStatsFileOverTheSizeBoundOrNotAFileIsNotTrusted() {
        // Given a stats file of stats followed by 64 KiB of spaces, and one that is no regular file
        let padded = stats(0, rows: 1, saved: 1, started: 1, finished: 2) + Data(repeating: 0x20, count: 64 << 10)
        let files: [String: Data?] = ["00000_stats.json": padded, "00001_stats.json": nil]

        // When they are summed
        let status = DatasetStatus(names: Array(files.keys)) { files[$0]! }

        // Then neither shard is done
        #expect(status.shardsDone == 0 && status.shardsIncomplete == [0, 1])
        #expect(status.shardsUntrusted.map(\.reason) == ["\(padded.count) bytes, where stats hold a few hundred", "not a regular file"])
    }
}
