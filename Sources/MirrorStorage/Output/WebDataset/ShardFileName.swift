import Foundation
import MirrorCore

/// The names of a shard's files: `NNNNN.tar`, `NNNNN.jsonl`, `NNNNN_stats.json`.
public enum ShardFileName {
    public enum Kind: Sendable { case tar, records, stats }

    /// The shard number and kind of a file name, or `nil` for another file.
    public static func parse(_ name: String) -> (number: Int, kind: Kind)? {
        let split: (Substring, Kind)?
        if name.hasSuffix("_stats.json") { split = (name.dropLast(11), .stats) }
        else if name.hasSuffix(".tar") { split = (name.dropLast(4), .tar) }
        else if name.hasSuffix(".jsonl") { split = (name.dropLast(6), .records) }
        else { split = nil }
        guard let (stem, kind) = split, stem.count >= 5, stem.allSatisfy(\.isASCII), let number = Int(stem), number >= 0 else { return nil }
        return (number, kind)
    }

    /// The file name of shard `number`'s file of `kind` (`00042.tar`; wider past 99,999).
    public static func name(of number: Int, _ kind: Kind) -> String {
        let stem = zeroPadded(number, width: 5)
        switch kind {
        case .tar: return stem + ".tar"
        case .records: return stem + ".jsonl"
        case .stats: return stem + "_stats.json"
        }
    }

}
