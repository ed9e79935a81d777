import Foundation
import MirrorCore
import MirrorModel

/// Writing: one shard's tar, records and stats (the stats last), locally or into object storage, and `sizes.json`.
extension ShardSink {
    /// The name of the file that lists each shard's samples.
    public static let sizesFileName = "sizes.json"

    var hasSizesFile: Bool {
        if let store = configuration.store { return store.hasSizesFile }
        return FileManager.default.fileExists(atPath: configuration.directory.appendingPathComponent(Self.sizesFileName).path)
    }

    /// Writes `sizes.json` from every complete shard's stats: those this run wrote (`known`), the others read back.
    func writeSizes(known: [Int: Int]) throws {
        var sizes = known
        if let store = configuration.store {
            sizes = try store.sampleCounts(known: known)
        } else {
            // Other copies' shards, by the one rule (a stats file that cannot be read now counts no samples).
            let directory = configuration.directory
            let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
            let others = ShardCompletion(names: names, including: { known[$0] == nil }) { name in
                (try? ShardCompletion.readStats(at: directory.appendingPathComponent(name))) ?? nil
            }
            for (number, stats) in others.complete { sizes[number] = stats.tally.saved }
        }
        let object = Dictionary(uniqueKeysWithValues: sizes.map { (ShardFileName.name(of: $0.key, .tar), $0.value) })
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data("{}".utf8)
        let directory = configuration.store == nil ? configuration.directory : hidden
        let file = directory.appendingPathComponent(Self.sizesFileName)
        try AtomicFile.replaceFile(data + Data("\n".utf8), at: file)  // copies finishing together each write it whole
        if let store = configuration.store {
            try store.deliver([file])
            AtomicFile.remove(file)
        }
    }

    /// Writes shard `index`: its tar, its records, then its stats; with a store, uploads the three in that order.
    /// - Returns: how its rows ended.
    func write(index: Int, shard: OpenShard) throws -> Tally {
        let directory = configuration.store == nil ? configuration.directory : hidden
        let number = configuration.number(ofShard: index)
        let sync = configuration.isSyncEnabled && configuration.store == nil
        var stats = ShardStats(shard: number)
        stats.copy = configuration.shard
        (stats.purpose, stats.ignoredOptOuts) = (configuration.purpose, configuration.ignoredOptOuts)
        stats.started = shard.startedAt
        var lines = Data()
        let files = [ShardFileName.Kind.tar, .records, .stats].map { directory.appendingPathComponent(ShardFileName.name(of: number, $0)) }
        let tar = try TarWriter(destination: files[0], staging: hidden)
        for position in shard.rows.keys.sorted() {
            stats.rows += 1
            switch shard.rows[position]! {
            case let .saved(image, record):
                stats.tally.count(.saved(record, source: image.source))
            case let .settled(_, _, outcome):
                stats.tally.count(outcome)
            }
            lines.append(try append(shard.rows[position]!, at: position, to: tar))
        }
        try tar.commit(sync: sync)
        try AtomicFile.writeFile(lines, to: files[1], sync: sync, staging: hidden)
        if let store = configuration.store {
            try store.deliver(Array(files[..<2]))
            stats.finished = Date()
            stats.seconds = (ContinuousClock.now - shard.started).seconds
            try AtomicFile.writeFile(stats.json(), to: files[2], sync: false, staging: hidden)
            try store.deliver(Array(files[2...]))  // last: the stats object marks the shard complete
            for file in files { AtomicFile.remove(file) }
        } else {
            stats.finished = Date()
            stats.seconds = (ContinuousClock.now - shard.started).seconds
            try AtomicFile.writeFile(stats.json(), to: files[2], sync: sync, staging: hidden)
            if sync { try AtomicFile.syncDirectory(directory) }
        }
        for case let .saved(image, _) in shard.rows.values { AtomicFile.remove(image.temporaryFile) }
        return stats.tally
    }

    /// Adds a saved row's sample (image, record, caption) to `tar`; returns the row's line of the records.
    func append(_ row: Row, at position: Int, to tar: TarWriter) throws -> Data {
        switch row {
        case let .saved(image, record):
            let key = record.key ?? String(position)
            let contents: Data
            do {
                contents = try Data(contentsOf: image.temporaryFile)
            } catch {
                throw FileError(operation: "read", path: image.temporaryFile.path, code: EIO)
            }
            var json = (try? record.jsonLine()) ?? Data("{}\n".utf8)
            json.removeLast()
            try tar.add(record.file, contents: contents, modified: image.fetchedAt)
            try tar.add(key + ".json", contents: json, modified: image.fetchedAt)
            if let caption = record.caption {
                try tar.add(key + ".txt", contents: Data(caption.utf8), modified: image.fetchedAt)
            }
            return ShardRecordLine.saved(json)
        case let .settled(url, provenance, outcome):
            return ShardRecordLine.settled(url: url, provenance: provenance, outcome: outcome)
        }
    }
}
