import Foundation
import MirrorTransport

/// WebDataset output: tar shards of a fixed number of table rows, each with its records and stats beside it.
///
/// Row `p` of the table belongs to shard `p / shardSize`. A shard is written once every one of its rows has
/// settled — saved, failed, a bad row, a duplicate, refused — in row order: `NNNNN.tar` holds `KEY.<ext>`,
/// `KEY.json` (the record) and `KEY.txt` (the caption, when there is one) for each saved row; `NNNNN.jsonl` one line
/// per row, failures included with their `status` and `error`; `NNNNN_stats.json` the counts. Each file appears whole
/// (temporary name, fsync, link); the stats file comes last and is what marks the shard complete: a rerun skips a
/// complete shard's rows without reading its files, and removes what a killed run left of an incomplete one. At the
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
        public var store: S3ShardStore?

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
    private let lock: FolderLock
    private let state: Locked<State>
    /// This copy's state: the lock, the shard size, the digests, and the images and files being assembled.
    private let hidden: URL
    /// Shards are written one at a time, in the background, in the order they complete.
    private let writer = ShardWriterQueue()
    /// The bytes of every image saved by this run (as downloaded, before any resize), by SHA-256, with the key that
    /// holds them: on disk, so that a run of millions of images keeps flat memory.
    private let digests: DiskKeySet

    private struct State {
        /// Shards whose stats file exists (written by this run or an earlier one).
        var complete: Set<Int>
        var open: [Int: OpenShard] = [:]
        var published = 0
        var highestPosition = -1
        var written = 0
        /// The samples of each shard this run wrote, by shard number (for `sizes.json`).
        var sizes: [Int: Int] = [:]
        var failure: (any Error & Sendable)?
    }

    /// The rows of one shard settled so far.
    fileprivate struct OpenShard {
        var rows: [Int: Row] = [:]
        let started = ContinuousClock.now
        let startedAt = Date()
    }

    fileprivate enum Row {
        case saved(VerifiedImage, ManifestRecord)
        case settled(url: URL, provenance: ImageProvenance, outcome: SettledOutcome)
    }

    /// Opens (creating) the folder, locks it, and finds which shards are complete.
    /// - Throws: `FolderLock.Held`, ``FileError``, or ``ShardSizeMismatch`` when the folder holds shards of another size.
    public init(configuration: Configuration) throws {
        self.configuration = configuration
        let directory = configuration.directory
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        } catch {
            throw FileError(operation: "create", path: directory.path, code: (error as NSError).code == NSFileWriteFileExistsError ? ENOTDIR : EACCES)
        }
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: directory.path, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw FileError(operation: "use as a folder", path: directory.path, code: ENOTDIR)
        }
        var hidden = directory.appendingPathComponent(".mirror", isDirectory: true)
        if let shard = configuration.shard { hidden.appendPathComponent(shard.directoryName, isDirectory: true) }
        self.hidden = hidden
        try? FileManager.default.createDirectory(at: hidden, withIntermediateDirectories: true)
        lock = try FolderLock(at: hidden.appendingPathComponent("lock"))
        try Self.checkShardSize(configuration, settings: hidden.appendingPathComponent("webdataset.json"))
        if configuration.shard == nil { AtomicFile.removeLeftovers(in: directory) }  // never another copy's files
        AtomicFile.removeLeftovers(in: hidden)
        let complete: Set<Int>
        if let store = configuration.store {
            Self.removeShardFiles(in: hidden) { _ in true }  // what a killed run assembled and did not upload
            complete = store.completeShards
        } else {
            complete = Self.completeShards(in: directory, owned: configuration.owns)
        }
        state = Locked(State(complete: Set(complete.compactMap(configuration.index(ofShard:)))))
        digests = try DiskKeySet(directory: hidden, name: "digests")
    }

    /// Images wait here until their shard is written: this copy's own folder (same file system as the shards).
    public var stagingDirectory: URL { hidden }

    /// Shards complete in the folder, written by this run or earlier ones.
    public var completeShardCount: Int { state.withLock { $0.complete.count } }

    /// Shards this run wrote.
    public var writtenShardCount: Int { state.withLock { $0.written } }

    public func contains(normalizedURL: String, provenance: ImageProvenance) -> Bool {
        guard let position = Self.position(of: provenance) else { return false }
        return state.withLock { $0.complete.contains(position / configuration.shardSize) }
    }

    /// Where a row counts towards its shard: its place among this copy's rows when split by host, else its position.
    private static func position(of provenance: ImageProvenance) -> Int? {
        provenance.slot ?? provenance.key.flatMap(Int.init)
    }

    public func publish(_ image: VerifiedImage, stem: String, provenance: ImageProvenance, completion: @escaping @Sendable (PublishOutcome) -> Void) {
        let key = provenance.key ?? stem
        let position = Self.position(of: provenance) ?? 0
        let record = ManifestRecord(file: key + "." + image.info.format.fileExtension, image: image, provenance: provenance)
        let outcome: PublishOutcome
        if let failure = state.withLock({ $0.failure }) {
            outcome = .failed(failure as? FileError ?? FileError(operation: "upload", path: configuration.directory.path, code: EIO))
        } else if !digests.insert(image.downloadDigest, value: key) {
            outcome = .duplicate(of: digests.value(for: image.downloadDigest) ?? "an earlier sample")
        } else {
            state.withLock { $0.published += 1 }
            outcome = .saved(record)
        }
        if case .saved = outcome {
            add(.saved(image, record), at: position)
        } else {
            AtomicFile.remove(image.temporaryFile)
        }
        completion(outcome)
    }

    public func settle(url: URL, provenance: ImageProvenance, as outcome: SettledOutcome) {
        guard let position = Self.position(of: provenance) else { return }
        add(.settled(url: url, provenance: provenance, outcome: outcome), at: position)
    }

    public var publishedCount: Int { state.withLock { $0.published } }

    public func drain() async {
        await writer.drain()
    }

    /// Writes the last shard when the table was read to its end and every row of it settled; otherwise drops the open
    /// shards' waiting images (a rerun redoes those rows, from the disk cache where it has them).
    public func finish(sourceExhausted: Bool) async {
        var (open, highest) = state.withLock { state in
            defer { state.open = [:] }
            return (state.open, state.highestPosition)
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
            let (written, known, failed) = state.withLock { ($0.written, $0.sizes, $0.failure != nil) }
            guard !failed, written > 0 || !hasSizesFile else { return }
            do {
                try writeSizes(known: known)
            } catch {
                state.withLock { $0.failure = $0.failure ?? error }
            }
        }
        await writer.drain()
    }

    /// The name of the file that lists each shard's samples.
    public static let sizesFileName = "sizes.json"

    private var hasSizesFile: Bool {
        if let store = configuration.store { return store.hasSizesFile }
        return FileManager.default.fileExists(atPath: configuration.directory.appendingPathComponent(Self.sizesFileName).path)
    }

    /// Writes `sizes.json` from every complete shard's stats: those this run wrote (`known`), the others read back.
    private func writeSizes(known: [Int: Int]) throws {
        var sizes = known
        if let store = configuration.store {
            sizes = try store.sampleCounts(known: known)
        } else {
            let names = (try? FileManager.default.contentsOfDirectory(atPath: configuration.directory.path)) ?? []
            for number in ShardFileName.completeShards(among: names) where sizes[number] == nil {
                let stats = configuration.directory.appendingPathComponent(ShardFileName.name(of: number, .stats))
                if let saved = (try? Data(contentsOf: stats)).flatMap(ShardStats.saved(in:)) { sizes[number] = saved }
            }
        }
        let object = Dictionary(uniqueKeysWithValues: sizes.map { (ShardFileName.name(of: $0.key, .tar), $0.value) })
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data("{}".utf8)
        let directory = configuration.store == nil ? configuration.directory : hidden
        let file = directory.appendingPathComponent(Self.sizesFileName)
        try AtomicFile.replaceFile(data + Data("\n".utf8), at: file)  // copies finishing together each write it whole
        if let store = configuration.store {
            try store.deliver([file])
            AtomicFile.remove(file)
        }
    }

    /// The first error that stopped a shard from being written or uploaded (``FileError``, ``ObjectStoreError``), or `nil`.
    public var writeFailure: (any Error & Sendable)? { state.withLock { $0.failure } }

    // MARK: Rows into shards

    private func add(_ row: Row, at position: Int) {
        let index = position / configuration.shardSize
        let full = state.withLock { state -> OpenShard? in
            state.highestPosition = max(state.highestPosition, position)
            guard !state.complete.contains(index) else { return nil }  // a bad row of a shard an earlier run wrote
            state.open[index, default: OpenShard()].rows[position] = row
            guard state.open[index]!.rows.count == configuration.shardSize else { return nil }
            return state.open.removeValue(forKey: index)
        }
        if let full { enqueue(index: index, shard: full) }
    }

    private func enqueue(index: Int, shard: OpenShard) {
        writer.submit { [self] in
            do {
                let saved = try write(index: index, shard: shard)
                state.withLock {
                    $0.complete.insert(index)
                    $0.written += 1
                    $0.sizes[configuration.number(ofShard: index)] = saved
                }
            } catch {
                for case let .saved(image, _) in shard.rows.values { AtomicFile.remove(image.temporaryFile) }
                state.withLock { $0.failure = $0.failure ?? error }
            }
        }
    }

    /// Writes shard `index`: its tar, its records, then its stats; with a store, uploads the three in that order.
    /// - Returns: the samples it holds.
    private func write(index: Int, shard: OpenShard) throws -> Int {
        let directory = configuration.store == nil ? configuration.directory : hidden
        let number = configuration.number(ofShard: index)
        let sync = configuration.isSyncEnabled && configuration.store == nil
        var stats = ShardStats(shard: number)
        stats.copy = configuration.shard
        stats.started = shard.startedAt
        var lines = Data()
        let files = [ShardFileName.Kind.tar, .records, .stats].map { directory.appendingPathComponent(ShardFileName.name(of: number, $0)) }
        let tar = try TarWriter(destination: files[0], staging: hidden)
        for position in shard.rows.keys.sorted() {
            stats.rows += 1
            switch shard.rows[position]! {
            case let .saved(image, record):
                let key = record.key ?? String(position)
                let contents: Data
                do {
                    contents = try Data(contentsOf: image.temporaryFile)
                } catch {
                    throw FileError(operation: "read", path: image.temporaryFile.path, code: EIO)
                }
                var json = (try? record.jsonLine()) ?? Data("{}\n".utf8)
                json.removeLast()
                try tar.add(record.file, contents: contents, modified: image.fetchedAt)
                try tar.add(key + ".json", contents: json, modified: image.fetchedAt)
                if let caption = record.caption {
                    try tar.add(key + ".txt", contents: Data(caption.utf8), modified: image.fetchedAt)
                }
                stats.saved += 1
                stats.bytes += record.bytes
                lines.append(ShardRecordLine.saved(json))
            case let .settled(url, provenance, outcome):
                stats.count(outcome)
                lines.append(ShardRecordLine.settled(url: url, provenance: provenance, outcome: outcome))
            }
        }
        try tar.commit(sync: sync)
        try AtomicFile.writeFile(lines, to: files[1], sync: sync, staging: hidden)
        if let store = configuration.store {
            try store.deliver(files[..<2])
            stats.finished = Date()
            stats.seconds = (ContinuousClock.now - shard.started).seconds
            try AtomicFile.writeFile(stats.json(), to: files[2], sync: false, staging: hidden)
            try store.deliver(files[2...])  // last: the stats object marks the shard complete
            for file in files { AtomicFile.remove(file) }
        } else {
            stats.finished = Date()
            stats.seconds = (ContinuousClock.now - shard.started).seconds
            try AtomicFile.writeFile(stats.json(), to: files[2], sync: sync, staging: hidden)
            if sync { try AtomicFile.syncDirectory(directory) }
        }
        for case let .saved(image, _) in shard.rows.values { AtomicFile.remove(image.temporaryFile) }
        return stats.saved
    }

    // MARK: The folder

    /// The numbers of this copy's shards whose stats file exists; the files of its other shards (a killed run's) are
    /// removed. Other copies' shards are left alone, complete or not.
    private static func completeShards(in directory: URL, owned: (Int) -> Bool) -> Set<Int> {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        let complete = ShardFileName.completeShards(among: names).filter(owned)
        removeShardFiles(in: directory) { owned($0) && !complete.contains($0) }
        return complete
    }

    /// Removes the `.tar` and `.jsonl` (and stats) files of the shard numbers `matching` says.
    private static func removeShardFiles(in directory: URL, matching: (Int) -> Bool) {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        for name in names {
            if let (number, _) = ShardFileName.parse(name), matching(number) {
                AtomicFile.remove(directory.appendingPathComponent(name))
            }
        }
    }

    private static func checkShardSize(_ configuration: Configuration, settings: URL) throws {
        if let data = try? Data(contentsOf: settings),
           let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
           let existing = object["shard_size"] as? Int {
            guard existing == configuration.shardSize else {
                throw ShardSizeMismatch(existing: existing, requested: configuration.shardSize, directory: configuration.directory.path)
            }
            return
        }
        try AtomicFile.writeFile(Data(#"{"shard_size":\#(configuration.shardSize)}"#.utf8), to: settings, sync: configuration.isSyncEnabled)
    }
}

extension ShardSink.Configuration {
    /// Whether shard number `number` is this copy's to write.
    func owns(_ number: Int) -> Bool {
        guard let shard else { return true }
        return number % shard.count == shard.index
    }

    /// The file number of this copy's `index`-th shard (counting by ``ShardSink/position(of:)``).
    func number(ofShard index: Int) -> Int {
        guard let shard, shard.split == .host else { return index }
        return index * shard.count + shard.index
    }

    /// The inverse of ``number(ofShard:)`` for a number this copy owns.
    func index(ofShard number: Int) -> Int? {
        guard owns(number) else { return nil }
        guard let shard, shard.split == .host else { return number }
        return number / shard.count
    }
}

/// The names of a shard's files: `NNNNN.tar`, `NNNNN.jsonl`, `NNNNN_stats.json`.
public enum ShardFileName {
    public enum Kind: Sendable { case tar, records, stats }

    /// The shard number and kind of a file name, or `nil` for another file.
    public static func parse(_ name: String) -> (number: Int, kind: Kind)? {
        let split: (Substring, Kind)?
        if name.hasSuffix("_stats.json") { split = (name.dropLast(11), .stats) }
        else if name.hasSuffix(".tar") { split = (name.dropLast(4), .tar) }
        else if name.hasSuffix(".jsonl") { split = (name.dropLast(6), .records) }
        else { split = nil }
        guard let (stem, kind) = split, stem.count >= 5, stem.allSatisfy(\.isASCII), let number = Int(stem), number >= 0 else { return nil }
        return (number, kind)
    }

    /// The file name of shard `number`'s file of `kind` (`00042.tar`; wider past 99,999).
    public static func name(of number: Int, _ kind: Kind) -> String {
        let stem = zeroPadded(number, width: 5)
        switch kind {
        case .tar: return stem + ".tar"
        case .records: return stem + ".jsonl"
        case .stats: return stem + "_stats.json"
        }
    }

    /// The numbers of the shards whose stats file is among `names`.
    public static func completeShards(among names: some Sequence<String>) -> Set<Int> {
        var complete = Set<Int>()
        for name in names {
            if let (number, kind) = parse(name), kind == .stats { complete.insert(number) }
        }
        return complete
    }
}

/// What one shard's `NNNNN_stats.json` says.
struct ShardStats {
    var shard: Int
    var started: Date?
    var finished: Date?
    /// The copy of a sharded job that wrote it.
    var copy: WorkShard?
    var rows = 0
    var saved = 0
    var failed = 0
    var failures: [String: Int] = [:]
    var invalid = 0
    var duplicates = 0
    var filtered = 0
    var optedOut = 0
    var disallowed = 0
    var bytes: Int64 = 0
    var seconds = 0.0

    init(shard: Int) {
        self.shard = shard
    }

    /// The `saved` count of a stats file's contents, or `nil` when it is not a shard's stats.
    static func saved(in data: Data) -> Int? {
        guard let object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] else { return nil }
        return (object["saved"] as? NSNumber)?.intValue
    }

    mutating func count(_ outcome: SettledOutcome) {
        switch outcome {
        case .invalid: invalid += 1
        case let .failed(reason, _, _):
            failed += 1
            failures[reason, default: 0] += 1
        case .filtered: filtered += 1
        case let .refused(reason, _):
            if reason == "disallowed" { disallowed += 1 } else { optedOut += 1 }
        case .duplicate: duplicates += 1
        }
    }

    func json() -> Data {
        var object: [String: Any] = [
            "shard": shard, "rows": rows, "saved": saved, "failed": failed, "failures": failures, "invalid": invalid,
            "duplicates": duplicates, "filtered": filtered, "opted_out": optedOut, "disallowed": disallowed,
            "bytes": bytes, "seconds": (seconds * 1000).rounded() / 1000,
            "started": ((started?.timeIntervalSince1970 ?? 0) * 1000).rounded() / 1000,
            "finished": ((finished?.timeIntervalSince1970 ?? 0) * 1000).rounded() / 1000,
        ]
        if let copy {
            object["copy"] = copy.index
            object["copies"] = copy.count
            object["split"] = copy.split.rawValue
        }
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
        return data + Data("\n".utf8)
    }
}

