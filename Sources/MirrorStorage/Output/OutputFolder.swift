import Foundation
import MirrorModel
import MirrorSync
import MirrorCore
import MirrorImages

/// An output folder as one run sees it: the lock, what is already saved (from `manifest.jsonl`),
/// and the crash-safe way new images are published into it.
///
/// Opening a folder takes its lock, then reconciles it with its state: temporary files a killed run
/// left are deleted; images that a kill published but kept out of the manifest (they are listed in
/// the journal) are verified by hash and adopted; manifest lines whose file is gone are dropped. From
/// then on the manifest and the files agree, and every later publish keeps them agreeing.
///
/// `metadata.jsonl`, the file Hugging Face `imagefolder` reads, is a copy of `manifest.jsonl`, byte for byte: every
/// batch's lines are appended to the manifest, then to the copy (a failure of either takes the batch back from both).
/// So the copy is always the manifest or, after a kill between the two appends, a part of it from its start; opening
/// the folder writes it anew (to a temporary file renamed over it) whenever it is not the whole manifest — missing,
/// behind, or an earlier mirror's symbolic link to the manifest (a link stored by git is not the file the Hub reads).
/// A `metadata.jsonl` that is no part of the manifest is someone else's: it is left as it is, and not appended to
/// (``Reconciliation/foreignMetadata``). Two files rather than one under two names: the manifest keeps its name for
/// every reader it has (scripts, `mirror gallery`, `mirror status`), the copy is a plain file for the Hub, git, zip
/// and Windows; it costs the manifest's bytes twice (about 1.2 KB an image) and one more append per batch.
public final class OutputFolder: Sendable {
    /// What opening the folder had to repair.
    public struct Reconciliation: Sendable, Hashable {
        /// Temporary files of a killed run, deleted.
        public var removedTemporaryFiles = 0
        /// Published images a kill kept out of the manifest, verified and added to it.
        public var adoptedFiles = 0
        /// Manifest lines whose file no longer exists, dropped.
        public var droppedRecords = 0
        /// `metadata.jsonl` written anew as a copy of the manifest: it was missing, behind it (a kill between the two
        /// appends), or an earlier mirror's link to it.
        public var rewroteMetadata = false
        /// A `metadata.jsonl` that is no copy of the manifest (someone else's), left as it is and not kept up.
        public var foreignMetadata = false
    }

    /// What is saved, as lookups. Keys are 128-bit fingerprints, not the strings themselves (16 bytes a key instead of
    /// 60 to 100), all four kinds in one ``SpillingKeys`` under their own namespace: in memory for a folder of up to
    /// about 10,000 images, in a scratch SQLite file in `.mirror/` beyond, so that memory does not grow with the folder.
    /// A collision (2^-128 for a pair) could only make a URL or a digest look saved, or a free name look taken.
    ///
    /// URLs and digests are kept per label (the query of a `--queries` run; none otherwise): one image may be saved
    /// once in each labelled subfolder.
    private struct State {
        var count = 0
        /// Images saved under each label (`""` for none).
        var counts: [String: Int] = [:]
        /// Normalised URLs saved, with their label (``LookupKind/url``); the first file saved with each SHA-256 under each
        /// label (``LookupKind/digest``), and under any label (``LookupKind/labelledDigest``: those without one are under
        /// ``LookupKind/digest`` already); saved file names, lowercased (``LookupKind/name``).
        var keys: SpillingKeys
        /// Saved images' PDQ hashes, for `--dedup near`.
        var near = NearDuplicateFiles()
        /// Where the folder's images are (flat, numbered subfolders), for where the next go.
        var placement = FolderPlacement()
        /// Saved images whose hashes an earlier mirror's computation made (``ManifestRecord/hasStaleHashes``).
        var staleHashes = 0
    }

    /// The kinds of key in ``State/keys``, each in its own namespace.
    fileprivate enum LookupKind: UInt8 {
        case url = 1, digest, labelledDigest, name
    }

    public let directory: URL
    public let stateDirectory: URL
    public let manifestURL: URL
    /// `metadata.jsonl`: the manifest's copy under the name `imagefolder` reads (unless ``Reconciliation/foreignMetadata``).
    public let metadataURL: URL
    let journalURL: URL
    /// The images being decoded, so that a crash in a decoder costs its row, never the job (``DecodeJournal``).
    public let decodeJournal: DecodeJournal
    public let reconciliation: Reconciliation
    private let lock: FolderLock
    private let state: Locked<State>

