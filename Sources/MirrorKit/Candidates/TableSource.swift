import Foundation
import MirrorSync
import MirrorCore
import MirrorStorage

/// A table of URLs as a pipeline's ``CandidateSource``: each row becomes a candidate named after its URL's last path
/// segment, keyed by its position, with its caption and kept columns for the record. A bad row becomes a ``BadRow``,
/// so that it is counted and reported in row order with the rest.
///
/// Repeated URLs are left to the pipeline's admission (a table may list one URL on many rows).
///
/// Given a ``WorkShard``, the source reads every row and yields only this copy's share, counting both.
///
/// The table is read ahead in batches of ``batchSize`` items on a queue of its own, so that the blocking reads (a slow
/// disk, a network file system, a gzip stream) never hold a thread of Swift's cooperative pool; one hop to that queue
/// per batch, not per row.
public final class TableSource: CandidateSource, @unchecked Sendable {  // `reader` is used only on `queue` (serial)
    /// Items read ahead at most.
    static let batchSize = 256

    private struct State {
        var tally = ShareTally()
        /// Items read ahead, each with the rows read up to it, from `index` on.
        var ahead: [(item: SourceItem, rows: Int)] = []
        var index = 0
        /// Rows read so far (ahead of ``ShareTally/rows`` by the items not yet taken).
        var rowsRead = 0
        /// The table ended (nothing more to read), or reading it failed.
        var ended = false
        var failure: (any Error)?

        /// The next item read ahead; `.some(nil)` at the end; nil when the batch is used up.
        mutating func take() throws -> SourceItem?? {
            if index < ahead.count {
                let (item, rows) = ahead[index]
                index += 1
                tally.rows = rows
                tally.taken += 1
                return .some(item)
            }
            if let failure { throw failure }
            if ended {
                tally.rows = rowsRead
                return .some(nil)
            }
            return nil
        }
    }

    private let reader: any TableRowReading
    private let shard: WorkShard?
    private let blockSize: Int
    private let state = Locked(State())
    private let queue = DispatchQueue(label: "mirror.table")

    /// How much of the table this copy took.
    public struct ShareTally: Sendable, Hashable {
        /// Rows read.
        public var rows = 0
        /// Rows this copy took.
        public var taken = 0
    }

    /// Creates the source over an open table; with a `shard`, only its share of the rows (`blockSize` rows to a
    /// block when split by row: a WebDataset shard's size).
    public init(_ reader: any TableRowReading, shard: WorkShard? = nil, blockSize: Int = 1) {
        self.reader = reader
        self.shard = shard
        self.blockSize = blockSize
    }

    /// Rows read and rows taken so far.
    public var share: ShareTally { state.withLock { $0.tally } }

    /// Whether its rows give boxes to blur (`--blur-col`).
    public var blursBoxes: Bool { reader.columns.blur != nil }

    public func next() async throws -> SourceItem? {
        if let ready = try state.withLock({ try $0.take() }) { return ready }
        return try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<SourceItem?, any Error>) in
            queue.async { [self] in
                continuation.resume(with: Result { try nextOnQueue() })
            }
        }
    }

    /// Reads ahead, keeping every item for ``next()``, until `limit` of this copy's candidates pass `counting` or the
    /// table ends; returns how many passed (at most `limit`), or `nil` when it cannot say: the table failed to read
    /// (``next()`` reports it in its place), or `rowLimit` items were read first (so that what is held stays bounded).
    /// Called before the first ``next()``: a folder job asks whether the table may take its folder past the size where
    /// it goes into subfolders (``FolderLayout/resolved(saved:adding:)``).
    public func countAhead(upTo limit: Int, rowLimit: Int, counting: @escaping @Sendable (Candidate) -> Bool) async -> Int? {
        await withCheckedContinuation { (continuation: CheckedContinuation<Int?, Never>) in
            queue.async { [self] in
                var counted = 0
                while true {
                    let (held, taken, ended, failed) = state.withLock { ($0.ahead.count - $0.index, $0.tally.taken, $0.ended, $0.failure != nil) }
                    if failed { return continuation.resume(returning: nil) }
                    if ended || counted >= limit { return continuation.resume(returning: min(counted, limit)) }
                    if held >= rowLimit { return continuation.resume(returning: nil) }
                    let batch = readAhead(slotsFrom: taken + held)
                    for (item, _) in batch.items {
                        if case let .candidate(candidate) = item, counting(candidate) { counted += 1 }
                    }
                    state.withLock { state in
                        state.ahead.removeFirst(state.index)
                        state.index = 0
                        state.ahead += batch.items.map { ($0.item, $0.rows) }
                        state.rowsRead += batch.rows
                        state.ended = batch.ended
                        state.failure = batch.failure
                    }
                }
            }
        }
    }

    /// The next item, reading the next batch first if it is needed; on ``queue``. The reads happen outside the lock,
    /// so that a caller that finds items ready never waits for the disk.
    private func nextOnQueue() throws -> SourceItem? {
        // Another caller may have had the next batch read meanwhile.
        let (ready, taken) = try state.withLock { state in (try state.take(), state.tally.taken) }
        if let ready { return ready }
        let batch = readAhead(slotsFrom: taken)
        return try state.withLock { state in
            state.ahead = batch.items
            state.index = 0
            state.rowsRead += batch.rows
            state.ended = batch.ended
            state.failure = batch.failure
            return try state.take() ?? nil
        }
    }

    /// Reads up to ``batchSize`` of this copy's items, or to the end of the table; each with the rows read up to it
    /// (counted from this batch's start), numbered from `slotsFrom` when split by host. A failure is kept for after the
    /// items read before it.
    private func readAhead(slotsFrom first: Int) -> (items: [(item: SourceItem, rows: Int)], rows: Int, ended: Bool, failure: (any Error)?) {
        let before = state.withLock { $0.rowsRead }
        var items: [(item: SourceItem, rows: Int)] = []
        items.reserveCapacity(Self.batchSize)
        var rows = 0
        do {
            while items.count < Self.batchSize {
                guard let row = try reader.next() else { return (items, rows, true, nil) }
                rows += 1
                var item = Self.item(for: row)
                if let shard {
                    let host: String? = if case let .candidate(candidate) = item { candidate.url.host } else { nil }
                    guard shard.owns(position: row.position, host: host, blockSize: blockSize) else { continue }
                    if shard.split == .host { item.provenance.slot = first + items.count }
                }
                items.append((item, before + rows))
            }
            return (items, rows, false, nil)
        } catch {
            return (items, rows, false, error)
        }
    }

    /// What a row becomes: a candidate, or a bad row.
    public static func item(for row: TableRow) -> SourceItem {
        let provenance = ImageProvenance(key: row.key, caption: row.caption, columns: row.columns)
        switch row.url {
        case let .success(url):
            var candidate = Candidate(url: url, stem: FileNaming.stem(of: url), provenance: provenance, place: row.place)
            candidate.expectedDigest = row.expectedDigest
            candidate.blurBoxes = row.blurBoxes
            return .candidate(candidate)
        case let .failure(problem):
            return .badRow(BadRow(provenance: provenance, reason: problem.reason, place: row.place))
        }
    }
}

extension SourceItem {
    /// The provenance of the candidate or the bad row.
    var provenance: ImageProvenance {
        get {
            switch self {
            case let .candidate(candidate): candidate.provenance
            case let .badRow(row): row.provenance
            }
        }
        set {
            switch self {
            case var .candidate(candidate):
                candidate.provenance = newValue
                self = .candidate(candidate)
            case var .badRow(row):
                row.provenance = newValue
                self = .badRow(row)
            }
        }
    }
}
