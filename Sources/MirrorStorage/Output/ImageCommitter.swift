import Foundation
import MirrorImages
import MirrorModel
import MirrorSync
import MirrorCore

/// Publishes verified images into an output folder in batches: no duplicate bytes, no clobbered
/// names, never more than allowed, and crash-safe at every instant.
///
/// Images arrive from many threads; one serial queue publishes whatever has accumulated within ``gatherWindow`` of a
/// batch's first image (or ``fullBatch`` images), so batches grow with the load. For each batch: fsync its files (a
/// large batch with one `syncfs` of the folder's file system, a small one file by file, in parallel on a small pool);
/// drop duplicates (by SHA-256, against the folder and within the batch) and anything beyond the admission limit; pick
/// a free name for each survivor, in the folder or the numbered subfolder the ``layout`` places it in (made if
/// missing); write the batch to the journal; link each file into place; fsync the folders; record
/// the batch in the state database in one transaction; append the manifest lines; clear the journal. A kill before the
/// links leaves only temporary files (deleted next run); a kill after leaves files the journal names (verified and
/// adopted next run).
public final class ImageCommitter: Sendable {
    /// How one image's publication ended.
    public typealias Outcome = Publication

    /// One image waiting to be published.
    public struct Item: Sendable {
        public let image: VerifiedImage
        /// The wanted file name stem; the extension comes from the format.
        public var stem: String
        /// Names the file from its 1-based index in the folder instead of `stem`, if set.
        public var name: (@Sendable (_ index: Int) -> String)?
        /// Builds the manifest record once the file name is known.
        public var record: @Sendable (_ fileName: String) -> ManifestRecord
        /// The label (a `--queries` run's query) and the subfolder its images go to, or `nil`.
        public var label: (name: String, subfolder: String)?
        public var completion: @Sendable (Outcome) -> Void
        /// Set when the file could not be synced; the item then fails.
        var syncError: FileError?
        /// `image.temporaryFile.path`, made once: `URL.path` costs a parse each time (0.6 % of `mirror urls`'s samples
        /// when the committer asked for it twice per image).
        let temporaryPath: String

        public init(
            image: VerifiedImage, stem: String, name: (@Sendable (_ index: Int) -> String)? = nil,
            record: @escaping @Sendable (_ fileName: String) -> ManifestRecord,
            label: (name: String, subfolder: String)? = nil,
            completion: @escaping @Sendable (Outcome) -> Void
        ) {
            self.label = label
            self.image = image
            temporaryPath = image.temporaryFile.path
            self.stem = stem
            self.name = name
            self.record = record
            self.completion = completion
        }
    }

    private struct State {
        var pending: [Item] = []
        var flushScheduled = false
        var inFlight = 0
        var admitted = 0
        var drainWaiters: [CheckedContinuation<Void, Never>] = []
    }

    public let folder: OutputFolder
    /// The state database that records each published batch, if any.
    public let store: StateStore?
    /// Whether files, the folder and the manifest are fsynced (power-loss durability). Default true.
    public let isSyncEnabled: Bool
    /// Images admitted at most in this run, or nil for no limit.
    public let admissionLimit: Int?
    /// Whether bytes saved under one label are refused under another (`--unique-across-queries`). Default false:
    /// kept in both, and counted in ``crossLabelDuplicates``.
    public let uniqueAcrossLabels: Bool
    /// What is taken for a duplicate (`--dedup`). Default ``Deduplication/exact``.
    public let deduplication: Deduplication
    /// Where in the folder new images go: the folder itself or numbered subfolders (`--layout`). Default
    /// ``FolderLayout/Mode/automatic``.
    public let layout: FolderLayout
    private let crossLabel = Locked(0)

    /// Images saved this run whose bytes another label already holds.
    public var crossLabelDuplicates: Int { crossLabel.withLock { $0 } }
    private let queue = DispatchQueue(label: "mirror.commit")
    private let syncPool = BlockingPool(maximumThreads: 8, name: "mirror.fsync")
    private let state = Locked(State())

