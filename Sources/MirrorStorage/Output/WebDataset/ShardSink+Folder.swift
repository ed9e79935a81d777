import Foundation
import MirrorCore

/// The folder: which shards are complete, what a killed run left, and the shard size the folder was made with.
extension ShardSink {
    /// Which of this copy's shards are complete (``ShardCompletion``); the files of its other shards (a killed run's, or
    /// one whose stats are not to be trusted) are removed. Other copies' shards are left alone, complete or not.
    /// - Throws: ``FileError`` when a stats file cannot be read.
    static func completion(in directory: URL, owned: (Int) -> Bool) throws(FileError) -> ShardCompletion {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        let completion = try ShardCompletion(names: names, including: owned) { name throws(FileError) in
            try ShardCompletion.readStats(at: directory.appendingPathComponent(name))
        }
        removeShardFiles(in: directory) { owned($0) && completion.complete[$0] == nil }
        return completion
    }

    /// Removes the `.tar` and `.jsonl` (and stats) files of the shard numbers `matching` says.
    static func removeShardFiles(in directory: URL, matching: (Int) -> Bool) {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        for name in names {
            if let (number, _) = ShardFileName.parse(name), matching(number) {
                AtomicFile.remove(directory.appendingPathComponent(name))
            }
        }
    }

    static func checkShardSize(_ configuration: Configuration, settings: URL) throws {
        if let data = try? Data(contentsOf: settings),
           let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
           let existing = object["shard_size"] as? Int {
            guard existing == configuration.shardSize else {
                throw ShardSizeMismatch(existing: existing, requested: configuration.shardSize, directory: configuration.directory.path)
            }
            return
        }
        try AtomicFile.writeFile(Data(#"{"shard_size":\#(configuration.shardSize)}"#.utf8), to: settings, sync: configuration.isSyncEnabled)
    }
}

extension ShardSink.Configuration {
    /// Whether shard number `number` is this copy's to write.
    package func owns(_ number: Int) -> Bool {
        guard let shard else { return true }
        return number % shard.count == shard.index
    }

    /// The file number of this copy's `index`-th shard (counting by ``ShardSink/position(of:)``).
    package func number(ofShard index: Int) -> Int {
        guard let shard, shard.split == .host else { return index }
        return index * shard.count + shard.index
    }

    /// The inverse of ``number(ofShard:)`` for a number this copy owns.
    package func index(ofShard number: Int) -> Int? {
        guard owns(number) else { return nil }
        guard let shard, shard.split == .host else { return number }
        return number / shard.count
    }
}
