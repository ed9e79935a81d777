import Foundation
import MirrorCore
import MirrorModel

/// `--retry-failed`: the failed rows of complete shards downloaded again, and each shard that gains a sample written
/// anew, whole: its tar (the old samples and the new ones, in row order), its records, then its stats — in the folder
/// by `rename(2)`, in object storage by uploading the three in that order. A shard none of whose retried rows gained
/// a sample is not touched.
extension ShardSink {
    /// A complete shard whose failed rows this run downloads again.
    struct RetriedShard {
        /// Positions (``ShardSink/position(of:)``) still to settle.
        var pending: Set<Int>
        /// How the retried rows ended this time, by position.
        var rows: [Int: Row] = [:]
        let started = ContinuousClock.now
        let startedAt = Date()

        /// The rows of shard `index` that `scope` retries, from its records (read only when its stats say some row
        /// may be retried); `nil` when there are none.
        init?(index: Int, shardSize: Int, scope: RetryFailed, stats: Tally, rows: Int, records: () -> Data?) {
            guard scope.hasRows(in: stats, rows: rows), let records = records() else { return nil }
            let base = index * shardSize
            pending = []
            for (offset, line) in ShardSink.lines(of: records).enumerated() {
                if let outcome = ShardRecordLine.outcome(of: line, readingRecords: false), scope.retries(outcome) { pending.insert(base + offset) }
            }
            guard !pending.isEmpty else { return nil }
        }
    }

    /// The lines of a records file, without their newlines.
    static func lines(of records: Data) -> [Data] {
        records.split(separator: UInt8(ascii: "\n")).map { Data($0) }
    }

    /// Writes shard `index` anew when one of its retried rows gained a sample; otherwise leaves it as it is.
    func enqueue(index: Int, retried: RetriedShard) {
        guard retried.rows.values.contains(where: { if case .saved = $0 { true } else { false } }) else { return }
        writer.submit { [self] in
            do {
                let tally = try rewrite(index: index, retried: retried)
                state.withLock {
                    $0.rewritten += 1
                    $0.tallies[index] = tally
                }
            } catch {
                state.withLock { $0.failure = $0.failure ?? error }
            }
            for case let .saved(image, _) in retried.rows.values { AtomicFile.remove(image.temporaryFile) }
        }
    }

    /// Merges the retried rows into shard `index` and replaces its files, the stats last.
    /// - Returns: how its rows ended now.
    func rewrite(index: Int, retried: RetriedShard) throws -> Tally {
        let number = configuration.number(ofShard: index)
        let store = configuration.store
        let directory = store == nil ? configuration.directory : hidden
        let sync = configuration.isSyncEnabled && store == nil
        let files = [ShardFileName.Kind.tar, .records, .stats].map { directory.appendingPathComponent(ShardFileName.name(of: number, $0)) }

        // The shard as it is: in the folder, or fetched from the store into this copy's state folder.
        var oldTar = files[0]
        var fetched: URL?
        let oldRecords: Data
        if let store {
            let temporary = try AtomicFile.makeTemporary(in: hidden)
            close(temporary.descriptor)
            fetched = temporary.url
            try store.fetch(ShardFileName.name(of: number, .tar), into: temporary.url)
            oldTar = temporary.url
            oldRecords = try store.fetch(ShardFileName.name(of: number, .records))
        } else {
            do {
                oldRecords = try Data(contentsOf: files[1])
            } catch {
                throw FileError(operation: "read", path: files[1].path, code: EIO)
            }
        }
        defer { if let fetched { AtomicFile.remove(fetched) } }

        var lines = Self.lines(of: oldRecords)
        let base = index * configuration.shardSize
        for position in retried.rows.keys where position - base >= lines.count {
            throw FileError(operation: "read", path: files[1].path, code: EILSEQ)  // records shorter than the shard
        }
        func key(_ position: Int) -> String {
            switch retried.rows[position]! {
            case let .saved(_, record): record.key ?? String(position)
            case let .settled(_, provenance, _): provenance.key ?? String(position)
            }
        }
        let retriedKeys = Set(retried.rows.keys.map(key))
        // Samples go in row order: the new ones are placed among the old by their keys (row numbers).
        let additions = retried.rows.keys.filter { if case .saved = retried.rows[$0]! { true } else { false } }.sorted()
        var next = 0
        let tar = try TarWriter(destination: files[0], staging: hidden)
        try TarReader.forEachFile(in: oldTar) { name, contents, modified in
            let member = String(name.prefix { $0 != "." })
            guard !retriedKeys.contains(member) else { return true }  // left by a rewrite that was killed before its stats
            while next < additions.count, Self.order(key(additions[next])) < Self.order(member) {
                lines[additions[next] - base] = try append(retried.rows[additions[next]]!, at: additions[next], to: tar)
                next += 1
            }
            try tar.add(name, contents: contents, modified: modified)
            return true
        }
        for position in additions[next...] {
            lines[position - base] = try append(retried.rows[position]!, at: position, to: tar)
        }
        for (position, row) in retried.rows {
            if case .settled = row { lines[position - base] = try append(row, at: position, to: tar) }
        }

        var stats = ShardStats(shard: number)
        stats.copy = configuration.shard
        (stats.purpose, stats.ignoredOptOuts) = (configuration.purpose, configuration.ignoredOptOuts)
        stats.started = retried.startedAt
        stats.rows = lines.count
        for line in lines { ShardRecordLine.outcome(of: line).map { stats.tally.count($0) } }
        var records = Data()
        for line in lines { records.append(line.last == UInt8(ascii: "\n") ? line : line + Data("\n".utf8)) }

        try tar.commit(sync: sync, replacing: true)
        try AtomicFile.replaceFile(records, at: files[1], sync: sync, staging: hidden)
        stats.finished = Date()
        stats.seconds = (ContinuousClock.now - retried.started).seconds
        try AtomicFile.replaceFile(stats.json(), at: files[2], sync: sync, staging: hidden)
        if let store {
            try store.deliver(Array(files[..<2]))
            try store.deliver(Array(files[2...]))  // last: a reader that sees the new stats sees the new tar
            for file in files { AtomicFile.remove(file) }
        } else if sync {
            try AtomicFile.syncDirectory(directory)
        }
        return stats.tally
    }

    /// How keys sort in a shard: table rows by number.
    private static func order(_ key: String) -> (Int, String) {
        (Int(key) ?? Int.max, key)
    }
}