    /// Opens (creating it if needed) and locks an output folder, then reconciles it. With `nearDuplicates`, the saved
    /// images' hashes are kept from the manifest's one read for ``file(lookingLike:label:anyLabel:)``
    /// (``useNearDuplicates(_:)`` would read it again).
    ///
    /// - Throws: `FolderLock.Held` when another run holds the folder; `FileError` when it cannot be
    ///   created or written (the path is a file, the folder is read-only, …).
    public init(directory: URL, nearDuplicates: NearDuplicatePolicy? = nil) throws {
        let directory = directory.standardizedFileURL
        self.directory = directory
        stateDirectory = directory.appendingPathComponent(".mirror", isDirectory: true)
        manifestURL = directory.appendingPathComponent("manifest.jsonl")
        metadataURL = directory.appendingPathComponent("metadata.jsonl")
        journalURL = stateDirectory.appendingPathComponent("journal.jsonl")
        try Self.makeDirectory(directory)
        try Self.makeDirectory(stateDirectory)
        if access(directory.path, W_OK) != 0 {
            throw FileError(operation: "write to", path: directory.path, code: errno)
        }
        lock = try FolderLock(at: stateDirectory.appendingPathComponent("lock"))
        decodeJournal = try DecodeJournal(directory: stateDirectory)
        state = Locked(State(keys: SpillingKeys(spillingInto: stateDirectory, name: "saved")))

        var repairs = Reconciliation()
        repairs.removedTemporaryFiles = AtomicFile.removeLeftovers(in: directory) + AtomicFile.removeLeftovers(in: stateDirectory)
        // Mapped, not read: compared with the metadata file's bytes below, then parsed line by line.
        let manifest = (try? Data(contentsOf: manifestURL, options: .alwaysMapped)) ?? Data()
        let metadata = Self.inspectMetadata(at: metadataURL, manifest: manifest)
        var records = manifest.split(separator: 0x0A).compactMap(ManifestRecord.decode)
        let known = Set(records.map(\.file))
        for record in ManifestRecord.read(from: journalURL) where !known.contains(record.file) {
            let file = directory.appendingPathComponent(record.file)
            if let digest = try? sha256Hex(fileAt: file), digest == record.sha256 {
                records.append(record)
                repairs.adoptedFiles += 1
            }
        }
        let present = records.filter { FileManager.default.fileExists(atPath: directory.appendingPathComponent($0.file).path) }
        repairs.droppedRecords = records.count - present.count
        let rewritesManifest = repairs.adoptedFiles > 0 || repairs.droppedRecords > 0 || manifest.last.map { $0 != 0x0A } == true
        if rewritesManifest {
            // The copy goes first: a kill before it is written anew below leaves none, never a stale one.
            if metadata != .foreign { unlink(metadataURL.path) }
            try Self.rewrite(manifestURL, with: present, in: stateDirectory)
        }
        switch metadata {
        case .foreign:
            repairs.foreignMetadata = true
        case .stale:
            try Self.copyManifest(manifestURL, to: metadataURL, in: directory)
            repairs.rewroteMetadata = true
        case .copy where rewritesManifest:
            try Self.copyManifest(manifestURL, to: metadataURL, in: directory)
        case .copy:
            break
        }
        try? FileManager.default.removeItem(at: journalURL)
        reconciliation = repairs
        state.withLock { state in
            if let nearDuplicates { state.near.enable(nearDuplicates) }
            for record in present { Self.remember(record, in: &state) }
        }
    }

    // MARK: What is saved

    /// Images the manifest lists.
    public var savedCount: Int { state.withLock { $0.count } }

    /// Images saved under `label` (`nil`: those with none).
    public func savedCount(label: String?) -> Int {
        state.withLock { $0.counts[label ?? "", default: 0] }
    }

    /// All records, in manifest order, read from the manifest. (Only what lookups need is kept in memory,
    /// so that a folder of 100,000 images does not hold 100,000 records.)
    public var records: [ManifestRecord] { ManifestRecord.read(from: manifestURL) }

    /// Releases the folder's lock at once (the run is over; a later run in this process may open it again).
    public func releaseLock() {
        lock.release()
    }

    /// Whether an image from this URL (normalised with `CacheKey`) is already saved.
    public func contains(url: URL) -> Bool {
        contains(normalizedURL: CacheKey(url: url).normalizedURL)
    }

    /// Whether an image from the URL whose `CacheKey(url:).normalizedURL` this is is already saved (under `label`).
    public func contains(normalizedURL key: String, label: String? = nil) -> Bool {
        let fingerprint = Self.scoped(key, label: label)
        return state.withLock { $0.keys.contains(fingerprint.key(for: .url)) }
    }

