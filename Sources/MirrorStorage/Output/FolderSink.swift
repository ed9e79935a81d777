import Foundation
import MirrorCore
import MirrorModel

/// The output folder as an ``ImageSink``: files published atomically in batches, `manifest.jsonl`, and (for
/// searches) the state database.
///
/// Wraps an ``OutputFolder`` (lock, reconciliation, lookups), an ``ImageCommitter`` (batched fsync, rename,
/// journal, manifest) and, when given one, a ``StateStore`` (published images and failed URLs).
///
/// ```swift
/// let folder = try OutputFolder(directory: url)
/// let sink = FolderSink(folder: folder, admissionLimit: 50)
/// ```
public final class FolderSink: ImageSink {
    /// The folder images are published into.
    public let folder: OutputFolder
    /// The state database, or `nil` for none (URL lists keep their state in the manifest alone).
    public let store: StateStore?
    /// Where failed URLs are remembered when there is no ``store`` (a URL list's folder), or `nil`.
    public let failures: StateStore?
    /// Normalised URLs that failed on an earlier run and are tried again: saved, their failure is forgotten.
    private let retried: Set<String>
    /// How files are named; `nil` names them after the candidate's stem.
    public let nameTemplate: NameTemplate?
    /// The label of this run's images and the subfolder they go to (`--queries`), or `nil`.
    public let label: (name: String, subfolder: String)?
    private let committer: ImageCommitter

    /// Creates the sink.
    /// - Parameters:
    ///   - folder: The output folder (opened, and so locked, by the caller).
    ///   - store: The state database, or `nil`.
    ///   - failures: A state database for failed URLs alone (a URL list's folder), or `nil`.
    ///   - retried: Normalised URLs that failed on an earlier run and are tried again.
    ///   - isSyncEnabled: Whether files, the folder and the manifest are fsynced. Default true.
    ///   - admissionLimit: Images this run may publish at most, or `nil` for no limit.
    ///   - nameTemplate: How files are named, or `nil` for `<stem>.<ext>`.
    ///   - label: The label of this run's images and their subfolder (made if missing), or `nil` for none.
    ///   - uniqueAcrossLabels: Whether bytes another label holds are refused rather than kept again.
    ///   - deduplication: What is taken for a duplicate of a saved image (`--dedup`). Default ``Deduplication/exact``.
    ///   - layout: Where in the folder new images go (`--layout`; a job resolves an automatic one by what it may add,
    ///     ``FolderLayout/resolved(saved:adding:)``). Default automatic: flat until the folder holds 9,000 images.
    public init(
        folder: OutputFolder, store: StateStore? = nil, failures: StateStore? = nil, retried: Set<String> = [],
        isSyncEnabled: Bool = true, admissionLimit: Int? = nil,
        nameTemplate: NameTemplate? = nil, label: (name: String, subfolder: String)? = nil, uniqueAcrossLabels: Bool = false,
        deduplication: Deduplication = .exact, layout: FolderLayout = FolderLayout()
    ) throws(FileError) {
        self.folder = folder
        self.store = store
        self.failures = store == nil ? failures : nil
        self.retried = retried
        self.nameTemplate = nameTemplate
        self.label = label
        if let label { try folder.makeSubfolder(label.subfolder) }
        committer = ImageCommitter(
            folder: folder, store: store, isSyncEnabled: isSyncEnabled, admissionLimit: admissionLimit, uniqueAcrossLabels: uniqueAcrossLabels,
            deduplication: deduplication, layout: layout
        )
    }

    /// Images saved this run whose bytes another label holds too.
    public var crossLabelDuplicates: Int { committer.crossLabelDuplicates }

    public var stagingDirectory: URL { folder.directory }

    public var decodeJournal: DecodeJournal? { folder.decodeJournal }

    public var stateDirectory: URL? { folder.stateDirectory }

    public func contains(normalizedURL: String, provenance: ImageProvenance) -> Bool {
        folder.contains(normalizedURL: normalizedURL, label: label?.name)
    }

    public func publish(_ image: VerifiedImage, stem: String, provenance: ImageProvenance, completion: @escaping @Sendable (Publication) -> Void) {
        var name: (@Sendable (Int) -> String)?
        if let template = nameTemplate {
            name = { index in
                template.render(
                    provider: provenance.provider ?? "", id: provenance.id ?? stem, title: provenance.title, index: index,
                    sha256: image.sha256, format: image.info.format
                )
            }
        }
        let naming = name
        let label = self.label
        var provenance = provenance
        provenance.label = label?.name ?? provenance.label
        var completion = completion
        if let failures, !retried.isEmpty {
            let key = CacheKey(url: image.url).normalizedURL
            if retried.contains(key) {
                completion = { [completion] outcome in
                    if case .success(.saved) = outcome { try? failures.forgetFailure(normalizedURL: key) }
                    completion(outcome)
                }
            }
        }
        committer.commit(ImageCommitter.Item(
            image: image,
            stem: stem,
            name: naming,
            record: { [provenance] file in ManifestRecord(file: file, image: image, provenance: provenance) },
            label: label,
            completion: completion
        ))
    }

    public func settle(url: URL?, provenance: ImageProvenance, as outcome: RowOutcome) {
        guard let store = store ?? failures, let url else { return }
        let provider = provenance.provider
        switch (outcome, outcome.status) {
        case let (.failed(reason, _, isTransient), _):
            try? store.recordFailure(url: url, provider: provider, reason: reason, isTransient: isTransient)
        case let (_, status?) where RowOutcome.Status.recordedAsReasons.contains(status):
            // Kept as the reason, with a refusal's evidence, so that a later run passes over it too.
            try? store.recordFailure(url: url, provider: provider, reason: status.rawValue, isTransient: false, refusal: outcome.reservation)
        default:
            break
        }
    }

    public var publishedCount: Int { committer.admittedCount }

    public func drain() async {
        await committer.drain()
    }
}

extension ManifestRecord {
    /// The record of `image` saved as `file`, with what its source knew about it.
    public init(file: String, image: VerifiedImage, provenance: ImageProvenance) {
        self.init(
            file: file, url: image.url.absoluteString, pageURL: provenance.pageURL, provider: provenance.provider,
            id: provenance.id, title: provenance.title, creator: provenance.creator, license: provenance.license,
            licenseURL: provenance.licenseURL, width: image.info.width, height: image.info.height, bytes: image.bytes,
            sha256: image.sha256, format: image.info.format.rawValue, query: provenance.query, fetchedAt: image.fetchedAt,
            key: provenance.key, caption: provenance.caption, label: provenance.label,
            originalWidth: image.originalWidth, originalHeight: image.originalHeight, originalFormat: image.originalFormat?.rawValue,
            originalBytes: image.originalBytes, blurredBoxes: image.blurredBoxes, hashes: image.pictureHashes,
            declarations: image.declarations, columns: provenance.columns
        )
    }
}
