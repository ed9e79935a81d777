import Foundation
import MirrorCore
import MirrorTransport

/// WebDataset shards in object storage: `s3://BUCKET/PREFIX/NNNNN.tar`, `.jsonl`, then `NNNNN_stats.json`, which is
/// uploaded last and so marks the shard complete — on any machine that lists the prefix.
///
/// Opening lists the prefix, which proves the credentials and the bucket before anything is downloaded; it then
/// aborts the multipart uploads a killed run of this copy left, and deletes the objects of this copy's incomplete
/// shards (a tar whose stats never came), so that a rerun leaves neither a partial nor an orphaned upload behind.
public final class S3ShardStore: Sendable {
    public let client: S3Client
    /// Shard numbers whose stats object exists.
    public let completeShards: Set<Int>
    /// Whether `sizes.json` was there when the store was opened.
    let hasSizesFile: Bool

    private init(client: S3Client, completeShards: Set<Int>, hasSizesFile: Bool) {
        self.client = client
        self.completeShards = completeShards
        self.hasSizesFile = hasSizesFile
    }

    /// Opens the destination for the shard numbers `owns` accepts (this copy's).
    /// - Throws: ``ObjectStoreError``: rejected credentials, a missing bucket, an unreachable store.
    public static func open(client: S3Client, owns: @Sendable (Int) -> Bool) async throws(ObjectStoreError) -> S3ShardStore {
        let location = client.location
        // moto refuses to verify a listing whose prefix holds an encoded slash: list by the prefix alone, keep the
        // names directly under it.
        let names = try await client.listObjects(prefix: location.prefix).compactMap { location.name(ofKey: $0.key) }
        let complete = ShardFileName.completeShards(among: names).filter(owns)
        for upload in try await client.listUploads(prefix: location.prefix) {
            guard let name = location.name(ofKey: upload.key), let (number, _) = ShardFileName.parse(name), owns(number) else { continue }
            try await client.abort(upload)
        }
        for name in names {
            guard let (number, kind) = ShardFileName.parse(name), kind != .stats, owns(number), !complete.contains(number) else { continue }
            try await client.delete(key: location.key(name))
        }
        return S3ShardStore(client: client, completeShards: complete, hasSizesFile: names.contains(ShardSink.sizesFileName))
    }

    /// The samples of every complete shard under the prefix (any copy's): `known` as given, the others from their
    /// stats objects. Blocks the calling thread (the shard writer's).
    func sampleCounts(known: [Int: Int]) throws(ObjectStoreError) -> [Int: Int] {
        let client = self.client
        let counts = Locked(known)
        try Self.blocking { () async throws(ObjectStoreError) in
            let location = client.location
            let names = try await client.listObjects(prefix: location.prefix).compactMap { location.name(ofKey: $0.key) }
            for number in ShardFileName.completeShards(among: names) where counts.withLock({ $0[number] == nil }) {
                let data = try await client.get(key: location.key(ShardFileName.name(of: number, .stats)))
                if let saved = ShardStats.saved(in: data) { counts.withLock { $0[number] = saved } }
            }
        }
        return counts.withLock { $0 }
    }

    /// Uploads shard files, in order, each under its own name; blocks the calling thread (the shard writer's).
    package func deliver(_ files: some Collection<URL>) throws(ObjectStoreError) {
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
