import Foundation
import GRDB
import MirrorSync

/// What each origin's site files said (its robots.txt and TDMRep file, as the download layer encodes them), kept in an
/// output's state folder for a while, so that a cron job that tops a folder up every hour does not ask every origin
/// for them again on every run.
///
/// One SQLite file, `sites.sqlite`, one row per origin (`sqlite3 .mirror/sites.sqlite "SELECT origin,
/// datetime(fetched_at, 'unixepoch') FROM sites"` shows them). An entry is used for ``lifetime`` after it was fetched: 24 hours, the longest RFC 9309
/// §2.4 lets a crawler use a cached robots.txt (`draft-ietf-aipref-attach` §3.1 holds preferences to the same). Writes
/// are gathered: an entry joins a batch that is written in one transaction when 256 have gathered or when the run
/// ends (``flush()``), off the caller's thread; a run killed before that asks those origins again next time, which is
/// all it costs. Reads happen once per origin per run, and not at all while the file holds nothing (a first run).
///
/// Thread safety: every method may be called from any thread.
public final class SiteMemory: Sendable {
    /// How long an entry is used. Default 24 hours.
    public let lifetime: TimeInterval
    private let database: DatabaseQueue
    private let pending = Locked(Pending())
    private let writer = DispatchQueue(label: "mirror.site-memory")
    /// Whether the file held any entry when it was opened (if not, no read can find one written by another run).
    private let heldEntries: Bool

    private struct Pending {
        var entries: [(origin: String, files: Data, fetchedAt: Date)] = []
    }

    /// Entries gathered before a batch is written.
    static let batchSize = 256

    /// Why the file was made anew when it was opened (it was not a database, or not this one's), or `nil`: said once
    /// by the caller. Nothing is lost but a day of memory: each origin is asked again.
    public let rebuilt: String?

    /// Opens (creating) `sites.sqlite` in `directory`; a file that cannot be read as one is replaced by a new one
    /// (``rebuilt`` says why).
    public init(directory: URL, lifetime: TimeInterval = 24 * 3600) throws {
        self.lifetime = lifetime
        let path = directory.appendingPathComponent("sites.sqlite").path
        do {
            database = try Self.open(path)
            rebuilt = nil
        } catch {
            for suffix in ["", "-wal", "-shm", "-journal"] { try? FileManager.default.removeItem(atPath: path + suffix) }
            database = try Self.open(path)
            rebuilt = "\(path) could not be read (\(Self.reason(error))); made anew: each site's files are asked for again"
        }
        heldEntries = (try? database.read { db in try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM sites)") ?? false }) ?? false
    }

    /// Opens the file and checks that its table is the one this type writes.
    private static func open(_ path: String) throws -> DatabaseQueue {
        var configuration = Configuration()
        configuration.busyMode = .timeout(5)
        // Losing the last batch to a power cut costs a few requests on the next run, not data: no fsync per commit.
        configuration.prepareDatabase { db in try db.execute(sql: "PRAGMA synchronous = OFF") }
        let database = try DatabaseQueue(path: path, configuration: configuration)
        try database.write { db in
            try db.execute(sql: """
                CREATE TABLE IF NOT EXISTS sites (
                    origin TEXT PRIMARY KEY NOT NULL, files BLOB NOT NULL, fetched_at REAL NOT NULL
                )
                """)
            let columns = try Set(db.columns(in: "sites").map(\.name))
            guard columns == ["origin", "files", "fetched_at"] else { throw WrongSchema(columns: columns.sorted()) }
            _ = try Row.fetchOne(db, sql: "SELECT origin, files, fetched_at FROM sites LIMIT 1")
        }
        return database
    }

    private struct WrongSchema: Error {
        var columns: [String]
    }

    private static func reason(_ error: any Error) -> String {
        if let wrong = error as? WrongSchema { return "its table has columns " + wrong.columns.joined(separator: ", ") }
        if let database = error as? DatabaseError { return database.message ?? "SQLite error \(database.resultCode.rawValue)" }
        return String(describing: error)
    }

    /// What was remembered of `origin`, when it was fetched less than ``lifetime`` before `now`.
    public func recall(_ origin: String, now: Date = Date()) -> Data? {
        guard heldEntries else { return nil }
        let row = try? database.read { db in
            try Row.fetchOne(db, sql: "SELECT files, fetched_at FROM sites WHERE origin = ?", arguments: [origin])
        }
        guard let row, let seconds = row["fetched_at"] as Double? else { return nil }
        let fetchedAt = Date(timeIntervalSince1970: seconds)
        guard now.timeIntervalSince(fetchedAt) < lifetime, now >= fetchedAt else { return nil }
        return row["files"] as Data?
    }

    /// Remembers what `origin` said, fetched at `fetchedAt`; written with the next batch.
    public func remember(_ origin: String, files: Data, fetchedAt: Date = Date()) {
        let batch = pending.withLock { pending -> [(origin: String, files: Data, fetchedAt: Date)]? in
            pending.entries.append((origin, files, fetchedAt))
            guard pending.entries.count >= Self.batchSize else { return nil }
            defer { pending.entries.removeAll(keepingCapacity: true) }
            return pending.entries
        }
        if let batch { writer.async { [database] in Self.write(batch, to: database) } }
    }

    /// Writes what is gathered, and returns when every batch is written.
    public func flush() {
        let batch = pending.withLock { pending in
            defer { pending.entries.removeAll() }
            return pending.entries
        }
        writer.sync { [database] in Self.write(batch, to: database) }
    }

    private static func write(_ batch: [(origin: String, files: Data, fetchedAt: Date)], to database: DatabaseQueue) {
        guard !batch.isEmpty else { return }
        try? database.write { db in
            for entry in batch {
                try db.execute(
                    sql: "INSERT OR REPLACE INTO sites (origin, files, fetched_at) VALUES (?, ?, ?)",
                    // Unix seconds, not a Date: GRDB formats a Date as text through Foundation's date formatting, whose
                    // first use costs a run ~6 MB of peak memory (measured: 300 images, 51 MB against 45 MB).
                    arguments: [entry.origin, entry.files, entry.fetchedAt.timeIntervalSince1970]
                )
            }
        }
    }
}
