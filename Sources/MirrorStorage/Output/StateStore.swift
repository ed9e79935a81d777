import Foundation
import GRDB
import MirrorModel

/// The state database of an output folder, `DIR/.mirror/state.sqlite` (SQLite in WAL mode, through GRDB).
///
/// Three tables, readable with the `sqlite3` shell so that people can see what happened:
/// - `images`: every saved image with all its manifest fields (the manifest and the files are the
///   truth; the table is brought in line with them each time the folder is opened);
/// - `attempts`: URLs that failed, why, how often, whether trying again may help, and when; for a URL its owner's
///   reservation kept out (`opted_out`, `disallowed`), the signal, what it said, where it was read, the purpose it
///   reserved and the TDMRep policy it named (`signal`, `value`, `location`, `purpose`, `policy`);
/// - `searches`: the history of searches into this folder (query, providers, first and last run,
///   runs, images saved, pages fetched, whether the sources ran dry).
public final class StateStore: Sendable {
    /// A failed URL as the `attempts` table remembers it.
    public struct Attempt: Sendable, Hashable {
        public var url: String
        public var reason: String
        public var attempts: Int
        public var isTransient: Bool
        public var lastAttempt: Date
        /// For a refusal, the signal that made it (`robots`, `content-signal`, …); `nil` otherwise, and for refusals
        /// recorded before signals were.
        public var signal: String?

        /// How the row ended, as the database keeps it (a refusal by its signal).
        public var outcome: RowOutcome {
            let status = RowOutcome.Status(recordedReason: reason)
            let refused = status == .optedOut || status == .disallowed
            // Never nil: a recorded reason is never `success`.
            return RowOutcome(recorded: status, reason: refused ? signal : reason, isTransient: isTransient)
                ?? .failed(reason: reason, message: "", isTransient: isTransient)
        }
    }

    /// One search, as the `searches` table remembers it.
    public struct Search: Sendable, Hashable, Codable {
        public var query: String
        public var providers: String
        public var firstRun: Date
        public var lastRun: Date
        public var runs: Int
        public var saved: Int
        public var pagesFetched: Int
        public var exhausted: Bool
    }

    private let database: DatabasePool

    /// Opens (creating and migrating as needed) the database at `url`.
    public init(url: URL) throws {
        var configuration = Configuration()
        configuration.busyMode = .timeout(5)
        // WAL without an fsync per commit: a failed URL is recorded per row (a table with a fifth of its rows failing
        // would otherwise pay a disk flush for each), and what a power loss could take from the last commits is
        // rebuilt from the manifest (images) or redone by the next run (failures).
        configuration.prepareDatabase { db in try db.execute(sql: "PRAGMA synchronous = NORMAL") }
        database = try DatabasePool(path: url.path, configuration: configuration)
        try Self.migrator.migrate(database)
    }

