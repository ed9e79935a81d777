import Foundation
import MirrorCore

/// What one shard's `NNNNN_stats.json` says: its rows' ``Tally``, and when and by which copy it was written.
struct ShardStats {
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

    init(shard: Int) {
        self.shard = shard
    }

    /// The `saved` count of a stats file's contents, or `nil` when it is not a shard's stats.
    static func saved(in data: Data) -> Int? {
        guard let object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any], object["saved"] != nil else { return nil }
        return Tally(stats: object).saved
    }

    func json() -> Data {
        var object = tally.statsFields
        object.merge([
            "shard": shard, "rows": rows, "seconds": (seconds * 1000).rounded() / 1000,
            "started": ((started?.timeIntervalSince1970 ?? 0) * 1000).rounded() / 1000,
            "finished": ((finished?.timeIntervalSince1970 ?? 0) * 1000).rounded() / 1000,
        ]) { $1 }
        if let copy {
            object["copy"] = copy.index
            object["copies"] = copy.count
            object["split"] = copy.split.rawValue
        }
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
        return data + Data("\n".utf8)
    }
}
