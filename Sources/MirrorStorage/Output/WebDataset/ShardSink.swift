import Foundation
import MirrorModel
import MirrorSync
import MirrorCore

/// WebDataset output: tar shards of a fixed number of table rows, each with its records and stats beside it.
///
/// Row `p` of the table belongs to shard `p / shardSize`. A shard is written once every one of its rows has
/// settled — saved, failed, a bad row, a duplicate, refused — in row order: `NNNNN.tar` holds `KEY.<ext>`,
/// `KEY.json` (the record) and `KEY.txt` (the caption, when there is one) for each saved row; `NNNNN.jsonl` one line
/// per row, failures included with their `status` and `error`; `NNNNN_stats.json` the counts. Each file appears whole
/// (temporary name, fsync, link); the stats file comes last and is what marks the shard complete — when it reads as the
/// shard's stats (``ShardCompletion``): a rerun skips a complete shard's rows without reading its other files, and
/// removes what a killed run left of an incomplete one, or what stands beside stats not to be trusted. At the
/// end of a run that wrote a shard, `sizes.json` (`{"00000.tar": samples, …}`, what open_clip and other trainers read
/// to size a dataset) is written anew, whole, from every complete shard's stats, other copies' included.
///
/// Until its shard is written a saved image waits in its temporary file in the output folder, so a run holds at most
/// the open shards' images on disk (rows are taken in order, so one or two shards are open at a time).
public final class ShardSink: ImageSink {
    /// Settings of the output.
    public struct Configuration: Sendable {
        /// The folder the shards are written into.
        public var directory: URL
        /// Table rows per shard. Default 10,000.
        public var shardSize = 10_000
        /// Whether shard files are fsynced before they are linked into place. Default true.
        public var isSyncEnabled = true
        /// This copy's share of a job run as N copies, or `nil` for the whole table. Each copy keeps its own state
        /// (`.mirror/shard-I-of-N/`) and writes only its own shard numbers, so N copies share one folder or prefix.
        public var shard: WorkShard?
        /// Object storage the shards go to once written, or `nil` to keep them in ``directory``. With a store,
        /// ``directory`` is the local state folder where each shard is assembled before it is uploaded.
        package var store: (any ShardStore)?
        /// Which failed rows of complete shards are downloaded again, or `nil` (the default) for none. A shard that
        /// gains a sample is written anew, whole (tar, records, then stats); the others are not touched.
        public var retryFailed: RetryFailed?
        /// What is taken for a duplicate (`--dedup`). Default ``Deduplication/exact``. The same bytes are refused across
        /// runs (the copy's digests are kept on disk); the same picture to the eye within a run (its hashes are in the
        /// records, for deduplicating a whole dataset afterwards: SCALING.md).
        public var deduplication: Deduplication = .exact
        /// The purpose reservations are matched against, and the signals set aside, written into each shard's stats
        /// (`purpose`, `ignoredOptOuts`); `nil` and empty when the run reads none.
        public var purpose: UsePurpose?
        public var ignoredOptOuts: Set<ConsentSignal> = []

        public init(directory: URL, shardSize: Int = 10_000) {
            self.directory = directory
            self.shardSize = shardSize
        }
    }

    /// The folder holds shards of another size than asked for.
    public struct ShardSizeMismatch: Error, Sendable, CustomStringConvertible {
        public var existing: Int
        public var requested: Int
        public var directory: String
        public var description: String {
            "\(directory) holds shards of \(existing) rows; run again with --shard-size \(existing), or write to a new --out folder"
        }
    }

    /// The settings in force.
    public let configuration: Configuration
    package let lock: FolderLock
    package let state: Locked<State>
    /// This copy's state: the lock, the shard size, the digests, and the images and files being assembled.
    package let hidden: URL
    /// The images being decoded, so that a crash in a decoder costs its row, never the job (``DecodeJournal``).
    public let decodeJournal: DecodeJournal?
    /// Shards are written one at a time, in the background, in the order they complete.
    let writer = ShardWriterQueue()
    /// The bytes of every image saved by this run (as downloaded, before any resize), by SHA-256, with the key that
    /// holds them: on disk, so that a run of millions of images keeps flat memory.
    let digests: DiskKeySet
    /// This run's samples' PDQ hashes and keys (`--dedup near`).
    private let pictures: Locked<NearDuplicateSet<String>>

    package struct State {
        /// Shards whose stats file marks them complete (``ShardCompletion``: written by this run or an earlier one).
        package var complete: Set<Int>
        var open: [Int: OpenShard] = [:]
        package var published = 0
        var highestPosition = -1
        package var written = 0
        package var failure: (any Error & Sendable)?
        /// How the rows of each complete shard ended (their stats), by shard index.
        package var tallies: [Int: Tally] = [:]
        /// Complete shards whose failed rows this run downloads again, by shard index.
        var retrying: [Int: RetriedShard] = [:]
        /// Complete shards this run wrote anew because a retried row gained a sample.
        package var rewritten = 0
    }

