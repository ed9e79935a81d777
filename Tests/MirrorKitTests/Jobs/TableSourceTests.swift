import Foundation
@testable import MirrorKit
import MirrorTestSupport
import Testing

/// A table as the pipeline's source: read ahead on a queue of its own, taken by any number of callers at once.
/// (Its own suite, apart from the work shards', so that ThreadSanitizer runs it: CI skips `WorkShardTests`.)
@Suite("Table source")
struct TableSourceTests {
    private let folder = TemporaryFolder()

    @Test("the source reads ahead in batches, yet counts only the rows it gave, and callers at once share the rows")
    func readAheadCountsWhatItGaveAndServesConcurrentCallers() async throws {
        // Given a table of 600 rows (more than two batches of read-ahead), one of them bad
        var lines = (0..<600).map { "http://host\($0 % 7).test/\($0).png" }
        lines[300] = "not a url"
        let file = folder.url.appendingPathComponent("table.txt")
        try Data((lines.joined(separator: "\n") + "\n").utf8).write(to: file)
        let source = TableSource(try TableReader(path: file.path))

        // When three rows are taken / Then the tally counts three, not the batch read behind them
        for _ in 0..<3 { _ = try await source.next() }
        #expect(source.share == TableSource.ShareTally(rows: 3, taken: 3))

        // When eight tasks take the rest at once / Then every row comes exactly once and the tally is whole
        let keys = try await withThrowingTaskGroup(of: [String].self) { group in
            for _ in 0..<8 {
                group.addTask {
                    var keys: [String] = []
                    while let item = try await source.next() { keys.append(item.provenance.key ?? "") }
                    return keys
                }
            }
            return try await group.reduce(into: []) { $0 += $1 }
        }
        #expect(keys.count == 597 && Set(keys).count == 597)
        #expect(source.share == TableSource.ShareTally(rows: 600, taken: 600))
        let after = try await source.next()
        #expect(after == nil)
    }

    @Test("counting ahead keeps every row it read for the pipeline, in order, and stops at its limits")
    func countingAheadKeepsTheRowsInOrder() async throws {
        // Given a table of 1,000 rows (four batches of read-ahead), one of them bad
        var lines = (0..<1000).map { "http://h.test/\($0).png" }
        lines[5] = "not a url"
        let file = folder.url.appendingPathComponent("ahead.txt")
        try Data((lines.joined(separator: "\n") + "\n").utf8).write(to: file)
        let counting: @Sendable (Candidate) -> Bool = { (Int($0.url.deletingPathExtension().lastPathComponent) ?? 0) % 3 != 0 }
        func source() throws -> TableSource { TableSource(try TableReader(path: file.path)) }

        // When rows are counted ahead (every row whose number is no multiple of 3: 665 of the good ones)
        let first = try source()
        let upTo500 = await first.countAhead(upTo: 500, rowLimit: 10_000, counting: counting)
        let whole = await (try source()).countAhead(upTo: 2_000, rowLimit: 10_000, counting: counting)
        let bounded = await (try source()).countAhead(upTo: 2_000, rowLimit: 300, counting: counting)

        // Then the count stops at the limit, or is the table's, or cannot be said within the rows it may hold
        #expect(upTo500 == 500)
        #expect(whole == 665)
        #expect(bounded == nil)
        #expect(first.share == TableSource.ShareTally(rows: 0, taken: 0))
        // and every row comes afterwards exactly once, in the table's order, the bad one in its place
        var keys: [String] = []
        var bad: [String] = []
        while let item = try await first.next() {
            keys.append(item.provenance.key ?? "")
            if case .badRow = item { bad.append(item.provenance.key ?? "") }
        }
        #expect(keys == (0..<1000).map { String(format: "%09d", $0) })
        #expect(bad == ["000000005"])
        #expect(first.share == TableSource.ShareTally(rows: 1000, taken: 1000))
    }
}
