import Foundation
import MirrorStorage
import MirrorSync

/// WebDataset shards in object storage: `s3://BUCKET/PREFIX/NNNNN.tar`, `.jsonl`, then `NNNNN_stats.json`, which is
/// uploaded last and so marks the shard complete — on any machine that lists the prefix.
///
/// Opening lists the prefix, which proves the credentials and the bucket before anything is downloaded, and reads this
/// copy's stats objects to know which of its shards are complete (``ShardCompletion``: the rule a folder follows); it
/// then aborts the multipart uploads a killed run of this copy left, and deletes the objects of this copy's incomplete
/// shards (a tar whose stats never came, or stats not to be trusted: the stats object first), so that a rerun leaves
/// neither a partial nor an orphaned upload behind.
public final class S3ShardStore: ShardStore {
    public let client: S3Client
    /// Which of this copy's shards are complete, with their stats (what the dataset holds and lacks), and which had
    /// stats not to be trusted (their objects are deleted: the shards are written again).
    package let completion: ShardCompletion
    /// The records of the complete shards that have rows to retry (with `retry`), by number.
    package let records: [Int: Data]
    /// Whether `sizes.json` was there when the store was opened.
    package let hasSizesFile: Bool

    /// Shard numbers of this copy whose stats object marks them complete.
    public var completeShards: Set<Int> { completion.completeShards }

    private init(client: S3Client, completion: ShardCompletion, records: [Int: Data], hasSizesFile: Bool) {
        self.client = client
        self.completion = completion
        self.records = records
        self.hasSizesFile = hasSizesFile
    }

    /// Opens the destination for the shard numbers `owns` accepts (this copy's), and reads their stats (and, for
    /// `retry`, the records of the shards whose stats count rows it retries).
    /// - Throws: ``ObjectStoreError``: rejected credentials, a missing bucket, an unreachable store.
    public static func open(client: S3Client, retry: RetryFailed? = nil, owns: @Sendable (Int) -> Bool) async throws(ObjectStoreError) -> S3ShardStore {
        let location = client.location
        // moto refuses to verify a listing whose prefix holds an encoded slash: list by the prefix alone, keep the
        // names directly under it.
        let names = try await client.listObjects(prefix: location.prefix).compactMap { location.name(ofKey: $0.key) }
        let statsNames = names.filter { ShardFileName.parse($0).map { $0.kind == .stats && owns($0.number) } ?? false }
        let stats = try await fetch(statsNames, from: client)
        let completion = ShardCompletion(names: names, including: owns) { name in
            ShardFileName.parse(name).flatMap { stats[$0.number] } ?? Data()
        }
        for upload in try await client.listUploads(prefix: location.prefix) {
            guard let name = location.name(ofKey: upload.key), let (number, _) = ShardFileName.parse(name), owns(number) else { continue }
            try await client.abort(upload)
        }
        // An incomplete shard's stats object first: from then on every reader sees the shard as a killed run's.
        let incomplete = names.filter { name in
            guard let (number, _) = ShardFileName.parse(name), owns(number) else { return false }
            return completion.complete[number] == nil
        }
        for name in incomplete.sorted(by: { ($0.hasSuffix("_stats.json") ? 0 : 1, $0) < ($1.hasSuffix("_stats.json") ? 0 : 1, $1) }) {
            try await client.delete(key: location.key(name))
        }
        var retried: [String] = []
        if let retry {
            for (number, shard) in completion.complete where retry.hasRows(in: shard.tally, rows: shard.rows) {
                retried.append(ShardFileName.name(of: number, .records))
            }
        }
        let records = try await fetch(retried, from: client)
        return S3ShardStore(client: client, completion: completion, records: records, hasSizesFile: names.contains(ShardSink.sizesFileName))
    }

    /// The objects `names` (shard files), eight at a time, by shard number.
    private static func fetch(_ names: [String], from client: S3Client) async throws(ObjectStoreError) -> [Int: Data] {
        do {
            return try await withThrowingTaskGroup(of: (Int, Data).self) { group in
                var found: [Int: Data] = [:]
                var queue = names[...]
                func start() {
                    guard let name = queue.popFirst(), let (number, _) = ShardFileName.parse(name) else { return }
                    group.addTask { (number, try await client.get(key: client.location.key(name))) }
                }
                for _ in 0..<8 { start() }
                while let (number, data) = try await group.next() {
                    found[number] = data
                    start()
                }
                return found
            }
        } catch let error as ObjectStoreError {
            throw error
        } catch {
            throw ObjectStoreError.failed(operation: "get", key: client.location.prefix, reason: String(describing: error), transient: true)
        }
    }

    /// The object `name` under the prefix; blocks the calling thread (the shard writer's).
    package func fetch(_ name: String) throws(ObjectStoreError) -> Data {
        let client = self.client
        let data = Locked(Data())
        try Self.blocking { () async throws(ObjectStoreError) in
            let contents = try await client.get(key: client.location.key(name))
            data.withLock { $0 = contents }
        }
        return data.withLock { $0 }
    }

    /// The object `name` under the prefix written into `file`; blocks the calling thread (the shard writer's).
    package func fetch(_ name: String, into file: URL) throws(ObjectStoreError) {
        let contents = try fetch(name)
        do {
            try contents.write(to: file)
        } catch {
            throw ObjectStoreError.failed(operation: "get", key: name, reason: "cannot write \(file.path): \(error.localizedDescription)", transient: false)
        }
    }

    /// The samples of every complete shard under the prefix (any copy's): `known` as given, the others from their
    /// stats objects. Blocks the calling thread (the shard writer's).
    package func sampleCounts(known: [Int: Int]) throws(ObjectStoreError) -> [Int: Int] {
        let client = self.client
        let counts = Locked(known)
        try Self.blocking { () async throws(ObjectStoreError) in
            let location = client.location
            let names = try await client.listObjects(prefix: location.prefix).compactMap { location.name(ofKey: $0.key) }
            // Other copies' shards, by the one rule.
            var stats: [String: Data] = [:]
            for name in names where ShardFileName.parse(name).map({ $0.kind == .stats && known[$0.number] == nil }) ?? false {
                stats[name] = try await client.get(key: location.key(name))
            }
            let others = ShardCompletion(names: names, including: { known[$0] == nil }) { stats[$0] ?? Data() }
            counts.withLock { counts in
                for (number, shard) in others.complete { counts[number] = shard.tally.saved }
            }
        }
        return counts.withLock { $0 }
    }

    /// Uploads shard files, in order, each under its own name; blocks the calling thread (the shard writer's).
    package func deliver(_ files: [URL]) throws(ObjectStoreError) {
        for file in files {
            let name = file.lastPathComponent
            let type = name.hasSuffix(".tar") ? "application/x-tar" : name.hasSuffix(".jsonl") ? "application/x-ndjson" : "application/json"
            let key = client.location.key(name)
            let client = self.client
            try Self.blocking { () async throws(ObjectStoreError) in
                try await client.put(file: file, key: key, contentType: type)
            }
        }
    }

    /// Runs async work to its end from a thread that may block (not a Swift concurrency thread).
    private static func blocking(_ work: @escaping @Sendable () async throws(ObjectStoreError) -> Void) throws(ObjectStoreError) {
        let result = Locked<Result<Void, ObjectStoreError>?>(nil)
        let done = DispatchSemaphore(value: 0)
        Task {
            do throws(ObjectStoreError) {
                try await work()
                result.withLock { $0 = .success(()) }
            } catch {
                result.withLock { $0 = .failure(error) }
            }
            done.signal()
        }
        done.wait()
        try result.withLock { $0 }!.get()
    }
}