    /// The rows of one shard settled so far.
    struct OpenShard {
        package var rows: [Int: Row] = [:]
        package let started = ContinuousClock.now
        let startedAt = Date()
    }

    package enum Row {
        case saved(VerifiedImage, ManifestRecord)
        case settled(url: URL?, provenance: ImageProvenance, outcome: RowOutcome)
    }

    /// This copy's shards whose stats file was there but not to be trusted (``ShardCompletion``), by shard number: their
    /// files were removed, and their rows are downloaded again.
    public let untrustedStats: [UntrustedShardStats]

    /// Opens (creating) the folder, locks it, and finds which shards are complete.
    /// - Throws: `FolderLock.Held`, ``FileError``, or ``ShardSizeMismatch`` when the folder holds shards of another size.
    public init(configuration: Configuration) throws {
        self.configuration = configuration
        let directory = configuration.directory
        // Real folders, as a folder's output has them: a symbolic link at `.mirror` (or at the folder itself: the CLI
        // resolves the one the user names, ``OutputPath``) is refused, never written through.
        try OutputFolder.makeDirectory(directory)
        var hidden = directory.appendingPathComponent(".mirror", isDirectory: true)
        try OutputFolder.makeDirectory(hidden)
        if let shard = configuration.shard {
            hidden.appendPathComponent(shard.directoryName, isDirectory: true)
            try OutputFolder.makeDirectory(hidden)
        }
        self.hidden = hidden
        lock = try FolderLock(at: hidden.appendingPathComponent("lock"))
        decodeJournal = try DecodeJournal(directory: hidden)
        try Self.checkShardSize(configuration, settings: hidden.appendingPathComponent("webdataset.json"))
        if configuration.shard == nil { AtomicFile.removeLeftovers(in: directory) }  // never another copy's files
        AtomicFile.removeLeftovers(in: hidden)
        let completion: ShardCompletion
        let records: (Int) -> Data?
        if let store = configuration.store {
            Self.removeShardFiles(in: hidden) { _ in true }  // what a killed run assembled and did not upload
            completion = store.completion
            records = { store.records[$0] }
        } else {
            completion = try Self.completion(in: directory, owned: configuration.owns)
            records = { try? Data(contentsOf: directory.appendingPathComponent(ShardFileName.name(of: $0, .records))) }
        }
        untrustedStats = completion.untrusted.values.sorted { $0.shard < $1.shard }
        var state = State(complete: Set(completion.complete.keys.compactMap(configuration.index(ofShard:))))
        for index in state.complete {
            let number = configuration.number(ofShard: index)
            let shard = completion.complete[number] ?? ShardStats(shard: number)
            state.tallies[index] = shard.tally
            if let scope = configuration.retryFailed, let retried = RetriedShard(
                index: index, shardSize: configuration.shardSize, scope: scope, stats: shard.tally,
                rows: shard.rows, records: { records(number) }
            ) {
                state.retrying[index] = retried
            }
        }
        self.state = Locked(state)
        digests = try DiskKeySet(directory: hidden, name: "digests")
        pictures = Locked(NearDuplicateSet(policy: configuration.deduplication.nearPolicy ?? NearDuplicatePolicy()))
    }

    /// Images wait here until their shard is written: this copy's own folder (same file system as the shards).
    public var stagingDirectory: URL { hidden }

    /// This copy's own state folder.
    public var stateDirectory: URL? { hidden }

    /// Shards complete in the folder, written by this run or earlier ones.
    public var completeShardCount: Int { state.withLock { $0.complete.count } }

    /// Shards this run wrote.
    public var writtenShardCount: Int { state.withLock { $0.written } }

    /// Complete shards this run wrote anew because a retried row gained a sample.
    public var rewrittenShardCount: Int { state.withLock { $0.rewritten } }

    /// How the rows of this copy's complete shards ended, this run's and earlier ones' (their stats added up): what
    /// the output holds, and what it still lacks.
    public var completeTally: Tally {
        state.withLock { $0.tallies.values.reduce(into: Tally()) { $0 += $1 } }
    }

    public var containsTellsByRow: Bool { true }

    public func contains(normalizedURL: String, provenance: ImageProvenance) -> Bool {
        guard let position = Self.position(of: provenance) else { return false }
        let index = position / configuration.shardSize
        return state.withLock { $0.complete.contains(index) && $0.retrying[index]?.pending.contains(position) != true }
    }

    /// Where a row counts towards its shard: its place among this copy's rows when split by host, else its position.
    package static func position(of provenance: ImageProvenance) -> Int? {
        provenance.slot ?? provenance.key.flatMap(Int.init)
    }

