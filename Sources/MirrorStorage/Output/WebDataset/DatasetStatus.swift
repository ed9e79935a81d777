import Foundation
import MirrorCore

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
    /// Shards with a tar or records but no stats: being written, or left by a killed run.
    public var shardsIncomplete: [Int] = []
    /// The earliest shard start and the latest shard end (Unix seconds), or `nil` when the stats do not say.
    public var started: Double?
    public var finished: Double?

    /// `mirror status --json`: the tally's counts named as the stats files name them, beside the rows and the shards.
    public func json() -> Data {
        var object = tally.statsFields
        object.merge([
            "rows": rows, "shards_done": shardsDone, "shards_missing": shardsMissing, "shards_incomplete": shardsIncomplete,
        ]) { $1 }
        if let started { object["started"] = started }
        if let finished { object["finished"] = finished }
        if let imagesPerSecond { object["images_per_second"] = imagesPerSecond }
        return (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data("{}".utf8)
    }

    public init() {}

    /// Saved images over the time from the first shard's start to the last one's end.
    public private(set) var imagesPerSecond: Double?

    /// Sums the stats files (`name` → contents) among a listing of shard file names.
    /// - Throws: ``Unreadable`` naming the first stats file that is not a stats object.
    public init(names: [String], stats: (String) throws -> Data) throws {
        var done = Set<Int>()
        var seen = Set<Int>()
        var hostCopies: Int?
        for name in names {
            guard let (number, kind) = ShardFileName.parse(name) else { continue }
            seen.insert(number)
            guard kind == .stats else { continue }
            let data = try stats(name)
            guard let object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any], object["rows"] != nil else {
                throw Unreadable(name: name)
            }
            done.insert(number)
            add(object)
            if object["split"] as? String == "host", let copies = (object["copies"] as? NSNumber)?.intValue, copies > 0 {
                hostCopies = copies
            }
        }
        shardsDone = done.count
        // Split by host, copy I numbers its shards I, I+N, I+2N, …: a gap counts only below that copy's highest.
        let stride = hostCopies ?? 1
        var highest: [Int: Int] = [:]
        for number in seen { highest[number % stride] = max(highest[number % stride] ?? 0, number) }
        for (residue, top) in highest {
            shardsMissing += Swift.stride(from: residue, through: top, by: stride).filter { !seen.contains($0) }
        }
        shardsMissing.sort()
        shardsIncomplete = seen.subtracting(done).sorted()
        if let started, let finished, finished > started {
            imagesPerSecond = Double(tally.saved) / (finished - started)
        }
    }

    /// A stats file that does not parse.
    public struct Unreadable: Error, Sendable, CustomStringConvertible {
        public var name: String
        public var description: String { "\(name) is not a shard's stats (JSON with rows, saved, …)" }
    }

    private mutating func add(_ object: [String: Any]) {
        rows += (object["rows"] as? NSNumber)?.intValue ?? 0
        tally += Tally(stats: object)
        if let start = (object["started"] as? NSNumber)?.doubleValue, start > 0 { started = min(started ?? start, start) }
        if let end = (object["finished"] as? NSNumber)?.doubleValue, end > 0 { finished = max(finished ?? end, end) }
    }
}
