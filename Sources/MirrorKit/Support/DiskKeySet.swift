import Foundation
import GRDB
import MirrorTransport

/// A set of strings — each kept as its 128-bit ``Fingerprint`` — with an optional value each, in a SQLite file for
/// one run: what a run remembers when a table of millions of rows would not fit a `Set` in flat memory.
///
/// The file is scratch (journal off, no fsync; deleted when the set is dropped): a crash loses nothing but the set,
/// which the next run starts afresh. New keys wait in memory and go to the file 10,000 at a time, in one transaction;
/// SQLite's page cache is bounded (`cache_size`), so memory does not grow with the rows.
final class DiskKeySet: @unchecked Sendable {  // `pending` is only touched inside `queue.inDatabase`, which GRDB serializes
    private let queue: DatabaseQueue
    private let url: URL
    private var pending: [Fingerprint: String?] = [:]
    private static let batch = 10_000

    /// Creates an empty set in a new file in `directory` (a locked folder's: files an earlier, killed run left there
    /// under the same name are removed).
    init(directory: URL, name: String) throws {
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
                PRAGMA cache_size = -4096;
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
    func insert(_ text: String, value: String? = nil) -> Bool {
        let fingerprint = Fingerprint(text)
        return (try? queue.inDatabase { db -> Bool in
            if pending[fingerprint] != nil { return false }
            if try stored(fingerprint, in: db) != nil { return false }
            pending[fingerprint] = .some(value)
            if pending.count >= Self.batch { try flush(db) }
            return true
        }) ?? true
    }

    /// The value stored with `text`, or `nil` when `text` is not in the set or has no value.
    func value(for text: String) -> String? {
        let fingerprint = Fingerprint(text)
        return (try? queue.inDatabase { db -> String? in
            if let value = pending[fingerprint] { return value }
            return try stored(fingerprint, in: db) ?? nil
        }) ?? nil
    }

    /// The row for `fingerprint` in the file: `nil` when absent, `.some(value)` when present.
    private func stored(_ fingerprint: Fingerprint, in db: Database) throws -> String?? {
        let statement = try db.cachedStatement(sql: "SELECT value FROM keys WHERE high = ? AND low = ?")
        guard let row = try Row.fetchOne(statement, arguments: [fingerprint.high, fingerprint.low]) else { return nil }
        return .some(row["value"])
    }

    private func flush(_ db: Database) throws {
        try db.inTransaction {
            let statement = try db.cachedStatement(sql: "INSERT OR IGNORE INTO keys (high, low, value) VALUES (?, ?, ?)")
            for (fingerprint, value) in pending {
                try statement.execute(arguments: [fingerprint.high, fingerprint.low, value])
            }
            return .commit
        }
        pending.removeAll(keepingCapacity: true)
    }
}
