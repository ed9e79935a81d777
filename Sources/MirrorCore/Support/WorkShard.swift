import Foundation

/// One of N independent shares of a job, for running N copies of mirror on a cluster (a SLURM array, a Kubernetes
/// Indexed Job) with no scheduler of mirror's own.
///
/// Every copy reads the whole table and keeps its share, decided by the row alone, so N copies with the same table and
/// N cover every row exactly once:
/// - ``Split/row``: rows go in blocks of `blockSize` (a WebDataset shard's rows), block `b` to copy `b mod N`; WebDataset
///   shard numbers stay those of an unsharded run, so the N copies' shards are the unsharded run's, file for file.
/// - ``Split/host``: every row of one host (lowercased) goes to the copy `FNV-1a(host) mod N`, so per-host limits and
///   robots.txt hold across the cluster; a bad row (no host) goes by its position. (FNV-1a's low bits follow the
///   bytes' parity, so the hash is mixed — MurmurHash3's 64-bit finaliser — before the modulo.) Each copy numbers its own shards
///   `k·N + I`, so shard files never collide either.
public struct WorkShard: Sendable, Hashable, CustomStringConvertible {
    public enum Split: String, Sendable, CaseIterable {
        case row, host
    }

    /// This copy's index, `0..<count`.
    public var index: Int
    /// How many copies share the job.
    public var count: Int
    public var split: Split

    public init(index: Int, count: Int, split: Split = .row) {
        precondition(count > 0 && (0..<count).contains(index))
        self.index = index
        self.count = count
        self.split = split
    }

    /// `shard 2/4` (numbered from 0).
    public var description: String { "shard \(index)/\(count)" + (split == .host ? " by host" : "") }

    /// The name of this copy's own state and (for a folder) its own output: `shard-2-of-4`.
    public var directoryName: String { "shard-\(index)-of-\(count)" }

    /// Parses `I/N` (`--shard 2/4`).
    public static func parse(_ text: String, split: Split = .row) -> WorkShard? {
        let parts = text.split(separator: "/")
        guard parts.count == 2, let index = Int(parts[0].trimmingCharacters(in: .whitespaces)),
              let count = Int(parts[1].trimmingCharacters(in: .whitespaces)), count > 0, (0..<count).contains(index) else { return nil }
        return WorkShard(index: index, count: count, split: split)
    }

    /// What went wrong reading the engine's variables.
    public struct EnvironmentError: Error, Sendable, CustomStringConvertible {
        public var description: String
    }

    /// The shard a cluster engine gives this process, and the line that says where it came from; `nil` when no engine
    /// variable is set.
    ///
    /// SLURM arrays: `SLURM_ARRAY_TASK_ID` with `SLURM_ARRAY_TASK_COUNT`, or with `SLURM_ARRAY_TASK_MIN`/`MAX` (an
    /// array `--array=1-8` is shard `ID-MIN` of `MAX-MIN+1`; arrays with a step are refused: give `--shard`).
    /// Kubernetes Indexed Jobs: `JOB_COMPLETION_INDEX` with `shards` (`--shards`) or `MIRROR_SHARDS`.
    public static func fromEnvironment(_ environment: [String: String], shards: Int?, split: Split) throws(EnvironmentError) -> (WorkShard, String)? {
        func number(_ name: String) throws(EnvironmentError) -> Int? {
            guard let text = environment[name], !text.isEmpty else { return nil }
            guard let value = Int(text), value >= 0 else { throw EnvironmentError(description: "\(name)=\(text) is not a number") }
            return value
        }
        if let id = try number("SLURM_ARRAY_TASK_ID") {
            let minimum = try number("SLURM_ARRAY_TASK_MIN") ?? 0
            let count: Int
            if let given = try number("SLURM_ARRAY_TASK_COUNT"), environment["SLURM_ARRAY_TASK_MIN"] == nil {
                count = given
            } else if let maximum = try number("SLURM_ARRAY_TASK_MAX") {
                count = maximum - minimum + 1
                if let given = try number("SLURM_ARRAY_TASK_COUNT"), given != count {
                    throw EnvironmentError(description: "the SLURM array has a step (\(given) tasks from \(minimum) to \(maximum)): give each task --shard I/N")
                }
            } else {
                throw EnvironmentError(description: "SLURM_ARRAY_TASK_ID is set without SLURM_ARRAY_TASK_COUNT or SLURM_ARRAY_TASK_MAX: give --shard I/N")
            }
            let index = id - minimum
            guard count > 0, (0..<count).contains(index) else {
                throw EnvironmentError(description: "SLURM_ARRAY_TASK_ID=\(id) is outside the array (\(minimum)…\(minimum + count - 1))")
            }
            return (WorkShard(index: index, count: count, split: split), "SLURM_ARRAY_TASK_ID=\(id) of \(count) tasks")
        }
        if let index = try number("JOB_COMPLETION_INDEX") {
            let fromEnvironment = try number("MIRROR_SHARDS")
            guard let count = shards ?? fromEnvironment else {
                throw EnvironmentError(description: "JOB_COMPLETION_INDEX=\(index) is set: give --shards N (or MIRROR_SHARDS), the Job's completions")
            }
            guard count > 0, index < count else {
                throw EnvironmentError(description: "JOB_COMPLETION_INDEX=\(index) is not below the \(count) shards")
            }
            return (WorkShard(index: index, count: count, split: split), "JOB_COMPLETION_INDEX=\(index) of \(count)")
        }
        return nil
    }

    /// Whether this copy takes the row at `position` whose URL has `host` (`nil` for a bad row).
    public func owns(position: Int, host: String?, blockSize: Int) -> Bool {
        switch split {
        case .row:
            return (position / max(1, blockSize)) % count == index
        case .host:
            guard let host, !host.isEmpty else { return position % count == index }
            return Int(Self.hostHash(host.lowercased()) % UInt64(count)) == index
        }
    }

    /// Whether this copy takes the `position`-th item of a list (a query of `--queries`).
    public func owns(item position: Int) -> Bool { position % count == index }

    /// FNV-1a 64 mixed by MurmurHash3's finaliser: the same on every machine and every run (Swift's `Hasher` is
    /// seeded per process), with every bit depending on every byte.
    static func hostHash(_ text: String) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in text.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01b3
        }
        hash ^= hash >> 33
        hash = hash &* 0xff51_afd7_ed55_8ccd
        hash ^= hash >> 33
        hash = hash &* 0xc4ce_b9fe_1a85_ec53
        hash ^= hash >> 33
        return hash
    }
}
