import Foundation
import MirrorSearch
import MirrorStorage

/// One image the pipeline may fetch: where it is, what to call it, and what its source knows about it.
public struct Candidate: Sendable, Hashable {
    /// The image URL.
    public var url: URL
    /// The wanted file name stem (`openverse-1234`); the extension comes from the bytes.
    public var stem: String
    /// What the source knows about the image (the manifest's provenance fields).
    public var provenance: ImageProvenance
    /// The search result it came from, or `nil` (a URL list): what the source needs back for its obligations.
    public var result: ImageResult?
    /// The width the source reports, used to turn away images before any download; `nil` when unknown.
    public var reportedWidth: Int?
    /// The height the source reports; `nil` when unknown.
    public var reportedHeight: Int?
    /// The MIME type the source reports; `nil` when unknown.
    public var reportedMIMEType: String?
    /// Where the source found it (`row 14`, `line 3`), for messages; `nil` for a search result.
    public var place: String?
    /// What the served bytes must hash to (a table's `--verify-hash` column), or `nil`.
    public var expectedDigest: ExpectedDigest?
    /// The boxes to blur (a table's `--blur-col` column), why its value gives none (the row then fails `bad-boxes`
    /// before any download), or `nil` when the source gives no boxes.
    public var blurBoxes: Result<BlurBoxes, BlurBoxes.Malformed>?

    /// Creates a candidate; the reported dimensions and type default to unknown.
    public init(
        url: URL, stem: String, provenance: ImageProvenance = ImageProvenance(), result: ImageResult? = nil,
        reportedWidth: Int? = nil, reportedHeight: Int? = nil, reportedMIMEType: String? = nil,
        place: String? = nil
    ) {
        self.url = url
        self.stem = stem
        self.provenance = provenance
        self.result = result
        self.reportedWidth = reportedWidth
        self.reportedHeight = reportedHeight
        self.reportedMIMEType = reportedMIMEType
        self.place = place
    }
}

/// What a source yields: an image to fetch, or a row of a table that gives none (counted and reported in row order
/// with the rest, never fetched).
public enum SourceItem: Sendable, Hashable {
    case candidate(Candidate)
    case badRow(BadRow)
}

/// A row of a table that gives no URL to fetch: none, not http(s), a line that does not parse.
public struct BadRow: Sendable, Hashable {
    /// What the source knows of the row (its key, caption and kept columns), for its record.
    public var provenance: ImageProvenance
    /// Why it gives no URL.
    public var reason: String
    /// Where the source found it (`row 14`, `line 3`), for messages.
    public var place: String

    public init(provenance: ImageProvenance, reason: String, place: String) {
        self.provenance = provenance
        self.reason = reason
        self.place = place
    }
}

/// Where a pipeline's candidates come from: the search feed (`SearchSource`), or a table of URLs (`TableSource`).
///
/// ``next()`` is called from one task at a time; ``saveNotification(for:)`` from any task.
public protocol CandidateSource: Sendable {
    /// The next candidate, or `nil` when the source has no more.
    /// - Throws: the source's own error when it cannot go on (the search's providers failed); the pipeline stops
    ///   asking, finishes what is in flight and reports it.
    func next() async throws -> SourceItem?

    /// Work the source's terms ask for once `candidate` has been saved (Unsplash's download notification), or `nil`
    /// (the default). It runs off the download's slot; a line it returns is logged, and never fails the image.
    func saveNotification(for candidate: Candidate) -> (@Sendable () async -> String?)?

    /// Whether the source never yields the same normalised URL twice (it deduplicates itself), so the pipeline need
    /// not remember every URL of the run. Default false.
    var yieldsDistinctURLs: Bool { get }
}

extension CandidateSource {
    public var yieldsDistinctURLs: Bool { false }

    public func saveNotification(for candidate: Candidate) -> (@Sendable () async -> String?)? { nil }
}