    public init(
        folder: OutputFolder, store: StateStore? = nil, isSyncEnabled: Bool = true, admissionLimit: Int? = nil, uniqueAcrossLabels: Bool = false,
        deduplication: Deduplication = .exact, layout: FolderLayout = FolderLayout()
    ) {
        self.layout = layout
        self.uniqueAcrossLabels = uniqueAcrossLabels
        self.deduplication = deduplication
        if let policy = deduplication.nearPolicy { folder.useNearDuplicates(policy) }
        self.folder = folder
        self.store = store
        self.isSyncEnabled = isSyncEnabled
        self.admissionLimit = admissionLimit
    }

    /// Images published by this committer so far.
    public var admittedCount: Int { state.withLock { $0.admitted } }

    /// Queues an image for publication; its completion runs on the commit queue, at most ``gatherWindow`` later than
    /// it would at once (the time its batch waits for more images).
    public func commit(_ item: Item) {
        let flush = state.withLock { state -> Flush? in
            state.inFlight += 1
            state.pending.append(item)
            if !state.flushScheduled {
                state.flushScheduled = true
                return .gathered
            }
            return state.pending.count == Self.fullBatch ? .now : nil
        }
        switch flush {
        case .gathered: queue.asyncAfter(deadline: .now() + Self.gatherWindow) { self.flush() }
        case .now: queue.async { self.flush() }
        case nil: break
        }
    }

    private enum Flush { case gathered, now }

    /// How long the first image of a batch waits for others before the batch is published. Every batch costs the same
    /// journal write, folder sync and manifest append however many images it holds, and from ``fileSystemSyncBatch``
    /// images on one `syncfs` instead of an fsync each; published as soon as they came, batches held 3 to 4 images at
    /// 16 downloads at once on loopback (measured: 528 batches for 2,000 images). The wait holds no download slot.
    static let gatherWindow = DispatchTimeInterval.milliseconds(2)

    /// A batch this large is published without waiting for the rest of ``gatherWindow``.
    static let fullBatch = 64

