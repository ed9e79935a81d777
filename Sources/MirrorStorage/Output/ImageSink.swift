import Foundation
import MirrorCore
import MirrorModel

/// What a source knows about an image besides its URL: the manifest's provenance fields.
///
/// Every field is optional: a URL list knows none of them, a search result most.
public struct ImageProvenance: Sendable, Hashable {
    /// The provider's registry name (`openverse`, …).
    public var provider: String?
    /// The provider's id of the image.
    public var id: String?
    /// The image's title.
    public var title: String?
    /// The page about the image, for attribution.
    public var pageURL: String?
    /// Who made it.
    public var creator: String?
    /// Licence code and version (`cc-by 4.0`).
    public var license: String?
    /// The licence deed or terms page.
    public var licenseURL: String?
    /// The search query that found it.
    public var query: String?
    /// The table row it came from (``TableRow/key``), or `nil`.
    public var key: String?
    /// The row's caption, or `nil`.
    public var caption: String?
    /// Its class (the query of a `--queries` run), or `nil`.
    public var label: String?
    /// Columns carried from the table (`--keep-cols`).
    public var columns: [KeptColumn] = []
    /// The row's place among the rows this copy of a host-split job takes (``WorkShard/Split/host``), which is what
    /// a WebDataset shard counts by; `nil` otherwise (shards count by the row's position).
    public var slot: Int?

    /// Creates provenance; every field defaults to `nil`.
    public init(
        provider: String? = nil, id: String? = nil, title: String? = nil, pageURL: String? = nil, creator: String? = nil,
        license: String? = nil, licenseURL: String? = nil, query: String? = nil, key: String? = nil, caption: String? = nil,
        label: String? = nil, columns: [KeptColumn] = []
    ) {
        self.provider = provider
        self.id = id
        self.title = title
        self.pageURL = pageURL
        self.creator = creator
        self.license = license
        self.licenseURL = licenseURL
        self.query = query
        self.key = key
        self.caption = caption
        self.label = label
        self.columns = columns
    }
}

/// How one image's publication ended: the row's outcome (``RowOutcome/saved(_:source:)``, a ``RowOutcome/duplicate(of:)``
/// or a ``RowOutcome/nearDuplicate(of:distance:)``), or why the sink took nothing.
public typealias Publication = Result<RowOutcome, PublishError>

/// Why a sink took nothing of an image.
public enum PublishError: Error, Sendable, Equatable {
    /// Not admitted: the run already has all it asked for (the image is surplus, not lost).
    case notAdmitted
    /// The sink could not be written.
    case unwritable(FileError)
}

/// Where verified images end up: a folder (`FolderSink`), or WebDataset shards on disk or in object storage (`ShardSink`).
///
/// A sink publishes atomically (a reader never sees half an image), refuses bytes it already holds, never admits
/// more than its run asked for, and keeps its own state (manifest, database) in step with what it holds.
///
/// Thread safety: every method may be called from any task at once.
public protocol ImageSink: Sendable {
    /// The folder downloads stream into: on the same file system as the destination, so publishing is a rename.
    var stagingDirectory: URL { get }

    /// Whether the sink already holds the image whose URL's normalised form (`CacheKey(url:).normalizedURL`) is
    /// `normalizedURL` and whose source says `provenance`: the folder tells by URL, shards by the row's key.
    func contains(normalizedURL: String, provenance: ImageProvenance) -> Bool

    /// Whether ``contains(normalizedURL:provenance:)`` tells by the row (shards: a row of a shard completed before),
    /// not by the URL (a folder, which holds this run's images too, so that a URL it holds may be a repeat of this
    /// run's). Default false.
    var containsTellsByRow: Bool { get }

    /// Publishes a verified image under a name made from `stem` (the temporary file is the sink's from now on:
    /// published or removed), and calls `completion` with how it ended, once, on any thread (a callback, so that the
    /// image goes on from the thread that verified it, with no task in between).
    func publish(_ image: VerifiedImage, stem: String, provenance: ImageProvenance, completion: @escaping @Sendable (Publication) -> Void)

    /// Records, best effort, how the image at `url` ended without being published, so that a later run can skip it
    /// (the folder keeps failures) and so that sinks that account for every row (shards) can close them.
    func settle(url: URL?, provenance: ImageProvenance, as outcome: RowOutcome)

    /// Images this run has published.
    var publishedCount: Int { get }

    /// Returns when everything handed to ``publish(_:stem:provenance:)`` has been published or refused.
    func drain() async

    /// Ends the run, after ``drain()``: `sourceExhausted` says whether every row of the source was read and settled
    /// (so a sink that groups rows can close its last group). Default: nothing.
    func finish(sourceExhausted: Bool) async

    /// The journal of images being decoded, in the sink's state folder, or `nil` (the default) for a sink that keeps
    /// no state: there a decoder's crash would come back on every rerun.
    var decodeJournal: DecodeJournal? { get }

    /// The sink's state folder (`.mirror/`, or a copy's own under it), where a run keeps what it may reuse next time
    /// (``SiteMemory``), or `nil` (the default) for a sink that keeps no state.
    var stateDirectory: URL? { get }
}

extension ImageSink {
    public func finish(sourceExhausted: Bool) async {}

    public var containsTellsByRow: Bool { false }

    public var decodeJournal: DecodeJournal? { nil }

    public var stateDirectory: URL? { nil }

    /// Publishes a verified image (see ``publish(_:stem:provenance:completion:)``) and returns how it ended.
    public func publish(_ image: VerifiedImage, stem: String, provenance: ImageProvenance) async -> Publication {
        await withCheckedContinuation { continuation in
            publish(image, stem: stem, provenance: provenance) { continuation.resume(returning: $0) }
        }
    }
}
