import Foundation
import MirrorModel

/// The sum of a dataset's shard stats — what `mirror status` prints: every copy's shards, merged by adding them up.
public struct DatasetStatus: Sendable, Hashable {
    /// Rows of the table in the shards whose stats exist.
    public var rows = 0
    /// How they ended: the shards' tallies added up.
    public var tally = Tally()
    /// Shards whose stats exist.
    public var shardsDone = 0
    /// Shard numbers below the highest one seen that have no stats (not run, still running, or killed).
    public var shardsMissing: [Int] = []
    /// Shards with a tar or records but no stats to trust: being written, left by a killed run, or with stats that do
    /// not read as theirs (``shardsUntrusted``).
    public var shardsIncomplete: [Int] = []
    /// The stats files that do not mark their shard complete (``ShardCompletion``): `mirror urls` downloads those
    /// shards again. Their shards are among ``shardsIncomplete``.
    public var shardsUntrusted: [UntrustedShardStats] = []
    /// The earliest shard start and the latest shard end (Unix seconds), or `nil` when the stats do not say.
    public var started: Double?
    public var finished: Double?

    /// `mirror status --json`: the tally's counts in the schema every output shares (``Tally/schemaVersion``), beside
    /// the rows and the shards.
    public func json() -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return (try? encoder.encode(JSON(status: self))) ?? Data("{}".utf8)
    }

    /// What ``json()`` writes.
    private struct JSON: Encodable {
        let status: DatasetStatus

        private enum CodingKeys: String, CodingKey {
            case rows, started, finished, shardsDone, shardsMissing, shardsIncomplete, shardsUntrusted, imagesPerSecond
            // Schema 1's names, written beside the new ones for one release.
            case shardsDone1 = "shards_done", shardsMissing1 = "shards_missing", shardsIncomplete1 = "shards_incomplete"
            case shardsUntrusted1 = "shards_untrusted", imagesPerSecond1 = "images_per_second"
        }

        func encode(to encoder: any Encoder) throws {
            try status.tally.encode(to: encoder, keys: .stats)
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(status.rows, forKey: .rows)
            let untrusted = status.shardsUntrusted.map(\.shard)
            try container.encode(status.shardsDone, forKey: .shardsDone)
            try container.encode(status.shardsDone, forKey: .shardsDone1)
            for (key, old, shards) in [(CodingKeys.shardsMissing, CodingKeys.shardsMissing1, status.shardsMissing),
                                       (.shardsIncomplete, .shardsIncomplete1, status.shardsIncomplete), (.shardsUntrusted, .shardsUntrusted1, untrusted)] {
                try container.encode(shards, forKey: key)
                try container.encode(shards, forKey: old)
            }
            try container.encodeIfPresent(status.imagesPerSecond, forKey: .imagesPerSecond)
            try container.encodeIfPresent(status.imagesPerSecond, forKey: .imagesPerSecond1)
            try container.encodeIfPresent(status.started, forKey: .started)
            try container.encodeIfPresent(status.finished, forKey: .finished)
        }
    }

    public init() {}

    /// Saved images over the time from the first shard's start to the last one's end.
    public private(set) var imagesPerSecond: Double?

    /// Sums the stats files (`name` → contents; `nil` for something that is not a regular file) among a listing of
    /// shard file names: those that mark their shard complete (``ShardCompletion``, the rule `mirror urls` follows).
    /// - Throws: what `stats` throws.
    public init<Failure: Error>(names: [String], stats: (String) throws(Failure) -> Data?) throws(Failure) {
        let completion = try ShardCompletion(names: names, stats: stats)
        var hostCopies: Int?
        for number in completion.complete.keys.sorted() {
            let shard = completion.complete[number]!
            add(shard)
            if let copy = shard.copy, copy.split == .host { hostCopies = copy.count }
        }
        let seen = completion.seen
        shardsDone = completion.complete.count
        shardsUntrusted = completion.untrusted.values.sorted { $0.shard < $1.shard }
        // Split by host, copy I numbers its shards I, I+N, I+2N, …: a gap counts only below that copy's highest.
        let stride = hostCopies ?? 1
        var highest: [Int: Int] = [:]
        for number in seen { highest[number % stride] = max(highest[number % stride] ?? 0, number) }
        for (residue, top) in highest {
            shardsMissing += Swift.stride(from: residue, through: top, by: stride).filter { !seen.contains($0) }
        }
        shardsMissing.sort()
        shardsIncomplete = seen.subtracting(completion.complete.keys).sorted()
        if let started, let finished, finished > started {
            imagesPerSecond = Double(tally.saved) / (finished - started)
        }
    }

    private mutating func add(_ shard: ShardStats) {
        rows += shard.rows
        tally += shard.tally
        // To the millisecond, as the files say it (a `Date` counts from 2001, and back from there to 1970 is not exact).
        let seconds = { (date: Date) in (date.timeIntervalSince1970 * 1000).rounded() / 1000 }
        if let start = shard.started.map(seconds) { started = min(started ?? start, start) }
        if let end = shard.finished.map(seconds) { finished = max(finished ?? end, end) }
    }
}