    /// Returns when every queued image has been published or refused.
    public func drain() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let done = state.withLock { state -> Bool in
                if state.inFlight == 0 { return true }
                state.drainWaiters.append(continuation)
                return false
            }
            if done { continuation.resume() }
        }
    }

    private func flush() {
        let batch = state.withLock { state -> [Item] in
            state.flushScheduled = false
            defer { state.pending.removeAll(keepingCapacity: true) }
            return state.pending
        }
        guard !batch.isEmpty else { return }
        let outcomes = publish(isSyncEnabled ? syncFiles(of: batch) : batch)
        for (item, outcome) in zip(batch, outcomes) {
            item.completion(outcome)
        }
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.inFlight -= batch.count
            guard state.inFlight == 0 else { return [] }
            defer { state.drainWaiters.removeAll() }
            return state.drainWaiters
        }
        for waiter in waiters { waiter.resume() }
    }

    private func publish(_ batch: [Item]) -> [Outcome] {
        var outcomes = [Outcome?](repeating: nil, count: batch.count)
        var accepted: [(index: Int, name: String, record: ManifestRecord)] = []
        // Where this batch's images go, on a copy of the folder's placement: a batch that fails changes nothing.
        var placement = folder.placement
        // The folders this batch's files go into, from the output folder (`""`), labels' and numbered subfolders.
        var folders: Set<String> = []
        var batchDigests: [String: String] = [:]
        var batchAnyLabel: Set<String> = []
        var batchNames: Set<String> = []
        var batchHashes: [(hashes: PictureHashes, name: String, label: String)] = []
        let near = deduplication.nearPolicy
        var admitted = state.withLock { $0.admitted }

        for (index, item) in batch.enumerated() {
            if let syncError = item.syncError {
                outcomes[index] = .failure(.unwritable(syncError))
                continue
            }
            let digest = item.image.sha256
            let label = item.label?.name
            let batchKey = uniqueAcrossLabels ? digest : (label ?? "") + "\u{0}" + digest
            if deduplication.refusesSameBytes,
               let existing = folder.file(withSHA256: digest, label: label, anyLabel: uniqueAcrossLabels) ?? batchDigests[batchKey] {
                outcomes[index] = .success(.duplicate(of: existing))
                continue
            }
            let hashes = near?.comparedHashes(of: item.image)
            if let hashes, let near, let match = folder.file(lookingLike: hashes, label: label, anyLabel: uniqueAcrossLabels)
                ?? Self.closest(to: hashes, in: batchHashes, label: label ?? "", anyLabel: uniqueAcrossLabels, by: near) {
                outcomes[index] = .success(.nearDuplicate(of: match.file, distance: match.distance))
                continue
            }
            if let limit = admissionLimit, admitted >= limit {
                outcomes[index] = .failure(.notAdmitted)
                continue
            }
            let base = item.label?.subfolder ?? ""
            let subfolder = placement.place(in: base, layout: layout).map(FolderLayout.subfolderName)
            let into = [base, subfolder ?? ""].filter { !$0.isEmpty }.joined(separator: "/")
            folders.insert(into)
            let name = freeName(for: item, in: into, index: folder.savedCount + accepted.count + 1, avoiding: batchNames)
            batchNames.insert(name.lowercased())
            if label != nil, !uniqueAcrossLabels, folder.file(withSHA256: digest, anyLabel: true) != nil || batchAnyLabel.contains(digest) {
                crossLabel.withLock { $0 += 1 }
            }
            batchDigests[batchKey] = name
            if let hashes { batchHashes.append((hashes, name, label ?? "")) }
            batchAnyLabel.insert(digest)
            admitted += 1
            accepted.append((index, name, item.record(name)))
        }

        var published: [String] = []
        let records = accepted.map(\.record)
        let lines = OutputFolder.lines(of: records)
        // Paths as strings: `URL.appendingPathComponent` asks the file system whether the name is a folder.
        let directory = folder.directory.path + "/"
        do throws(FileError) {
            try folder.writeJournal(lines, sync: isSyncEnabled)
            // A numbered subfolder is made when its first image comes (a label's folder is made with its sink).
            for subfolder in folders where !subfolder.isEmpty { try folder.makeSubfolder(subfolder) }
            for entry in accepted {
                try AtomicFile.publish(temporaryPath: batch[entry.index].temporaryPath, as: directory + entry.name)
                published.append(entry.name)
            }
            if isSyncEnabled {
                // Every folder a file was renamed into, deepest first, then the ones holding them (a label's folder
                // holds its numbered subfolders, made perhaps in this batch), then the output folder.
                let labels = Set(accepted.compactMap { batch[$0.index].label?.subfolder })
                for subfolder in folders.union(labels).sorted(by: >) where !subfolder.isEmpty {
                    try AtomicFile.syncDirectory(folder.directory.appendingPathComponent(subfolder, isDirectory: true))
                }
                try AtomicFile.syncDirectory(folder.directory)
            }
            // The database row before the manifest line: a kill in between leaves a row and a journal
            // entry, and the next run adopts the file into the manifest (rows are inserted idempotently).
            do {
                try store?.insertImages(records)
            } catch {
                throw FileError(
                    operation: "record the images in", path: folder.stateDirectory.appendingPathComponent("state.sqlite").path,
                    code: StateStore.errno(for: error)
                )
            }
            try folder.appendToManifest(records, lines: lines, sync: isSyncEnabled)
            for entry in accepted { outcomes[entry.index] = .success(.saved(entry.record, source: batch[entry.index].image.source)) }
            state.withLock { $0.admitted = admitted }
        } catch {
            // Nothing of this batch reached the manifest (a failed append is truncated away): take back
            // the files it published, so that the folder still holds exactly what the manifest lists.
            // (A kill at this point instead leaves them to the journal, and the next run adopts them.)
            for name in published { unlink(directory + name) }
            for entry in accepted { outcomes[entry.index] = .failure(.unwritable(error)) }
        }
        for (index, outcome) in outcomes.enumerated() {
            if case .success(.saved) = outcome { continue }
            AtomicFile.remove(batch[index].image.temporaryFile)
        }
        return outcomes.map { $0 ?? .failure(.notAdmitted) }
    }

    /// The image of this batch (accepted before) whose picture is closest to that of `hashes`, within what `policy`
    /// allows.
    private static func closest(
        to hashes: PictureHashes, in batch: [(hashes: PictureHashes, name: String, label: String)], label: String,
        anyLabel: Bool, by policy: NearDuplicatePolicy
    ) -> (file: String, distance: Int)? {
        var closest = ClosestMatch<String>()
        for entry in batch where anyLabel || entry.label == label {
            guard let limit = policy.distance(between: hashes.quality, entry.hashes.quality) else { continue }
            let found = NearDuplicatePolicy.distance(hashes, entry.hashes)
            if found <= limit { closest.offer(entry.name, distance: found) }
        }
        return closest.best.map { (file: $0.payload, distance: $0.distance) }
    }

    /// A name in the folder `into` (a path from the output folder, `""` for itself) that no saved file and no file of
    /// this batch has, ignoring case (`batchNames` are lowercased).
    private func freeName(for item: Item, in into: String, index: Int, avoiding batchNames: Set<String>) -> String {
        let format = item.image.info.format
        let prefix = into.isEmpty ? "" : into + "/"
        let plain = prefix + (item.name?(index) ?? FileNaming.fileName(stem: item.stem, format: format))
        if !batchNames.contains(plain.lowercased()) && !folder.isTaken(plain) { return plain }
        let stem = String(plain.dropFirst(prefix.count).dropLast(format.fileExtension.count + 1))
        let digest = item.image.sha256
        for length in [8, 12, 16, 64] {
            let name = prefix + FileNaming.fileName(stem: stem, format: format, suffix: String(digest.prefix(length)))
            if !batchNames.contains(name.lowercased()) && !folder.isTaken(name) { return name }
        }
        return prefix + FileNaming.fileName(stem: stem, format: format, suffix: UUID().uuidString.lowercased())
    }

    /// Fsyncs the files of a batch: the first on this thread, and when that took long enough to be a real disk's
    /// flush, the rest in parallel (ext4 shares the flushes of concurrent fsyncs), slices of it on the sync pool and one
    /// here; when it was instant (tmpfs, a disk cache), the rest here too. Per batch, not per image: a hand-off to the
    /// pool for every image cost more thread wake-ups and lock contention than anything else in the pipeline
    /// (`perf record -e context-switches`).
    private func syncFiles(of batch: [Item]) -> [Item] {
        // A large batch: one syncfs instead of one fsync each. Where it fails, the fsyncs below find which files
        // (a file's write-back error is still unseen by its own descriptors).
        if batch.count >= Self.fileSystemSyncBatch, (try? AtomicFile.syncFileSystem(of: folder.directory)) != nil {
            return batch
        }
        let failures = Locked<[Int: FileError]>([:])
        let sync: @Sendable (Int, Int) -> Void = { [self] first, step in
            for index in stride(from: first, to: batch.count, by: step) {
                do throws(FileError) {
                    try syncFile(batch[index].temporaryPath)
                } catch {
                    failures.withLock { $0[index] = error }
                }
            }
        }
        let clock = ContinuousClock()
        let firstTook = clock.measure { sync(0, batch.count) }
        if batch.count > 1 {
            let slices = firstTook < Self.instantSync ? 1 : min(batch.count - 1, syncPool.maximumThreads)
            let group = DispatchGroup()
            for slice in 1..<slices {
                group.enter()
                syncPool.submit {
                    sync(1 + slice, slices)
                    group.leave()
                }
            }
            sync(1, slices)
            group.wait()
        }
        let failed = failures.withLock { $0 }
        guard !failed.isEmpty else { return batch }
        var synced = batch
        for (index, error) in failed { synced[index].syncError = error }
        return synced
    }

    /// The batch size from which the files are synced with one `syncfs(2)` of the folder's file system instead of one
    /// fsync each. ext4 without a journal flushes the device's cache once per fsync and cannot group them: measured
    /// (5,000 images, 64 at once), 25 % more images a second and 15 % less CPU. Only from this size: a light run (a cron
    /// job topping up a few images) on a busy shared disk does not wait for every other program's writes.
    static let fileSystemSyncBatch = 8

    /// An fsync faster than this found nothing to flush: the rest of its batch is synced on the same thread.
    private static let instantSync = Duration.microseconds(50)

    private func syncFile(_ path: String) throws(FileError) {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard descriptor >= 0 else { throw FileError(operation: "open", path: path, code: errno) }
        defer { close(descriptor) }
        try AtomicFile.sync(descriptor, path: path)
    }
}
