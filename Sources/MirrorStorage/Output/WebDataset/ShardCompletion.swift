import Foundation
import MirrorCore

/// Which shards of a folder (or an object-storage prefix) are complete: the one place that decides it, for `mirror urls`
/// (``ShardSink``, in a folder or through ``S3ShardStore``), `mirror status` (``DatasetStatus``) and `sizes.json`.
///
/// A shard is complete exactly when its stats file exists and reads as its stats (``ShardStats/verified(_:name:)``).
/// The stats are written last — after the tar and the records, each whole (temporary name, fsync, link; in object
/// storage, uploaded in that order) — as the shard's completion mark, so mirror never leaves stats that do not read:
/// such a file was cut by a copy, corrupted on the disk, edited by hand or put there by something else. Then nothing
/// says that the tar and the records beside it are whole, or this shard's. So the shard counts as not complete, as a
/// shard with no stats does: `mirror urls` removes its files and downloads its rows again (from the disk cache where it
/// has them), saying which file it did not trust; `mirror status` counts it incomplete and names the file. Stopping the
/// run instead would leave the user to delete the file by hand, only for the same redo to follow; trusting it would
/// skip the shard's rows as already there and report a dataset with a hole as done.
package struct ShardCompletion: Sendable {
    /// The complete shards' stats, by shard number.
    package private(set) var complete: [Int: ShardStats] = [:]
    /// The shards whose stats file is there but not to be trusted, by shard number: not complete.
    package private(set) var untrusted: [Int: UntrustedShardStats] = [:]
    /// Every shard number with a file among the names (tar, records or stats), complete or not.
    package private(set) var seen: Set<Int> = []

    /// Decides for the shards among `names` (file or object names) that `including` accepts, reading each one's stats
    /// with `stats` (given the stats file's name; `nil` for something that is not a regular file: a symbolic link, a
    /// folder).
    /// - Throws: what `stats` throws (a file that cannot be read says nothing of the shard: the caller stops).
    package init<Failure: Error>(
        names: some Sequence<String>, including: (Int) -> Bool = { _ in true }, stats: (String) throws(Failure) -> Data?
    ) throws(Failure) {
        for name in names {
            guard let (number, kind) = ShardFileName.parse(name), including(number) else { continue }
            seen.insert(number)
            guard kind == .stats else { continue }
            guard let contents = try stats(name) else {
                untrusted[number] = UntrustedShardStats(name: name, shard: number, reason: "not a regular file")
                continue
            }
            switch ShardStats.verified(contents, name: name) {
            case let .success(shard): complete[number] = shard
            case let .failure(problem): untrusted[number] = problem
            }
        }
    }

    /// The numbers of the complete shards.
    package var completeShards: Set<Int> { Set(complete.keys) }

    /// The contents of the stats file `url`, read up to one byte past the most a stats file may hold (so that a huge
    /// file is neither read whole nor trusted); `nil` when it is not a regular file (a symbolic link is not followed).
    /// - Throws: ``FileError`` when it cannot be read.
    package static func readStats(at url: URL) throws(FileError) -> Data? {
        let descriptor = open(url.path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
        if descriptor < 0, errno == ELOOP { return nil }
        guard descriptor >= 0 else { throw FileError(operation: "read", path: url.path, code: errno) }
        defer { close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { throw FileError(operation: "read", path: url.path, code: errno) }
        guard info.st_mode & S_IFMT == S_IFREG else { return nil }
        var data = Data(count: ShardStats.maximumFileBytes + 1)
        var filled = 0
        while filled < data.count {
            let count = data.withUnsafeMutableBytes { read(descriptor, $0.baseAddress! + filled, $0.count - filled) }
            if count < 0, errno == EINTR { continue }
            guard count >= 0 else { throw FileError(operation: "read", path: url.path, code: errno) }
            if count == 0 { break }
            filled += count
        }
        return data.prefix(filled)
    }
}

/// A shard's stats file that does not mark it complete (``ShardCompletion``): the shard is downloaded again.
public struct UntrustedShardStats: Error, Sendable, Hashable, CustomStringConvertible {
    /// The file's (or object's) name: `00003_stats.json`.
    public var name: String
    /// The shard it would mark complete.
    public var shard: Int
    /// What is wrong with it: `not JSON`, `no "rows"`, `its rows' outcomes add up to 7, not its 10 rows`, ….
    public var reason: String

    public var description: String { "\(name) is not this shard's stats (\(reason))" }
}
