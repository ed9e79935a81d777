import Foundation
@testable import MirrorKit
@testable import MirrorModel
@testable import MirrorStorage
import Testing

/// The one schema of counts (``Tally/schemaVersion``): the same keys with the same meaning in every output, schema 1's
/// names written beside them in shard stats and `mirror status`, and stats files of either schema read and trusted.
@Suite("Counts schema")
struct CountsSchemaTests {
    /// A stats file as mirror wrote it with schema 1 (`mirror urls list.txt --format webdataset`, the release before
    /// schema 2: two saved, a URL repeated, a 404, a bad row, a TDMRep reservation and a robots.txt disallow).
    static let schema1Stats = #"""
        {"bytes":1482,"disallowed":1,"duplicates":1,"failed":1,"failures":{"http-404":1},"filtered":0,"finished":1795947543.27,"ignored_opt_outs":[],"invalid":1,"opted_out":1,"purpose":"ai-train","refusals":{"robots":1,"tdmrep-file":1},"rows":7,"saved":2,"seconds":0.051,"shard":0,"started":1795947543.219,"transient":0}
        """#

    /// A tally with every count different, so that a key read for another shows.
    static var everyCount: Tally {
        var tally = Tally()
        (tally.saved, tally.duplicates, tally.nearDuplicates, tally.failed, tally.transient) = (20, 2, 3, 5, 4)
        (tally.invalid, tally.filtered, tally.optedOut, tally.disallowed, tally.generated) = (6, 7, 8, 9, 10)
        (tally.failures, tally.refusals, tally.bytes) = (["http-404": 1, "timeout": 4], ["robots": 9, "tdmrep-file": 8], 12_345)
        (tally.alreadySaved, tally.failedEarlier, tally.cacheHits) = (11, 12, 13)
        return tally
    }

    private func object(_ data: Data) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    private func encoded(_ value: some Encodable) throws -> [String: Any] {
        try object(try JSONEncoder().encode(value))
    }

    /// Whether two decoded JSON values are the same value.
    private func same(_ a: Any?, _ b: Any?) throws -> Bool {
        guard let a, let b else { return a == nil && b == nil }
        return try JSONSerialization.data(withJSONObject: ["v": a], options: .sortedKeys) == JSONSerialization.data(withJSONObject: ["v": b], options: .sortedKeys)
    }

    @Test func aStatsFileOfSchema1IsReadAndTrusted() throws {
        // Given a stats file in schema 1's spelling
        let data = Data(Self.schema1Stats.utf8)

        // When it is verified as shard 0's stats
        let stats = try ShardStats.verified(data, name: "00000_stats.json").get()

        // Then every count is read under its old name, and the shard is complete
        let tally = stats.tally
        #expect(stats.rows == 7 && tally.saved == 2 && tally.duplicates == 1 && tally.failed == 1 && tally.failures == ["http-404": 1])
        #expect(tally.invalid == 1 && tally.optedOut == 1 && tally.disallowed == 1 && tally.refusals == ["robots": 1, "tdmrep-file": 1])
        #expect(tally.bytes == 1_482 && stats.purpose == .aiTrain && stats.ignoredOptOuts.isEmpty)
        let status = DatasetStatus(names: ["00000.tar", "00000_stats.json"]) { _ in data }
        #expect(status.shardsDone == 1 && status.shardsIncomplete.isEmpty && status.tally == tally)
    }

    @Test func statsAreWrittenUnderBothNamesAndReadBackWhole() throws {
        // Given a shard's stats with every count different
        var stats = ShardStats(shard: 3)
        stats.tally = Self.everyCount
        stats.tally.alreadySaved = 0
        stats.tally.failedEarlier = 0
        stats.tally.cacheHits = 0
        stats.rows = 20 + 2 + 3 + 5 + 6 + 7 + 8 + 9
        stats.purpose = .aiTrain
        stats.ignoredOptOuts = [.robots]

        // When they are written
        let data = stats.json()
        let file = try object(data)

        // Then each count is under its schema 2 name and its schema 1 name, with the same value, beside the version
        #expect(file["schema"] as? Int == 2)
        let pairs = [("transientFailures", "transient", 4), ("invalidRows", "invalid", 6), ("nearDuplicates", "near_duplicates", 3), ("optedOut", "opted_out", 8)]
        for (new, old, value) in pairs {
            #expect(file[new] as? Int == value && file[old] as? Int == value, "\(new) / \(old)")
        }
        #expect(file["ignoredOptOuts"] as? [String] == ["robots"] && file["ignored_opt_outs"] as? [String] == ["robots"])
        // and they read back as what was written, and are trusted
        let read = try ShardStats.verified(data, name: "00003_stats.json").get()
        #expect(read.tally == stats.tally && read.rows == stats.rows && read.ignoredOptOuts == [.robots])
        // and so does what a reader of schema 1 alone sees of them (an earlier mirror resuming this dataset)
        var schema1 = file
        for new in ["schema", "transientFailures", "invalidRows", "nearDuplicates", "optedOut", "ignoredOptOuts"] { schema1.removeValue(forKey: new) }
        let old = try ShardStats.verified(try JSONSerialization.data(withJSONObject: schema1), name: "00003_stats.json").get()
        #expect(old.tally == stats.tally && old.ignoredOptOuts == [.robots])
    }

    @Test func schema2NamesAloneAreReadAndPreferredToSchema1s() throws {
        // Given written stats without schema 1's names, and with them contradicting the new ones
        var stats = ShardStats(shard: 0)
        stats.tally.saved = 1
        stats.tally.invalid = 2
        stats.tally.optedOut = 3
        stats.tally.nearDuplicates = 4
        stats.tally.failed = 5
        stats.tally.transient = 5
        stats.rows = 15
        var file = try object(stats.json())
        for old in ["invalid", "opted_out", "near_duplicates", "transient"] { file.removeValue(forKey: old) }
        let newOnly = try JSONSerialization.data(withJSONObject: file)
        for old in ["invalid", "opted_out", "near_duplicates", "transient"] { file[old] = 0 }
        let contradicting = try JSONSerialization.data(withJSONObject: file)

        // When each is verified
        let read = try ShardStats.verified(newOnly, name: "00000_stats.json").get()
        let preferred = try ShardStats.verified(contradicting, name: "00000_stats.json").get()

        // Then both read the new names' counts
        #expect(read.tally == stats.tally)
        #expect(preferred.tally == stats.tally)
    }

    @Test func statusNamesShardsInCamelCaseAndInSchema1sNames() throws {
        // Given the status of one complete shard of schema 1 and one missing below it
        let data = Data(Self.schema1Stats.utf8).replacingShard(0, with: 1)
        let status = DatasetStatus(names: ["00001.tar", "00001_stats.json"]) { _ in data }

        // When it is written
        let json = try object(status.json())

        // Then the counts are schema 2's, and each key of the shards is under both names
        #expect(json["schema"] as? Int == 2 && json["invalidRows"] as? Int == 1 && json["optedOut"] as? Int == 1 && json["opted_out"] as? Int == 1)
        #expect(json["shardsDone"] as? Int == 1 && json["shards_done"] as? Int == 1)
        #expect(json["shardsMissing"] as? [Int] == [0] && json["shards_missing"] as? [Int] == [0])
        #expect(json["shardsIncomplete"] as? [Int] == [] && json["shards_incomplete"] as? [Int] == [])
        #expect(json["imagesPerSecond"] as? Double == json["images_per_second"] as? Double && json["imagesPerSecond"] != nil)
        #expect(json["alreadySaved"] == nil && json["cacheHits"] == nil, "a dataset's status counts rows, not a run's passes")
    }

    @Test func aSearchAndATableSummaryNameTheSameCountsAlike() throws {
        // Given a search's summary and a table's with the same tally
        var search = MirrorJob.Summary()
        search.tally = Self.everyCount
        var table = URLListJob.Summary()
        table.tally = Self.everyCount

        // When both are written
        let searchJSON = try encoded(search)
        let tableJSON = try encoded(table)

        // Then every count is under the same key with the same value, none folded into another
        let counts = [
            "schema", "saved", "alreadySaved", "duplicates", "nearDuplicates", "failed", "failures", "transientFailures", "invalidRows",
            "filtered", "optedOut", "disallowed", "refusals", "generated", "failedEarlier", "cacheHits", "bytes",
        ]
        for key in counts {
            #expect(searchJSON[key] != nil, "\(key)")
            #expect(try same(searchJSON[key], tableJSON[key]), "\(key)")
        }
        #expect(searchJSON["duplicates"] as? Int == 2 && searchJSON["alreadySaved"] as? Int == 11)
        #expect(searchJSON["filtered"] as? Int == 7 && searchJSON["optedOut"] as? Int == 8 && searchJSON["disallowed"] as? Int == 9)
        #expect(tableJSON["skipped"] as? Int == 11, "the deprecated name of alreadySaved")
    }
}

private extension Data {
    /// These stats' bytes naming shard `number` instead of `old`.
    func replacingShard(_ old: Int, with number: Int) -> Data {
        Data(String(decoding: self, as: UTF8.self).replacingOccurrences(of: "\"shard\":\(old)", with: "\"shard\":\(number)").utf8)
    }
}
