import Foundation
import MirrorCore
import MirrorSearch
import MirrorStorage
import MirrorTransport

/// A table of URLs as a pipeline's ``CandidateSource``: each row becomes a candidate named after its URL's last path
/// segment, keyed by its position, with its caption and kept columns for the record. A bad row becomes a ``BadRow``,
/// so that it is counted and reported in row order with the rest.
///
/// Repeated URLs are left to the pipeline's admission (a table may list one URL on many rows).
///
/// Given a ``WorkShard``, the source reads every row and yields only this copy's share, counting both.
public final class TableSource: CandidateSource, @unchecked Sendable {  // `reader` and `tally` are used only under `lock`
    private let lock = Locked(())
    private let reader: TableReader
    private let shard: WorkShard?
    private let blockSize: Int
    private var tally = ShareTally()

    /// How much of the table this copy took.
    public struct ShareTally: Sendable, Hashable {
        /// Rows read.
        public var rows = 0
        /// Rows this copy took.
        public var taken = 0
    }

    /// Creates the source over an open table; with a `shard`, only its share of the rows (`blockSize` rows to a
    /// block when split by row: a WebDataset shard's size).
    public init(_ reader: TableReader, shard: WorkShard? = nil, blockSize: Int = 1) {
        self.reader = reader
        self.shard = shard
        self.blockSize = blockSize
    }

    /// Rows read and rows taken so far.
    public var share: ShareTally { lock.withLock { _ in tally } }

    public func next() async throws -> SourceItem? {
        try lock.withLock { _ in
            while let row = try reader.next() {
                tally.rows += 1
                var item = Self.item(for: row)
                if let shard {
                    let host: String? = if case let .candidate(candidate) = item { candidate.url.host } else { nil }
                    guard shard.owns(position: row.position, host: host, blockSize: blockSize) else { continue }
                    if shard.split == .host { item.provenance.slot = tally.taken }
                }
                tally.taken += 1
                return item
            }
            return nil
        }
    }

    /// What a row becomes: a candidate, or a bad row.
    public static func item(for row: TableRow) -> SourceItem {
        let provenance = ImageProvenance(key: row.key, caption: row.caption, columns: row.columns)
        switch row.url {
        case let .success(url):
            return .candidate(Candidate(url: url, stem: FileNaming.stem(of: url), provenance: provenance, place: row.place))
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