    public func publish(_ image: VerifiedImage, stem: String, provenance: ImageProvenance, completion: @escaping @Sendable (Publication) -> Void) {
        let key = provenance.key ?? stem
        let position = Self.position(of: provenance) ?? 0
        let record = ManifestRecord(file: key + "." + image.info.format.fileExtension, image: image, provenance: provenance)
        let outcome: Publication
        if let failure = state.withLock({ $0.failure }) {
            outcome = .failure(.unwritable(failure as? FileError ?? FileError(operation: "upload", path: configuration.directory.path, code: EIO)))
        } else if configuration.deduplication.refusesSameBytes, !digests.insert(image.downloadDigest, value: key) {
            outcome = .success(.duplicate(of: digests.value(for: image.downloadDigest) ?? "an earlier sample"))
        } else if let these = configuration.deduplication.nearPolicy?.comparedHashes(of: image),
                  let match = pictures.withLock({ pictures -> (payload: String, distance: Int)? in
                      if let found = pictures.match(for: these) { return found }
                      pictures.insert(these, key)
                      return nil
                  }) {
            outcome = .success(.nearDuplicate(of: match.payload, distance: match.distance))
        } else {
            state.withLock { $0.published += 1 }
            outcome = .success(.saved(record, source: image.source))
        }
        if case .success(.saved) = outcome {
            add(.saved(image, record), at: position)
        } else {
            AtomicFile.remove(image.temporaryFile)
        }
        completion(outcome)
    }

    public func settle(url: URL?, provenance: ImageProvenance, as outcome: RowOutcome) {
        // A row that is not recorded again (already saved, failed earlier) is not this shard's to close.
        guard outcome.status != nil, let position = Self.position(of: provenance) else { return }
        add(.settled(url: url, provenance: provenance, outcome: outcome), at: position)
    }

    public var publishedCount: Int { state.withLock { $0.published } }

    public func drain() async {
        await writer.drain()
    }

    /// Writes the last shard when the table was read to its end and every row of it settled; otherwise drops the open
    /// shards' waiting images (a rerun redoes those rows, from the disk cache where it has them).
    public func finish(sourceExhausted: Bool) async {
        var (open, highest, retried) = state.withLock { state in
            defer { (state.open, state.retrying) = ([:], [:]) }
            return (state.open, state.highestPosition, state.retrying)
        }
        // Retried rows of a shard whose others never came (the run was interrupted): the shard stays as it was.
        for shard in retried.values {
            for case let .saved(image, _) in shard.rows.values { AtomicFile.remove(image.temporaryFile) }
        }
        // The table's last shard is complete when every row from its first to the table's last has settled.
        if sourceExhausted, highest >= 0 {
            let index = highest / configuration.shardSize
            if let shard = open[index], shard.rows.count == highest - index * configuration.shardSize + 1 {
                open[index] = nil
                enqueue(index: index, shard: shard)
            }
        }
        for shard in open.values {
            for case let .saved(image, _) in shard.rows.values { AtomicFile.remove(image.temporaryFile) }
        }
        writer.submit { [self] in
            // Every complete shard of this copy is known from its tally (read at the start, kept as shards are
            // written): only other copies' stats are read back.
            let (written, known, failed) = state.withLock { state in
                let known = Dictionary(uniqueKeysWithValues: state.tallies.map { (configuration.number(ofShard: $0.key), $0.value.saved) })
                return (state.written + state.rewritten, known, state.failure != nil)
            }
            guard !failed, written > 0 || !hasSizesFile else { return }
            do {
                try writeSizes(known: known)
            } catch {
                state.withLock { $0.failure = $0.failure ?? error }
            }
        }
        await writer.drain()
    }

    /// The first error that stopped a shard from being written or uploaded (``FileError``, ``ObjectStoreError``), or `nil`.
    public var writeFailure: (any Error & Sendable)? { state.withLock { $0.failure } }

    // MARK: Rows into shards

    package func add(_ row: Row, at position: Int) {
        let index = position / configuration.shardSize
        var settled: RetriedShard?  // a complete shard whose retried rows have all settled
        let full = state.withLock { state -> OpenShard? in
            state.highestPosition = max(state.highestPosition, position)
            guard !state.complete.contains(index) else {  // a bad row of a shard an earlier run wrote, or a retried row
                if var retried = state.retrying[index], retried.pending.remove(position) != nil {
                    retried.rows[position] = row
                    state.retrying[index] = retried.pending.isEmpty ? nil : retried
                    if retried.pending.isEmpty { settled = retried }
                }
                return nil
            }
            state.open[index, default: OpenShard()].rows[position] = row
            guard state.open[index]!.rows.count == configuration.shardSize else { return nil }
            return state.open.removeValue(forKey: index)
        }
        if let full { enqueue(index: index, shard: full) }
        if let settled { enqueue(index: index, retried: settled) }
    }

    func enqueue(index: Int, shard: OpenShard) {
        writer.submit { [self] in
            do {
                let tally = try write(index: index, shard: shard)
                state.withLock {
                    $0.complete.insert(index)
                    $0.written += 1
                    $0.tallies[index] = tally
                }
            } catch {
                for case let .saved(image, _) in shard.rows.values { AtomicFile.remove(image.temporaryFile) }
                state.withLock { $0.failure = $0.failure ?? error }
            }
        }
    }
}