/// Lines of a shard's `NNNNN.jsonl`: every row, with `status` (`success`, `failed`, `invalid`, `duplicate`,
/// `filtered`, `opted_out`, `disallowed`) and `error` first, then the record's fields (null where the row has no
/// image), then the kept columns.
enum ShardRecordLine {
    static func saved(_ json: Data) -> Data {
        Data(#"{"status":"success","error":null,"#.utf8) + json.dropFirst() + Data("\n".utf8)
    }

    static func settled(url: URL, provenance: ImageProvenance, outcome: SettledOutcome) -> Data {
        let text = { (value: String?) in (try? ManifestRecord.jsonText(value)) ?? "null" }
        var line = #"{"status":"# + text(outcome.status) + #","error":"# + text(outcome.message)
        for field in ManifestRecord.Field.all {
            let value: String
            switch field.key {
            case "url": value = url.scheme == "about" ? "null" : text(url.absoluteString)
            case "key": value = text(provenance.key)
            case "caption": value = text(provenance.caption)
            case "label": value = text(provenance.label)
            case "query": value = text(provenance.query)
            default: value = "null"
            }
            line += ",\"" + field.key + "\":" + value
        }
        for column in provenance.columns {
            line += "," + text(column.name) + ":" + column.json
        }
        return Data((line + "}\n").utf8)
    }
}

/// One background thread that writes shards in the order they complete, and tells when all are written.
final class ShardWriterQueue: Sendable {
    private struct Waiting {
        var pending = 0
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    private let pool = BlockingPool(maximumThreads: 1, name: "mirror.shards")
    private let waiting = Locked(Waiting())

    func submit(_ job: @escaping @Sendable () -> Void) {
        waiting.withLock { $0.pending += 1 }
        pool.submit { [self] in
            job()
            let ready = waiting.withLock { waiting -> [CheckedContinuation<Void, Never>] in
                waiting.pending -= 1
                guard waiting.pending == 0 else { return [] }
                defer { waiting.waiters = [] }
                return waiting.waiters
            }
            for waiter in ready { waiter.resume() }
        }
    }

    /// Returns once every job submitted so far has run.
    func drain() async {
        await withCheckedContinuation { continuation in
            let idle = waiting.withLock { waiting -> Bool in
                if waiting.pending == 0 { return true }
                waiting.waiters.append(continuation)
                return false
            }
            if idle { continuation.resume() }
        }
    }
}