    /// The file already holding these bytes (under `label`, or under any label when `anyLabel`), if any.
    public func file(withSHA256 digest: String, label: String? = nil, anyLabel: Bool = false) -> String? {
        if anyLabel {
            let fingerprint = Fingerprint(digest)
            return state.withLock {
                $0.keys.value(for: fingerprint.key(for: .digest))
                    ?? $0.keys.value(for: fingerprint.key(for: .labelledDigest))
            }
        }
        let fingerprint = Self.scoped(digest, label: label)
        return state.withLock { $0.keys.value(for: fingerprint.key(for: .digest)) }
    }

    /// Compares new images with the saved ones by `policy` (`--dedup near`); called before the first lookup. Unless the
    /// folder was opened with a policy, reads the saved images' hashes from the manifest then (a run with `--dedup
    /// exact` keeps none in memory).
    public func useNearDuplicates(_ policy: NearDuplicatePolicy) {
        guard state.withLock({ $0.near.policy == nil }) else { return }
        let saved = records
        state.withLock { state in
            guard state.near.policy == nil else { return }
            state.near.enable(policy)
            for record in saved { Self.rememberHashes(of: record, in: &state) }
        }
    }

    /// The saved file whose picture is that of `hashes` (``NearDuplicatePolicy/comparedHashes(of:)``; under `label`, or
    /// under any label when `anyLabel`), with the distance of their closest hashes; nil when none is or
    /// ``useNearDuplicates(_:)`` was not called.
    public func file(lookingLike hashes: PictureHashes, label: String? = nil, anyLabel: Bool = false) -> (file: String, distance: Int)? {
        state.withLock { $0.near.match(for: hashes, label: label ?? "", anyLabel: anyLabel) }
    }

    /// The saved images whose hashes another computation made (``ManifestRecord/hasStaleHashes``: an earlier mirror's):
    /// never compared until ``refreshHashes(_:)`` replaces them.
    public func recordsWithStaleHashes() -> [ManifestRecord] {
        state.withLock { $0.staleHashes } == 0 ? [] : records.filter(\.hasStaleHashes)
    }

    /// Replaces saved images' hashes (by file name) with this mirror's, and compares by them from then on. The manifest
    /// is written anew as a repair writes it (a temporary file in `.mirror/`, synced, renamed over it), each updated line
    /// with its `pdq`, `pdq_quality`, `pdq_trimmed` and `pdq_version` replaced in place and every other byte kept (kept
    /// columns too). Called before the run publishes anything (the manifest must not grow meanwhile).
    ///
    /// - Returns: the records updated.
    /// - Throws: `FileError` when the manifest cannot be replaced (then nothing changed).
    @discardableResult
    public func refreshHashes(_ hashes: [String: PictureHashes]) throws(FileError) -> Int {
        guard !hashes.isEmpty, let data = try? Data(contentsOf: manifestURL) else { return 0 }
        var output = Data()
        output.reserveCapacity(data.count)
        var updated: [ManifestRecord] = []
        var refreshed = 0  // of those, stale before
        for line in data.split(separator: 0x0A, omittingEmptySubsequences: false).dropLast(data.last == 0x0A ? 1 : 0) {
            if let record = ManifestRecord.decode(line), let new = hashes[record.file],
               let patched = ManifestRecord.line(Data(line), replacingHashesWith: new),
               let decoded = ManifestRecord.decode(patched) {
                output.append(patched)
                updated.append(decoded)
                if record.hasStaleHashes { refreshed += 1 }
            } else {
                output.append(contentsOf: line)
            }
            output.append(0x0A)
        }
        guard !updated.isEmpty else { return 0 }
        try Self.replace(manifestURL, with: output, in: stateDirectory)
        state.withLock { state in
            state.staleHashes -= refreshed
            for record in updated { Self.rememberHashes(of: record, in: &state) }
        }
        return updated.count
    }

    /// A lookup key of `text` under `label`: the text alone when there is none, so unlabelled folders read as before.
    private static func scoped(_ text: String, label: String?) -> Fingerprint {
        guard let label, !label.isEmpty else { return Fingerprint(text) }
        return Fingerprint(label + "\u{0}" + text)
    }

    /// Makes the subfolder labelled images go to.
    public func makeSubfolder(_ name: String) throws(FileError) {
        try Self.makeDirectory(directory.appendingPathComponent(name, isDirectory: true))
    }

    /// Whether a file name is taken (by a saved image or anything else in the folder). Saved names are
    /// compared case-insensitively, so that the folder still works copied to a case-insensitive disk.
    func isTaken(_ name: String) -> Bool {
        let fingerprint = Fingerprint(name.lowercased())
        if state.withLock({ $0.keys.contains(fingerprint.key(for: .name)) }) { return true }
        var info = stat()
        return lstat(directory.path + "/" + name, &info) == 0
    }

