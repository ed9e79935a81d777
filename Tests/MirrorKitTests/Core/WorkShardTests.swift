import Foundation
@testable import MirrorCore
@testable import MirrorFetch
@testable import MirrorKit
@testable import MirrorSearch
@testable import MirrorStorage
import MirrorTestSupport
import Testing

/// Which share of a job a copy takes: from `--shard`, from SLURM's or Kubernetes' variables, by row or by host.
@Suite("Work shards")
struct WorkShardTests {
    private let folder = TemporaryFolder()

    @Test func iOverNParsesAndRefusesWhatIsNotAShare() {
        #expect(WorkShard.parse("2/4") == WorkShard(index: 2, count: 4))
        #expect(WorkShard.parse(" 0 / 1 ") == WorkShard(index: 0, count: 1))
        for bad in ["4/4", "-1/4", "1/0", "1", "a/b", "1/2/3", ""] {
            #expect(WorkShard.parse(bad) == nil, "\(bad)")
        }
    }

    @Test func aSLURMArrayGivesTheShard() throws {
        let counted = try WorkShard.fromEnvironment(["SLURM_ARRAY_TASK_ID": "3", "SLURM_ARRAY_TASK_COUNT": "4"], shards: nil, split: .row)
        #expect(counted?.0 == WorkShard(index: 3, count: 4))
        #expect(counted?.1.contains("SLURM_ARRAY_TASK_ID=3") == true)
        // --array=1-8: task 1 is shard 0 of 8
        let offset = try WorkShard.fromEnvironment(
            ["SLURM_ARRAY_TASK_ID": "1", "SLURM_ARRAY_TASK_MIN": "1", "SLURM_ARRAY_TASK_MAX": "8", "SLURM_ARRAY_TASK_COUNT": "8"],
            shards: nil, split: .host
        )
        #expect(offset?.0 == WorkShard(index: 0, count: 8, split: .host))
        // --array=0-6:2 has 4 tasks between 0 and 6: the indices are not 0..<4, so it is refused
        #expect(throws: WorkShard.EnvironmentError.self) {
            try WorkShard.fromEnvironment(
                ["SLURM_ARRAY_TASK_ID": "2", "SLURM_ARRAY_TASK_MIN": "0", "SLURM_ARRAY_TASK_MAX": "6", "SLURM_ARRAY_TASK_COUNT": "4"],
                shards: nil, split: .row
            )
        }
        #expect(throws: WorkShard.EnvironmentError.self) { try WorkShard.fromEnvironment(["SLURM_ARRAY_TASK_ID": "1"], shards: nil, split: .row) }
        #expect(throws: WorkShard.EnvironmentError.self) {
            try WorkShard.fromEnvironment(["SLURM_ARRAY_TASK_ID": "x", "SLURM_ARRAY_TASK_COUNT": "4"], shards: nil, split: .row)
        }
    }

    @Test func aKubernetesIndexedJobNeedsItsCompletions() throws {
        let flagged = try WorkShard.fromEnvironment(["JOB_COMPLETION_INDEX": "5"], shards: 8, split: .row)
        #expect(flagged?.0 == WorkShard(index: 5, count: 8))
        let variable = try WorkShard.fromEnvironment(["JOB_COMPLETION_INDEX": "0", "MIRROR_SHARDS": "3"], shards: nil, split: .row)
        #expect(variable?.0 == WorkShard(index: 0, count: 3))
        #expect(throws: WorkShard.EnvironmentError.self) { try WorkShard.fromEnvironment(["JOB_COMPLETION_INDEX": "0"], shards: nil, split: .row) }
        #expect(throws: WorkShard.EnvironmentError.self) { try WorkShard.fromEnvironment(["JOB_COMPLETION_INDEX": "3"], shards: 3, split: .row) }
        #expect(try WorkShard.fromEnvironment(["HOME": "/root"], shards: nil, split: .row) == nil)
    }

    @Test func rowsGoInBlocksRoundRobin() {
        let shard = WorkShard(index: 1, count: 3)
        let taken = (0..<20).filter { shard.owns(position: $0, host: "a.test", blockSize: 2) }
        #expect(taken == [2, 3, 8, 9, 14, 15])
    }

    /// A table of 600 rows over 7 hosts, some rows bad.
    private func table() throws -> String {
        var lines = ["url,caption"]
        for index in 0..<600 {
            lines.append(index % 41 == 5 ? "not a url,bad \(index)" : "http://host\(index % 7).test/\(index).png,row \(index)")
        }
        let file = folder.url.appendingPathComponent("table.csv")
        try Data((lines.joined(separator: "\n") + "\n").utf8).write(to: file)
        return file.path
    }

    private func rows(of shard: WorkShard?, path: String, blockSize: Int = 10) async throws -> [SourceItem] {
        let source = TableSource(try TableReader(path: path), shard: shard, blockSize: blockSize)
        var candidates: [SourceItem] = []
        while let candidate = try await source.next() { candidates.append(candidate) }
        #expect(source.share.rows == 600 && source.share.taken == candidates.count)
        return candidates
    }

    @Test(arguments: [WorkShard.Split.row, .host])
    func nCopiesTakeEveryRowExactlyOnce(split: WorkShard.Split) async throws {
        let path = try table()
        let whole = try await rows(of: nil, path: path)
        var union: [String] = []
        var hostsByCopy: [Int: Set<String>] = [:]
        for index in 0..<4 {
            let copy = try await rows(of: WorkShard(index: index, count: 4, split: split), path: path)
            union += copy.compactMap(\.provenance.key)
            hostsByCopy[index] = Set(copy.compactMap { item in if case let .candidate(candidate) = item { candidate.url.host } else { nil } })
            if split == .host {
                // A copy split by host counts its own rows 0, 1, 2, … (its shards are made of them)
                #expect(copy.map(\.provenance.slot) == Array(0..<copy.count))
            } else {
                #expect(copy.allSatisfy { $0.provenance.slot == nil })
            }
        }
        #expect(union.sorted() == whole.compactMap(\.provenance.key).sorted())
        #expect(Set(union).count == union.count)
        if split == .host {
            // Each host belongs to exactly one copy
            let all = hostsByCopy.values.flatMap { $0 }
            #expect(all.count == Set(all).count && Set(all).count == 7)
        }
    }

    @Test func theHostHashIsFixedAcrossRunsAndMachines() {
        // Pinned (computed independently in Python): every copy of a job, on any machine, must agree on it
        #expect(WorkShard.hostHash("") == 0xefd0_1f60_ba99_2926)
        #expect(WorkShard.hostHash("a") == 0x82a2_a958_a9be_ce5b)
        // Two copies split hosts that differ only in their bytes' parity (plain FNV-1a sent all of these to copy 0)
        let copies = ["127.0.0.1", "localhost", "127.1"].map { WorkShard.hostHash($0) % 2 }
        #expect(Set(copies).count == 2)
    }
}
