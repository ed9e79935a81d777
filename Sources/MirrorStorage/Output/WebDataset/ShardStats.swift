import Foundation
import MirrorCore

/// What one shard's `NNNNN_stats.json` says.
struct ShardStats {
    package var shard: Int
    package var started: Date?
    package var finished: Date?
    /// The copy of a sharded job that wrote it.
    package var copy: WorkShard?
    package var rows = 0
    package var saved = 0
    package var failed = 0
    package var failures: [String: Int] = [:]
    package var invalid = 0
    package var duplicates = 0
    package var filtered = 0
    package var optedOut = 0
    package var disallowed = 0
    package var bytes: Int64 = 0
    package var seconds = 0.0

    init(shard: Int) {
        self.shard = shard
    }

    /// The `saved` count of a stats file's contents, or `nil` when it is not a shard's stats.
    package static func saved(in data: Data) -> Int? {
        guard let object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] else { return nil }
        return (object["saved"] as? NSNumber)?.intValue
    }

    package mutating func count(_ outcome: SettledOutcome) {
        switch outcome {
        case .invalid: invalid += 1
        case let .failed(reason, _, _):
            failed += 1
            failures[reason, default: 0] += 1
        case .filtered: filtered += 1
        case let .refused(reason, _):
            if reason == "disallowed" { disallowed += 1 } else { optedOut += 1 }
        case .duplicate: duplicates += 1
        }
    }

    package func json() -> Data {
        var object: [String: Any] = [
            "shard": shard, "rows": rows, "saved": saved, "failed": failed, "failures": failures, "invalid": invalid,
            "duplicates": duplicates, "filtered": filtered, "opted_out": optedOut, "disallowed": disallowed,
            "bytes": bytes, "seconds": (seconds * 1000).rounded() / 1000,
            "started": ((started?.timeIntervalSince1970 ?? 0) * 1000).rounded() / 1000,
            "finished": ((finished?.timeIntervalSince1970 ?? 0) * 1000).rounded() / 1000,
        ]
        if let copy {
            object["copy"] = copy.index
            object["copies"] = copy.count
            object["split"] = copy.split.rawValue
        }
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
        return data + Data("\n".utf8)
    }
}
