import Foundation

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

    /// Creates provenance; every field defaults to `nil`.
    public init(
        provider: String? = nil, id: String? = nil, title: String? = nil, pageURL: String? = nil, creator: String? = nil,
        license: String? = nil, licenseURL: String? = nil, query: String? = nil
    ) {
        self.provider = provider
        self.id = id
        self.title = title
        self.pageURL = pageURL
        self.creator = creator
        self.license = license
        self.licenseURL = licenseURL
        self.query = query
    }
}

/// How one image's publication ended.
public enum PublishOutcome: Sendable, Equatable {
    /// Published; the record is now in the sink's manifest.
    case saved(ManifestRecord)
    /// The same bytes are already saved, in this file.
    case duplicate(of: String)
    /// Not admitted: the run already has all it asked for.
    case notAdmitted
    /// The sink could not be written.
    case failed(FileError)
}

/// Where verified images end up: the folder today; WebDataset shards and object storage next.
///
/// A sink publishes atomically (a reader never sees half an image), refuses bytes it already holds, never admits
/// more than its run asked for, and keeps its own state (manifest, database) in step with what it holds.
///
/// Thread safety: every method may be called from any task at once.
public protocol ImageSink: Sendable {
    /// The folder downloads stream into: on the same file system as the destination, so publishing is a rename.
    var stagingDirectory: URL { get }

    /// Whether the sink already holds an image downloaded from the URL whose normalised form
    /// (`CacheKey(url:).normalizedURL`) this is.
    func contains(normalizedURL: String) -> Bool

    /// Publishes a verified image under a name made from `stem` (the temporary file is the sink's from now on:
    /// published or removed).
    func publish(_ image: VerifiedImage, stem: String, provenance: ImageProvenance) async -> PublishOutcome

    /// Records, best effort, that the image at `url` gave no image and why, so a later run can skip it.
    func recordFailure(url: URL, provider: String?, reason: String, isTransient: Bool)

    /// Images this run has published.
    var publishedCount: Int { get }

    /// Returns when everything handed to ``publish(_:stem:provenance:)`` has been published or refused.
    func drain() async
}
