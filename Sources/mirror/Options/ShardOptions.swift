import ArgumentParser
import Foundation
import MirrorKit

/// Running one job as N copies on a cluster: which share this copy takes.
struct ShardOptions: ParsableArguments {
    @Option(help: ArgumentHelp(
        "This copy's share of the job, I/N (0 ≤ I < N). Default: from SLURM_ARRAY_TASK_ID and SLURM_ARRAY_TASK_COUNT, "
            + "or from JOB_COMPLETION_INDEX with --shards or MIRROR_SHARDS (a Kubernetes Indexed Job); else the whole job.",
        valueName: "I/N"
    ))
    var shard: String?

    @Option(help: "How many copies share the job, with JOB_COMPLETION_INDEX (a Kubernetes Indexed Job's completions).")
    var shards: Int?

    @Option(help: "How rows are shared: row (blocks of --shard-size rows, round robin) or host (every row of a host to one copy, so per-host limits and robots.txt hold across the cluster).")
    var shardBy: WorkShard.Split = .row

    func validate() throws {
        if let shard, WorkShard.parse(shard) == nil {
            throw ValidationError("--shard \(shard): give I/N with 0 ≤ I < N, e.g. --shard 0/4")
        }
        if let shards, shards < 1 { throw ValidationError("--shards must be at least 1") }
    }

    /// The share this copy takes, and a line saying where it came from (printed unless --quiet); `nil` for the whole job.
    func resolve(environment: [String: String] = ProcessInfo.processInfo.environment) throws -> (WorkShard, String)? {
        let split = shardBy
        if let shard, let parsed = WorkShard.parse(shard, split: split) {
            return (parsed, "--shard \(shard)")
        }
        do {
            return try WorkShard.fromEnvironment(environment, shards: shards, split: split)
        } catch {
            throw ValidationError(error.description)
        }
    }
}