    // MARK: Publishing (used by ImageCommitter, one batch at a time)

    /// The manifest lines of a batch, serialised once for the journal and the manifest.
    static func lines(of records: [ManifestRecord]) -> Data {
        var data = Data()
        for record in records {
            guard let line = try? record.jsonLine() else { continue }
            data.append(line)
        }
        return data
    }

    /// Writes the journal of a batch about to be published: its records (``lines(of:)``), with their final names.
    func writeJournal(_ lines: Data, sync: Bool) throws(FileError) {
        try Self.write(lines, to: journalURL, flags: O_WRONLY | O_CREAT | O_TRUNC, sync: sync)
    }

    /// Appends a published batch to the manifest (`lines`: ``lines(of:)`` of `records`), then to its copy
    /// `metadata.jsonl`, then clears the journal. If the copy cannot take them, the manifest is cut back too: the batch
    /// is in both files or in neither.
    func appendToManifest(_ records: [ManifestRecord], lines: Data, sync: Bool) throws(FileError) {
        let length = try Self.append(lines, to: manifestURL, sync: sync)
        if !reconciliation.foreignMetadata {
            do throws(FileError) {
                try Self.append(lines, to: metadataURL, sync: sync)
            } catch {
                _ = truncate(manifestURL.path, length)
                throw error
            }
        }
        state.withLock { state in
            for record in records { Self.remember(record, in: &state) }
        }
        truncate(journalURL.path, 0)
    }

    /// Where the folder's images are, for where the next go (``ImageCommitter`` names a batch on a copy).
    var placement: FolderPlacement { state.withLock { $0.placement } }

    // MARK: metadata.jsonl

    /// What a run says once when the folder's `metadata.jsonl` is someone else's (``Reconciliation/foreignMetadata``).
    public static let foreignMetadataNotice =
        "metadata.jsonl is not mirror's copy of manifest.jsonl: left as it is, without this run's images (move it away and the next run writes the copy)"

    /// What a folder's `metadata.jsonl` is, beside its manifest.
    enum MetadataFile: Equatable {
        /// The manifest's bytes, all of them.
        case copy
        /// Mirror's, but not the whole manifest: missing, the manifest's first bytes only (a kill between the two
        /// appends of a batch), or an earlier mirror's symbolic link to `manifest.jsonl`.
        case stale
        /// Someone else's: a file that is no part of the manifest, a link elsewhere, a folder.
        case foreign
    }

    /// What the file at `url` is, beside the manifest's bytes.
    static func inspectMetadata(at url: URL, manifest: Data) -> MetadataFile {
        var info = stat()
        // Missing beside an empty manifest, it is the copy still: the first append makes it.
        guard lstat(url.path, &info) == 0 else { return errno != ENOENT ? .foreign : manifest.isEmpty ? .copy : .stale }
        switch info.st_mode & S_IFMT {
        case S_IFLNK:
            var target = [UInt8](repeating: 0, count: 64)
            let length = readlink(url.path, &target, target.count)
            return length > 0 && String(decoding: target.prefix(length), as: UTF8.self) == "manifest.jsonl" ? .stale : .foreign
        case S_IFREG:
            guard Int(info.st_size) <= manifest.count,
                  let data = try? Data(contentsOf: url, options: .alwaysMapped) else { return .foreign }
            if data.count == manifest.count { return data == manifest ? .copy : .foreign }
            return manifest.prefix(data.count) == data ? .stale : .foreign
        default:
            return .foreign
        }
    }

    /// Writes `metadata` anew as a copy of the manifest: a temporary file in the folder, synced, renamed over whatever
    /// is there (a stale copy, an earlier mirror's link), then the folder synced.
    private static func copyManifest(_ manifest: URL, to metadata: URL, in directory: URL) throws(FileError) {
        let bytes = (try? Data(contentsOf: manifest, options: .alwaysMapped)) ?? Data()
        try AtomicFile.replaceFile(bytes, at: metadata, sync: true, staging: directory)
        try AtomicFile.syncDirectory(directory)
    }

    // MARK: Helpers

    private static func remember(_ record: ManifestRecord, in state: inout State) {
        state.placement.add(file: record.file, labelled: !(record.label ?? "").isEmpty)
        state.count += 1
        state.counts[record.label ?? "", default: 0] += 1
        if let normalized = CacheKey.normalized(record.url) {
            state.keys.insert(scoped(normalized, label: record.label).key(for: .url))
        }
        // The first file with these bytes is the one named: insert keeps an existing key's value.
        state.keys.insert(scoped(record.sha256, label: record.label).key(for: .digest), value: record.file)
        if let label = record.label, !label.isEmpty {
            state.keys.insert(Fingerprint(record.sha256).key(for: .labelledDigest), value: record.file)
        }
        state.keys.insert(Fingerprint(record.file.lowercased()).key(for: .name))
        if record.hasStaleHashes { state.staleHashes += 1 }
        rememberHashes(of: record, in: &state)
    }

