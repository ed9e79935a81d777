import Foundation
import MirrorCore

/// What one shard's `NNNNN_stats.json` says: its rows' ``Tally``, and when and by which copy it was written. Read and
/// written through `Codable`, one type for every reader (the shard sink, object storage, `mirror status`).
struct ShardStats: Codable {
    var shard: Int
    var started: Date?
    var finished: Date?
    /// The copy of a sharded job that wrote it.
    var copy: WorkShard?
    /// Rows of the table in the shard.
    var rows = 0
    /// How they ended.
    var tally = Tally()
    var seconds = 0.0
    /// The purpose the run matched reservations against, and the signals it set aside (`--ignore-opt-out`).
    var purpose: UsePurpose?
    var ignoredOptOuts: Set<ConsentSignal> = []

    init(shard: Int) {
        self.shard = shard
    }

    /// The stats in a file's contents, or `nil` when they are not a shard's stats (JSON with `rows` and `saved`).
    static func read(_ data: Data) -> ShardStats? {
        try? JSONDecoder().decode(ShardStats.self, from: data)
    }

    /// The `saved` count of a stats file's contents, or `nil` when it is not a shard's stats.
    static func saved(in data: Data) -> Int? {
        read(data)?.tally.saved
    }

    func json() -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return ((try? encoder.encode(self)) ?? Data("{}".utf8)) + Data("\n".utf8)
    }

    // MARK: Codable

    private enum CodingKeys: String, CodingKey {
        case shard, rows, seconds, started, finished, copy, copies, split, purpose
        case ignoredOptOuts = "ignored_opt_outs"
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        shard = try container.decodeIfPresent(Int.self, forKey: .shard) ?? 0
        rows = try container.decode(Int.self, forKey: .rows)
        seconds = try container.decodeIfPresent(Double.self, forKey: .seconds) ?? 0
        // Unix seconds; 0 for a time not known.
        let time = { (key: CodingKeys) in try container.decodeIfPresent(Double.self, forKey: key).flatMap { $0 > 0 ? Date(timeIntervalSince1970: $0) : nil } }
        started = try time(.started)
        finished = try time(.finished)
        if let index = try container.decodeIfPresent(Int.self, forKey: .copy), let count = try container.decodeIfPresent(Int.self, forKey: .copies),
           count > 0, (0..<count).contains(index) {
            let split = try container.decodeIfPresent(String.self, forKey: .split).flatMap(WorkShard.Split.init(rawValue:)) ?? .row
            copy = WorkShard(index: index, count: count, split: split)
        }
        tally = Tally(counts: try Tally.Counts(from: decoder))
        purpose = (try? container.decodeIfPresent(String.self, forKey: .purpose)).flatMap { $0.flatMap(UsePurpose.init(rawValue:)) }
        ignoredOptOuts = Set(((try? container.decodeIfPresent([String].self, forKey: .ignoredOptOuts)) ?? nil ?? []).compactMap(ConsentSignal.init(rawValue:)))
    }

    func encode(to encoder: any Encoder) throws {
        try tally.counts.encode(to: encoder)
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(shard, forKey: .shard)
        try container.encode(rows, forKey: .rows)
        try container.encode((seconds * 1000).rounded() / 1000, forKey: .seconds)
        try container.encode(((started?.timeIntervalSince1970 ?? 0) * 1000).rounded() / 1000, forKey: .started)
        try container.encode(((finished?.timeIntervalSince1970 ?? 0) * 1000).rounded() / 1000, forKey: .finished)
        try container.encodeIfPresent(purpose?.rawValue, forKey: .purpose)
        if purpose != nil { try container.encode(ignoredOptOuts.map(\.rawValue).sorted(), forKey: .ignoredOptOuts) }
        if let copy {
            try container.encode(copy.index, forKey: .copy)
            try container.encode(copy.count, forKey: .copies)
            try container.encode(copy.split.rawValue, forKey: .split)
        }
    }
}
