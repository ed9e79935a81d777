import Foundation
import MirrorTransport

/// A table of URLs as a pipeline's ``CandidateSource``: each row becomes a candidate named after its URL's last path
/// segment, keyed by its position, with its caption and kept columns for the record. A bad row becomes a candidate
/// with its ``Candidate/problem``, so that it is counted and reported in row order with the rest.
///
/// Repeated URLs are left to the pipeline's admission (a table may list one URL on many rows).
public final class TableSource: CandidateSource, @unchecked Sendable {  // `reader` is used only under `lock`
    private let lock = Locked(())
    private let reader: TableReader
    /// What a bad row's candidate points at: nothing is ever fetched from it.
    static let placeholder = URL(string: "about:invalid")!

    /// Creates the source over an open table.
    public init(_ reader: TableReader) {
        self.reader = reader
    }

    public func next() async throws -> Candidate? {
        let row = try lock.withLock { _ in try reader.next() }
        return row.map(Self.candidate)
    }

    /// The candidate for a row.
    public static func candidate(for row: TableRow) -> Candidate {
        let provenance = ImageProvenance(key: row.key, caption: row.caption, columns: row.columns)
        switch row.url {
        case let .success(url):
            return Candidate(url: url, stem: FileNaming.stem(of: url), provenance: provenance, place: row.place)
        case let .failure(problem):
            return Candidate(url: placeholder, stem: row.key, provenance: provenance, problem: problem.reason, place: row.place)
        }
    }
}
