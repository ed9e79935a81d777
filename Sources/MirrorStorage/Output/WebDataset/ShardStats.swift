import Foundation
import MirrorCore
import MirrorModel

/// What one shard's `NNNNN_stats.json` says: its rows' ``Tally``, and when and by which copy it was written. Read and
/// written through `Codable`, one type for every reader (the shard sink, object storage, `mirror status`).
package struct ShardStats: Codable, Sendable {
    var shard: Int
    var started: Date?
    var finished: Date?
    /// The copy of a sharded job that wrote it.
    var copy: WorkShard?
    /// Rows of the table in the shard.
    package var rows = 0
    /// How they ended.
    package var tally = Tally()
    var seconds = 0.0
    /// The purpose the run matched reservations against, and the signals it set aside (`--ignore-opt-out`).
    var purpose: UsePurpose?
    var ignoredOptOuts: Set<ConsentSignal> = []

    init(shard: Int) {
        self.shard = shard
    }

    /// The most bytes a stats file may hold: mirror writes a few hundred (a count for each failure reason and each
    /// signal that refused a row, of which there are dozens, not thousands).
    static let maximumFileBytes = 64 << 10

    /// The stats in the contents of the stats file (or object) `name`, when they are what mirror writes as shard
    /// `NNNNN`'s completion mark: a JSON object of the stats' fields, naming this shard (or none), at least one row, no
    /// count below zero, and the rows' outcomes adding up to its rows — every row ends in exactly one of `saved`,
    /// `failed`, `invalidRows`, `duplicates`, `nearDuplicates`, `filtered`, `optedOut` and `disallowed` (or their
    /// schema 1 names, `invalid`, `near_duplicates` and `opted_out`, in a file an earlier mirror wrote).
    ///
    /// ``ShardCompletion`` applies it, for every reader.
    static func verified(_ data: Data, name: String) -> Result<ShardStats, UntrustedShardStats> {
        let number = ShardFileName.parse(name)?.number ?? -1
        func untrusted(_ reason: String) -> Result<ShardStats, UntrustedShardStats> {
            .failure(UntrustedShardStats(name: name, shard: number, reason: reason))
        }
        guard data.count <= maximumFileBytes else { return untrusted("\(data.count) bytes, where stats hold a few hundred") }
        let stats: ShardStats
        do {
            stats = try JSONDecoder().decode(ShardStats.self, from: data)
        } catch let error as DecodingError {
            return untrusted(Self.reason(error))
        } catch {
            return untrusted("not JSON")
        }
        if let named = (try? JSONDecoder().decode(NamedShard.self, from: data))?.shard, named != number {
            return untrusted("it names shard \(named)")
        }
        guard stats.rows > 0 else { return untrusted("\(stats.rows) rows") }
        let tally = stats.tally
        let outcomes = [tally.saved, tally.failed, tally.invalid, tally.duplicates, tally.nearDuplicates, tally.filtered, tally.optedOut, tally.disallowed]
        let others = [tally.transient, tally.generated] + Array(tally.failures.values) + Array(tally.refusals.values)
        guard (outcomes + others).allSatisfy({ $0 >= 0 }), tally.bytes >= 0 else { return untrusted("a count below zero") }
        let settled = outcomes.reduce(0) { $0.addingReportingOverflow($1).partialValue }
        guard settled == stats.rows else { return untrusted("its rows' outcomes add up to \(settled), not its \(stats.rows) rows") }
        return .success(stats)
    }

    /// What ``verified(_:name:)`` reads of `shard` (which ``init(from:)`` takes as 0 when it is missing).
    private struct NamedShard: Decodable {
        var shard: Int?
    }

    /// A decoding error as the part of a stats file it found wrong.
    private static func reason(_ error: DecodingError) -> String {
        func field(_ context: DecodingError.Context) -> String {
            "\"" + context.codingPath.map(\.stringValue).joined(separator: ".") + "\""
        }
        switch error {
        case let .dataCorrupted(context):
            return context.codingPath.isEmpty ? "not JSON" : "its \(field(context)) is not valid"
        case let .keyNotFound(key, _):
            return "no \"\(key.stringValue)\""
        case let .typeMismatch(_, context):
            return context.codingPath.isEmpty ? "not a JSON object" : "its \(field(context)) has the wrong type"
        case let .valueNotFound(_, context):
            return context.codingPath.isEmpty ? "empty" : "its \(field(context)) is null"
        @unknown default:
            return "not a shard's stats"
        }
    }

    func json() -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return ((try? encoder.encode(self)) ?? Data("{}".utf8)) + Data("\n".utf8)
    }

    // MARK: Codable

    /// The stats' own keys; the counts' are ``Tally``'s (``Tally/encode(to:keys:)``).
    private enum CodingKeys: String, CodingKey {
        case shard, rows, seconds, started, finished, copy, copies, split, purpose, ignoredOptOuts
        /// Schema 1's name of ``ignoredOptOuts``: written beside it for one release, read always.
        case ignoredOptOuts1 = "ignored_opt_outs"
    }

    package init(from decoder: any Decoder) throws {
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
        tally = try Tally(countsFrom: decoder)
        purpose = (try? container.decodeIfPresent(String.self, forKey: .purpose)).flatMap { $0.flatMap(UsePurpose.init(rawValue:)) }
        let ignored = [CodingKeys.ignoredOptOuts, .ignoredOptOuts1].lazy.compactMap { try? container.decodeIfPresent([String].self, forKey: $0) }.first
        ignoredOptOuts = Set((ignored ?? []).compactMap(ConsentSignal.init(rawValue:)))
    }

    package func encode(to encoder: any Encoder) throws {
        try tally.encode(to: encoder, keys: .stats)
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(shard, forKey: .shard)
        try container.encode(rows, forKey: .rows)
        try container.encode((seconds * 1000).rounded() / 1000, forKey: .seconds)
        try container.encode(((started?.timeIntervalSince1970 ?? 0) * 1000).rounded() / 1000, forKey: .started)
        try container.encode(((finished?.timeIntervalSince1970 ?? 0) * 1000).rounded() / 1000, forKey: .finished)
        try container.encodeIfPresent(purpose?.rawValue, forKey: .purpose)
        if purpose != nil {
            let ignored = ignoredOptOuts.map(\.rawValue).sorted()
            try container.encode(ignored, forKey: .ignoredOptOuts)
            try container.encode(ignored, forKey: .ignoredOptOuts1)
        }
        if let copy {
            try container.encode(copy.index, forKey: .copy)
            try container.encode(copy.count, forKey: .copies)
            try container.encode(copy.split.rawValue, forKey: .split)
        }
    }
}
