import Foundation
import GRDB
import MirrorSync

/// A set of strings — each kept as its 128-bit ``Fingerprint`` — with an optional value each, in a SQLite file for
/// one run: what a run remembers when a table of millions of rows would not fit a `Set` in flat memory.
///
/// The file is scratch (journal off, no fsync; deleted when the set is dropped): a crash loses nothing but the set,
/// which the next run starts afresh. New keys wait in memory and go to the file 4,096 at a time, in one transaction;
/// SQLite's page cache is bounded (`cache_size`). Most questions are about keys that are not there (a new URL, new
/// bytes, a free name): a Bloom filter in front (about 2.5 bytes a key) answers those without SQLite, which costs
/// tens of microseconds a query through GRDB; only a key the filter may hold is looked up in the file.
package final class DiskKeySet: Sendable {
    private let queue: DatabaseQueue
    private let url: URL
    private let memory = Locked(Memory())
    private static let batch = 4_096
    /// SQLite's page cache per file: the Bloom filter answers nearly every lookup, so it serves inserts only.
    private static let cacheKiB = 512

    /// What the set holds in memory: keys not yet in the file, and the filter of every key.
    private struct Memory {
        var pending: [Fingerprint: String?] = [:]
        /// The batch being written: its keys stay visible here until its transaction is committed.
        var writing: [Fingerprint: String?] = [:]
        var filter = BloomFilter()

        func unwritten(_ fingerprint: Fingerprint) -> String?? {
            pending[fingerprint] ?? writing[fingerprint]
        }
    }

    /// Creates an empty set in a new file in `directory` (a locked folder's: files an earlier, killed run left there
    /// under the same name are removed).
    package init(directory: URL, name: String) throws {
        let prefix = ".mirror-\(name)-"
        for stale in (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? [] where stale.hasPrefix(prefix) {
            try? FileManager.default.removeItem(at: directory.appendingPathComponent(stale))
        }
        url = directory.appendingPathComponent(prefix + "\(getpid())-\(UUID().uuidString.prefix(8)).sqlite")
        queue = try DatabaseQueue(path: url.path)
        try queue.writeWithoutTransaction { db in
            try db.execute(sql: """
                PRAGMA journal_mode = OFF;
                PRAGMA synchronous = OFF;
                PRAGMA cache_size = -\(Self.cacheKiB);
                CREATE TABLE keys (high INTEGER NOT NULL, low INTEGER NOT NULL, value TEXT, PRIMARY KEY (high, low)) WITHOUT ROWID;
                """)
        }
    }

    deinit {
        try? queue.close()
        try? FileManager.default.removeItem(at: url)
    }

    /// Adds `text` with `value`; returns whether it was new (an existing entry keeps its value).
    @discardableResult
    package func insert(_ text: String, value: String? = nil) -> Bool {
        insert(Fingerprint(text), value: value)
    }

    /// Adds the key `fingerprint` with `value`; returns whether it was new (an existing entry keeps its value).
    @discardableResult
    package func insert(_ fingerprint: Fingerprint, value: String?) -> Bool {
        enum Step { case added(batch: [Fingerprint: String?]?), present, unsure }
        /// Adds the key; returns a full batch, moved whole from `pending` to `writing` under the same lock, for the
        /// caller to write. One batch is written at a time: while `writing` holds one, new keys wait in `pending`.
        func add(_ memory: inout Memory) -> [Fingerprint: String?]? {
            memory.pending[fingerprint] = .some(value)
            memory.filter.insert(fingerprint)
            guard memory.pending.count >= Self.batch, memory.writing.isEmpty else { return nil }
            memory.writing = memory.pending
            memory.pending = Dictionary(minimumCapacity: Self.batch)
            return memory.writing
        }
        let step = memory.withLock { memory -> Step in
            if memory.unwritten(fingerprint) != nil { return .present }
            guard memory.filter.mayContain(fingerprint) else { return .added(batch: add(&memory)) }
            return .unsure
        }
        switch step {
        case .present:
            return false
        case let .added(batch):
            if let batch { write(batch) }
            return true
        case .unsure:
            if stored(fingerprint) != nil { return false }
            let added = memory.withLock { memory -> (new: Bool, batch: [Fingerprint: String?]?) in
                if memory.unwritten(fingerprint) != nil { return (false, nil) }
                return (true, add(&memory))
            }
            if let batch = added.batch { write(batch) }
            return added.new
        }
    }

    /// The value stored with `text`, or `nil` when `text` is not in the set or has no value.
    package func value(for text: String) -> String? {
        entry(Fingerprint(text)) ?? nil
    }

    /// The entry for `fingerprint`: `nil` when absent, `.some(value)` when present.
    package func entry(_ fingerprint: Fingerprint) -> String?? {
        let known = memory.withLock { memory -> String??? in
            if let value = memory.unwritten(fingerprint) { return .some(.some(value)) }
            return memory.filter.mayContain(fingerprint) ? nil : .some(nil)
        }
        if let known { return known }
        return stored(fingerprint)
    }

    /// The row for `fingerprint` in the file: `nil` when absent, `.some(value)` when present.
    private func stored(_ fingerprint: Fingerprint) -> String?? {
        (try? queue.inDatabase { db -> String?? in
            let statement = try db.cachedStatement(sql: "SELECT value FROM keys WHERE high = ? AND low = ?")
            guard let row = try Row.fetchOne(statement, arguments: [fingerprint.high, fingerprint.low]) else { return nil }
            return .some(row["value"])
        }) ?? nil
    }

    /// Writes `batch` (the keys in `writing`, moved there whole: no copy of the dictionary, no key removed one by one)
    /// to the file, and drops it from memory once its transaction is committed.
    private func write(_ batch: [Fingerprint: String?]) {
        try? queue.inDatabase { db in
            try db.inTransaction {
                let statement = try db.cachedStatement(sql: "INSERT OR IGNORE INTO keys (high, low, value) VALUES (?, ?, ?)")
                for (fingerprint, value) in batch {
                    try statement.execute(arguments: [fingerprint.high, fingerprint.low, value])
                }
                return .commit
            }
        }
        memory.withLock { memory in
            memory.writing = [:]
        }
    }
}

/// A Bloom filter of fingerprints that grows: layers of doubling capacity, each sized for about 1 % false positives
/// (10 bits and 7 probes a key), so that it needs no bound in advance and never answers "absent" for a key it holds.
struct BloomFilter: Sendable {
    private struct Layer {
        var words: [UInt64]
        let mask: UInt64
        let capacity: Int
        var count = 0

        init(capacity: Int) {
            self.capacity = capacity
            var bits = 64
            while bits < capacity * 10 { bits <<= 1 }
            words = Array(repeating: 0, count: bits / 64)
            mask = UInt64(bits - 1)
        }

        func bit(_ fingerprint: Fingerprint, probe: Int) -> (word: Int, bit: UInt64) {
            let index = (UInt64(bitPattern: Int64(fingerprint.high)) &+ UInt64(probe) &* (UInt64(bitPattern: Int64(fingerprint.low)) | 1)) & mask
            return (Int(index >> 6), 1 << (index & 63))
        }
    }

    private static let probes = 7
    private var layers: [Layer] = []

    package mutating func insert(_ fingerprint: Fingerprint) {
        if layers.last.map({ $0.count >= $0.capacity }) ?? true {
            layers.append(Layer(capacity: max(1 << 16, (layers.last?.capacity ?? 0) * 2)))
        }
        let last = layers.count - 1
        for probe in 0..<Self.probes {
            let (word, bit) = layers[last].bit(fingerprint, probe: probe)
            layers[last].words[word] |= bit
        }
        layers[last].count += 1
    }

    func mayContain(_ fingerprint: Fingerprint) -> Bool {
        layers.contains { layer in
            (0..<Self.probes).allSatisfy { probe in
                let (word, bit) = layer.bit(fingerprint, probe: probe)
                return layer.words[word] & bit != 0
            }
        }
    }
}

/// Keys (128-bit ``Fingerprint``s) with a value each, in a dictionary while there are few and in a ``DiskKeySet`` once
/// there are more than `limit`: small runs pay nothing for the file, and a run of millions of images stops growing.
///
/// Not synchronized: its owner serializes access (a lock, or a single task).
package struct SpillingKeys: Sendable {
    private var memory: [Fingerprint: String] = [:]
    private var disk: DiskKeySet?
    private let spillDirectory: URL?
    private let name: String
    private let limit: Int
    private var spillFailed = false

    /// - Parameters:
    ///   - directory: Where the file goes (a locked folder's); `nil` keeps every key in memory.
    ///   - name: The file's name part (``DiskKeySet/init(directory:name:)``).
    ///   - limit: Keys kept in memory before they move to the file.
    package init(spillingInto directory: URL?, name: String, after limit: Int = 16_384) {
        spillDirectory = directory
        self.name = name
        self.limit = limit
    }

    /// Whether the keys are in the file now.
    var isSpilled: Bool { disk != nil }

    /// Adds `key` with `value`; returns whether it was new (an existing key keeps its value).
    @discardableResult
    package mutating func insert(_ key: Fingerprint, value: String = "") -> Bool {
        if let disk { return disk.insert(key, value: value) }
        guard memory[key] == nil else { return false }
        memory[key] = value
        if memory.count > limit, !spillFailed { spill() }
        return true
    }

    /// Whether `key` is present.
    package func contains(_ key: Fingerprint) -> Bool {
        if let disk { return disk.entry(key) != nil }
        return memory[key] != nil
    }

    /// The value stored with `key`, or `nil` when it is absent.
    package func value(for key: Fingerprint) -> String? {
        if let disk { return disk.entry(key).map { $0 ?? "" } }
        return memory[key]
    }

    /// Moves every key to a new file; stays in memory if the file cannot be made (the run goes on, only larger).
    private mutating func spill() {
        guard let spillDirectory, let file = try? DiskKeySet(directory: spillDirectory, name: name) else {
            spillFailed = true
            return
        }
        for (key, value) in memory { file.insert(key, value: value) }
        memory = [:]
        disk = file
    }
}
