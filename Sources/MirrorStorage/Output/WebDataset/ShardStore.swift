import Foundation

/// Where a ``ShardSink`` delivers its shards when they do not stay in its folder: object storage (`S3ShardStore`, in
/// MirrorObjectStore, which this layer does not import). The sink assembles each shard in its local state folder and
/// hands the files over in order — tar, records, then stats, the stats last, as they mark the shard complete.
///
/// The sink calls it from its writer thread, which may block; every call returns once the store holds what it was given.
package protocol ShardStore: Sendable {
    /// Which of this copy's shards were complete when the store was opened (the rule a folder follows).
    var completion: ShardCompletion { get }
    /// The records of the complete shards that have rows to retry, by shard number.
    var records: [Int: Data] { get }
    /// Whether `sizes.json` was there when the store was opened.
    var hasSizesFile: Bool { get }
    /// The shard file `name`.
    func fetch(_ name: String) throws -> Data
    /// The shard file `name`, written into `file`.
    func fetch(_ name: String, into file: URL) throws
    /// The samples of every complete shard in the store (any copy's): `known` as given, the others from their stats.
    func sampleCounts(known: [Int: Int]) throws -> [Int: Int]
    /// Stores `files`, in order, each under its own name.
    func deliver(_ files: [URL]) throws
}