    /// Adds a saved record's hashes to the near-duplicate lookup, when it compares by them (and they are of this
    /// mirror's computation).
    private static func rememberHashes(of record: ManifestRecord, in state: inout State) {
        guard state.near.policy != nil, !record.hasStaleHashes, let hashes = record.pictureHashes else { return }
        state.near.add(hashes, side: min(record.originalWidth, record.originalHeight), file: record.file, label: record.label ?? "")
    }

    /// Makes the folder `url` (and its parents) unless it is there; a symbolic link there is refused (``FileError``
    /// `ELOOP`): the output folder the user names is resolved before (``OutputPath``), so a link here is one inside it.
    package static func makeDirectory(_ url: URL) throws(FileError) {
        var info = stat()
        if lstat(url.path, &info) == 0 {
            if (info.st_mode & S_IFMT) == S_IFDIR { return }
            throw FileError(operation: "use as a folder", path: url.path, code: (info.st_mode & S_IFMT) == S_IFLNK ? ELOOP : ENOTDIR)
        }
        do {
            try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        } catch {
            let code = (error as NSError).code == NSFileWriteNoPermissionError ? EACCES : Int32(EIO)
            throw FileError(operation: "create", path: url.path, code: access(url.deletingLastPathComponent().path, W_OK) != 0 ? EACCES : code)
        }
    }

    /// Appends to a file (never through a symlink); if the write fails part-way (a full disk), the file
    /// is cut back to its old length through the same descriptor, so no partial line remains. Returns that old length.
    @discardableResult
    private static func append(_ data: Data, to url: URL, sync: Bool) throws(FileError) -> off_t {
        let descriptor = open(url.path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0o644)
        guard descriptor >= 0 else { throw FileError(operation: "open", path: url.path, code: errno) }
        defer { close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { throw FileError(operation: "read the size of", path: url.path, code: errno) }
        do throws(FileError) {
            try AtomicFile.writeAll(data, to: descriptor, path: url.path)
            if sync, fsync(descriptor) != 0 { throw FileError(operation: "sync", path: url.path, code: errno) }
        } catch {
            _ = ftruncate(descriptor, info.st_size)
            throw error
        }
        return info.st_size
    }

    private static func write(_ data: Data, to url: URL, flags: Int32, sync: Bool) throws(FileError) {
        let descriptor = open(url.path, flags | O_CLOEXEC | O_NOFOLLOW, 0o644)
        guard descriptor >= 0 else { throw FileError(operation: "open", path: url.path, code: errno) }
        defer { close(descriptor) }
        try AtomicFile.writeAll(data, to: descriptor, path: url.path)
        if sync, fsync(descriptor) != 0 { throw FileError(operation: "sync", path: url.path, code: errno) }
    }

    private static func rewrite(_ url: URL, with records: [ManifestRecord], in scratch: URL) throws(FileError) {
        var data = Data()
        for record in records {
            guard let line = try? record.jsonLine() else { continue }
            data.append(line)
        }
        try replace(url, with: data, in: scratch)
    }

    /// Puts `data` in place of the file at `url`: a temporary file in `scratch`, synced, renamed over it.
    private static func replace(_ url: URL, with data: Data, in scratch: URL) throws(FileError) {
        let temporary = try AtomicFile.makeTemporary(in: scratch)
        close(temporary.descriptor)
        try write(data, to: temporary.url, flags: O_WRONLY | O_TRUNC, sync: true)
        if rename(temporary.url.path, url.path) != 0 {
            let code = errno
            AtomicFile.remove(temporary.url)
            throw FileError(operation: "replace", path: url.path, code: code)
        }
    }
}

extension ManifestRecord {
    /// Whether a manifest ends in a partial line (a kill mid-append on a file system that allows it).
    static func hasTornLine(_ url: URL) -> Bool {
        guard let data = try? Data(contentsOf: url), let last = data.last else { return false }
        return last != 0x0A
    }
}

extension Fingerprint {
    /// This fingerprint as a key of one kind of the folder's lookups (they share one ``SpillingKeys``).
    fileprivate func key(for kind: OutputFolder.LookupKind) -> Fingerprint { namespaced(kind.rawValue) }
}