    private static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            try db.create(table: "images") { t in
                t.autoIncrementedPrimaryKey("id")
                t.column("file", .text).notNull().unique()
                t.column("url", .text).notNull()
                t.column("normalized_url", .text).notNull().indexed()
                t.column("page_url", .text)
                t.column("provider", .text)
                t.column("provider_id", .text)
                t.column("title", .text)
                t.column("creator", .text)
                t.column("license", .text)
                t.column("license_url", .text)
                t.column("width", .integer).notNull()
                t.column("height", .integer).notNull()
                t.column("bytes", .integer).notNull()
                t.column("sha256", .text).notNull().indexed()
                t.column("format", .text).notNull()
                t.column("query", .text)
                t.column("fetched_at", .datetime).notNull()
            }
            try db.create(table: "attempts") { t in
                t.primaryKey("normalized_url", .text)
                t.column("url", .text).notNull()
                t.column("provider", .text)
                t.column("reason", .text).notNull()
                t.column("attempts", .integer).notNull()
                t.column("transient", .boolean).notNull()
                t.column("last_attempt_at", .datetime).notNull()
            }
            try db.create(table: "searches") { t in
                t.autoIncrementedPrimaryKey("id")
                t.column("query", .text).notNull()
                t.column("providers", .text).notNull()
                t.column("first_run", .datetime).notNull()
                t.column("last_run", .datetime).notNull()
                t.column("runs", .integer).notNull()
                t.column("saved", .integer).notNull()
                t.column("pages_fetched", .integer).notNull()
                t.column("exhausted", .boolean).notNull()
                t.uniqueKey(["query", "providers"])
            }
        }
        migrator.registerMigration("v2: the evidence of refusals") { db in
            try db.alter(table: "attempts") { t in
                t.add(column: "signal", .text)
                t.add(column: "value", .text)
                t.add(column: "location", .text)
                t.add(column: "purpose", .text)
                t.add(column: "policy", .text)
            }
        }
        return migrator
    }

    // MARK: Images

    /// Brings the `images` table in line with the manifest: rows for missing files go, records the table lacks come in.
    public func synchronizeImages(with records: [ManifestRecord]) throws {
        try database.write { db in
            let files = Set(try String.fetchAll(db, sql: "SELECT file FROM images"))
            let wanted = Set(records.map(\.file))
            for file in files.subtracting(wanted) {
                try db.execute(sql: "DELETE FROM images WHERE file = ?", arguments: [file])
            }
            for record in records where !files.contains(record.file) {
                try Self.insert(record, into: db)
            }
        }
    }

    /// Adds saved images, in one transaction.
    public func insertImages(_ records: [ManifestRecord]) throws {
        guard !records.isEmpty else { return }
        try database.write { db in
            for record in records {
                try Self.insert(record, into: db)
                try db.execute(sql: "DELETE FROM attempts WHERE normalized_url = ?", arguments: [Self.normalized(record.url)])
            }
        }
    }

    /// Images in the table.
    public func imageCount() throws -> Int {
        try database.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM images") ?? 0 }
    }

    private static func insert(_ record: ManifestRecord, into db: Database) throws {
        try db.execute(
            sql: """
            INSERT OR IGNORE INTO images (file, url, normalized_url, page_url, provider, provider_id, title, creator,
                license, license_url, width, height, bytes, sha256, format, query, fetched_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """,
            arguments: [
                record.file, record.url, normalized(record.url), record.pageURL, record.provider, record.id, record.title,
                record.creator, record.license, record.licenseURL, record.width, record.height, record.bytes,
                record.sha256, record.format, record.query, record.fetchedAt,
            ]
        )
    }

    private static func normalized(_ url: String) -> String {
        URL(string: url).map { CacheKey(url: $0).normalizedURL } ?? url
    }

    // MARK: Attempts

    /// Records a failed download of a URL; for a refusal, with the reservation's evidence.
    public func recordFailure(
        url: URL, provider: String?, reason: String, isTransient: Bool, refusal: Reservation? = nil, at date: Date = Date()
    ) throws {
        let evidence = refusal?.evidence
        try database.write { db in
            try db.execute(
                sql: """
                INSERT INTO attempts (normalized_url, url, provider, reason, attempts, transient, last_attempt_at, signal, value,
                    location, purpose, policy)
                VALUES (?, ?, ?, ?, 1, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT(normalized_url) DO UPDATE SET
                    reason = excluded.reason, attempts = attempts + 1, transient = excluded.transient,
                    last_attempt_at = excluded.last_attempt_at, signal = excluded.signal, value = excluded.value,
                    location = excluded.location, purpose = excluded.purpose, policy = excluded.policy
                """,
                arguments: [
                    CacheKey(url: url).normalizedURL, url.absoluteString, provider, reason, isTransient, date, evidence?.signal.rawValue,
                    evidence?.value, evidence?.location, refusal?.purpose.rawValue, evidence?.policy,
                ]
            )
        }
    }

    /// Remembered refusals by the signal that made them (`robots`, `content-signal`, `tdmrep-file`, …).
    public func refusalsBySignal() throws -> [String: Int] {
        try database.read { db in
            let rows = try Row.fetchAll(db, sql: "SELECT signal, COUNT(*) AS count FROM attempts WHERE signal IS NOT NULL GROUP BY signal")
            return Dictionary(uniqueKeysWithValues: rows.map { ($0["signal"] as String, $0["count"] as Int) })
        }
    }

    /// Normalised URLs that failed for good (not an image, 4xx, filtered): not worth asking again.
    public func permanentlyFailedURLs() throws -> Set<String> {
        try database.read { db in
            Set(try String.fetchAll(db, sql: "SELECT normalized_url FROM attempts WHERE transient = 0"))
        }
    }

    /// Every remembered failure's normalised URL, its reason, and whether it may pass on another try.
    public func failedURLs() throws -> [(normalizedURL: String, reason: String, isTransient: Bool)] {
        try database.read { db in
            try Row.fetchAll(db, sql: "SELECT normalized_url, reason, transient FROM attempts").map { ($0["normalized_url"], $0["reason"], $0["transient"]) }
        }
    }

    /// Failed URLs, transient and for good, not counting images a filter turned away or whose host said no: the
    /// images the folder lacks.
    public func failedCounts() throws -> (transient: Int, permanent: Int) {
        try database.read { db in
            let notFailures = RowOutcome.Status.recordedAsReasons.map(\.rawValue)
            let rows = try Row.fetchAll(db, sql: """
                SELECT transient, COUNT(*) AS count FROM attempts
                WHERE reason NOT IN (\(databaseQuestionMarks(count: notFailures.count))) GROUP BY transient
                """, arguments: StatementArguments(notFailures))
            var counts = (transient: 0, permanent: 0)
            for row in rows {
                if row["transient"] as Bool { counts.transient = row["count"] } else { counts.permanent = row["count"] }
            }
            return counts
        }
    }

    /// Forgets the failure of a URL that has now been saved.
    public func forgetFailure(normalizedURL: String) throws {
        try database.write { db in
            try db.execute(sql: "DELETE FROM attempts WHERE normalized_url = ?", arguments: [normalizedURL])
        }
    }

    /// All remembered failures.
    public func attempts() throws -> [Attempt] {
        try database.read { db in
            try Row.fetchAll(db, sql: "SELECT url, reason, attempts, transient, last_attempt_at, signal FROM attempts ORDER BY last_attempt_at").map {
                Attempt(
                    url: $0["url"], reason: $0["reason"], attempts: $0["attempts"], isTransient: $0["transient"], lastAttempt: $0["last_attempt_at"],
                    signal: $0["signal"]
                )
            }
        }
    }

    // MARK: Searches

    /// Records one run of a search.
    public func recordSearch(query: String, providers: String, saved: Int, pagesFetched: Int, exhausted: Bool, at date: Date = Date()) throws {
        try database.write { db in
            try db.execute(
                sql: """
                INSERT INTO searches (query, providers, first_run, last_run, runs, saved, pages_fetched, exhausted)
                VALUES (?, ?, ?, ?, 1, ?, ?, ?)
                ON CONFLICT(query, providers) DO UPDATE SET
                    last_run = excluded.last_run, runs = runs + 1, saved = saved + excluded.saved,
                    pages_fetched = pages_fetched + excluded.pages_fetched, exhausted = excluded.exhausted
                """,
                arguments: [query, providers, date, date, saved, pagesFetched, exhausted]
            )
        }
    }

    /// The searches made into this folder, most recent first.
    public func searches() throws -> [Search] {
        try database.read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM searches ORDER BY last_run DESC").map {
                Search(
                    query: $0["query"], providers: $0["providers"], firstRun: $0["first_run"], lastRun: $0["last_run"],
                    runs: $0["runs"], saved: $0["saved"], pagesFetched: $0["pages_fetched"], exhausted: $0["exhausted"]
                )
            }
        }
    }

    /// Forgets the search history (not the images).
    public func clearSearches() throws {
        _ = try database.write { db in try db.execute(sql: "DELETE FROM searches") }
    }

    /// The `errno` that best describes a database failure, for one-line messages: a full disk is `ENOSPC`.
    public static func errno(for error: any Error) -> Int32 {
        guard let error = error as? DatabaseError else { return EIO }
        switch error.resultCode {
        case .SQLITE_FULL: return ENOSPC
        case .SQLITE_READONLY: return EROFS
        case .SQLITE_PERM, .SQLITE_AUTH: return EACCES
        default: return EIO
        }
    }
}
