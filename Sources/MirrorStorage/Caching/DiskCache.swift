import Foundation
import MirrorCore

/// A size-limited on-disk cache: content-addressed image files, and API pages with a time to live.
///
/// Layout under ``directory``:
///
/// | path | holds |
/// | --- | --- |
/// | `objects/<2 hex>/<sha256 hex>` | image bodies named by the SHA-256 of their bytes (one file per body) |
/// | `index/<CacheKey.fileName>` | per URL, JSON: `sha256`, `bytes`, `format`, `url` (normalized, no secrets) |
/// | `pages/<CacheKey.fileName>` | an API response after a 16-byte header: an 8-byte magic and the expiry time |
/// | `tmp/` | files being written; each is renamed into place when complete |
///
/// Every write goes through ``AtomicFile``, the package's one atomic writer: to a new temporary file in `tmp/`
/// (or appears at once by `link(2)`), then renamed into place, so a reader, another process, or the next run after a
/// kill sees either the old file or the whole new one. Lookups never throw: a missing, corrupt or mismatched file is
/// a miss, and is removed.
///
/// Recency is the modification date of a file: ``entry(for:)`` sets it to now on a hit, and ``sweep()``
/// removes the least recently used files first once the cache is over ``sizeLimit``, down to 70% of it
/// (as Nuke does, so it does not sweep again after every store). Linux cannot set a file's creation
/// (birth) time, so Kingfisher's "creation date is the last access" trick is not used.
///
/// Thread safety: every method may be called from many threads, and processes, at once. Single files
/// are made consistent by atomic `rename(2)`/`link(2)`, not by locks; the only lock, ``maintenanceLock``,
/// keeps ``sweep()`` and ``removeAll()`` of one instance from running over each other. A race between a
/// sweep and a store can at worst turn a later lookup into a miss, never return wrong bytes.
///
/// ```swift
/// let cache = DiskCache(directory: DiskCache.defaultDirectory())
/// try cache.store(fileAt: downloadedFile, sha256: digest, for: key, format: "jpeg")
/// if let entry = cache.entry(for: key) {
///     try cache.materialize(entry, at: outputFolder.appendingPathComponent("cat.jpg"))
/// }
/// ```
public final class DiskCache: Sendable {
    /// An image body held by the cache.
    public struct Entry: Sendable, Hashable {
        /// The SHA-256 of the body, as 64 lowercase hex digits.
        public let sha256: String
        /// The body's size in bytes.
        public let bytes: Int64
        /// The object file inside the cache. Read it, or use ``DiskCache/materialize(_:at:)``; never write to it.
        public let url: URL
        /// The format recorded at store time (for example `"jpeg"`), if any.
        public let format: String?
    }

    /// The cache's root directory.
    public let directory: URL

    /// The size in bytes of objects and pages above which ``sweep()`` removes files. Default: 1 GiB.
    public let sizeLimit: Int64

    /// Whether files are added and materialized by hard link when they share a filesystem with the cache.
    /// Default: `true`. When `false`, or when a link is refused, files are copied instead.
    public let prefersHardLinks: Bool

    /// The clock for page expiry and recency.
    package let now: @Sendable () -> Date

    /// Serializes ``sweep()`` and ``removeAll()``. Nothing else takes it (see the type's documentation).
    let maintenanceLock = NSLock()

    /// The prefix of the temporary files that ``materialize(_:at:)`` writes next to a destination: ``AtomicFile``'s,
    /// so that the owner of that folder recognises leftovers of a killed run (``AtomicFile/removeLeftovers(in:)``).
    public static let temporaryFilePrefix = AtomicFile.temporaryPrefix

    /// Creates a cache rooted at `directory`. Nothing is touched until the first write.
    ///
    /// - Parameters:
    ///   - directory: The root, usually ``defaultDirectory(environment:)``. Created when needed.
    ///   - sizeLimit: See ``sizeLimit``. Default: 1 GiB.
    ///   - prefersHardLinks: See ``prefersHardLinks``. Tests pass `false` to force the copy path.
    ///   - now: The clock. Tests inject one to control expiry and recency.
    public init(
        directory: URL,
        sizeLimit: Int64 = 1 << 30,
        prefersHardLinks: Bool = true,
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.directory = directory
        self.sizeLimit = sizeLimit
        self.prefersHardLinks = prefersHardLinks
        self.now = now
    }

    /// The default cache directory: `$XDG_CACHE_HOME/mirror` when that variable holds an absolute path
    /// (the XDG Base Directory rule), otherwise `$HOME/.cache/mirror`, otherwise the user's home
    /// directory as Foundation knows it, plus `.cache/mirror`.
    ///
    /// - Parameter environment: The environment to read. Default: the process's.
    public static func defaultDirectory(
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) -> URL {
        if let xdg = environment["XDG_CACHE_HOME"], xdg.hasPrefix("/") {
            return URL(fileURLWithPath: xdg, isDirectory: true).appendingPathComponent("mirror", isDirectory: true)
        }
        let home: URL
        if let path = environment["HOME"], !path.isEmpty {
            home = URL(fileURLWithPath: path, isDirectory: true)
        } else {
            home = FileManager.default.homeDirectoryForCurrentUser
        }
        return home.appendingPathComponent(".cache", isDirectory: true)
            .appendingPathComponent("mirror", isDirectory: true)
    }

    // MARK: - Statistics and removal

    /// Counts what the cache holds.
    ///
    /// - Returns: `entries`, the number of image objects (two URLs with the same bytes count once);
    ///   `bytes`, the size of objects and pages together; `pages`, the number of stored pages,
    ///   expired ones included until a ``sweep()`` or lookup removes them.
    public func stats() -> (entries: Int, bytes: Int64, pages: Int) {
        let objects = objectFiles()
        let pages = pageFiles()
        let bytes = objects.reduce(Int64(0)) { $0 + $1.size } + pages.reduce(Int64(0)) { $0 + $1.size }
        return (objects.count, bytes, pages.count)
    }

    /// Removes the index entry and the page stored for `key`. The object stays until a sweep, because
    /// other keys may share it.
    public func remove(_ key: CacheKey) {
        CacheFileSystem.removeFile(indexURL(for: key))
        CacheFileSystem.removeFile(pageURL(for: key))
    }

    /// Removes everything in the cache: objects, index, pages and temporary files.
    ///
    /// A store running at the same time in another thread or process may fail, or may leave its entry.
    ///
    /// - Throws: ``DiskCacheError/fileSystem(_:)`` if a directory cannot be removed.
    public func removeAll() throws(DiskCacheError) {
        maintenanceLock.lock()
        defer { maintenanceLock.unlock() }
        do throws(FileError) {
            for area in [indexDirectory, pagesDirectory, objectsDirectory, temporaryDirectory] {
                try CacheFileSystem.removeTree(area)
            }
        } catch {
            throw .fileSystem(error)
        }
    }

    /// Writes `data` as `destination`, replacing what is there, through ``AtomicFile/replaceFile(_:at:sync:staging:)``
    /// with its temporary file in `tmp/`: readers see the old file or the whole new one. Not synced: a cache file lost
    /// to a crash is a miss.
    func replaceFile(_ data: Data, at destination: URL) throws(FileError) {
        try CacheFileSystem.makeDirectory(temporaryDirectory)
        try CacheFileSystem.makeDirectory(destination.deletingLastPathComponent())
        try AtomicFile.replaceFile(data, at: destination, staging: temporaryDirectory)
    }

    // MARK: - Layout

    var objectsDirectory: URL { directory.appendingPathComponent("objects", isDirectory: true) }
    var indexDirectory: URL { directory.appendingPathComponent("index", isDirectory: true) }
    var pagesDirectory: URL { directory.appendingPathComponent("pages", isDirectory: true) }
    var temporaryDirectory: URL { directory.appendingPathComponent("tmp", isDirectory: true) }

    /// `objects/<first 2 hex>/<sha256>`; the shard keeps directories small.
    func objectURL(for sha256: String) -> URL {
        objectsDirectory.appendingPathComponent(String(sha256.prefix(2)), isDirectory: true)
            .appendingPathComponent(sha256)
    }

    func indexURL(for key: CacheKey) -> URL {
        indexDirectory.appendingPathComponent(key.fileName)
    }

    package func pageURL(for key: CacheKey) -> URL {
        pagesDirectory.appendingPathComponent(key.fileName)
    }

    /// Whether `string` is a SHA-256 hex digest as this cache names objects: 64 lowercase hex digits.
    /// Checked on every digest that becomes a path, so a bad argument or a tampered index file cannot
    /// name a file outside `objects/`.
    static func isDigest(_ string: String) -> Bool {
        string.utf8.count == 64 && string.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
    }

    /// A regular file in the cache with its size and recency.
    struct FileRecord {
        package var url: URL
        package var size: Int64
        var modificationDate: Date
    }

    /// Every object file, with sizes and dates. Names that are not digests are ignored.
    func objectFiles() -> [FileRecord] {
        var records: [FileRecord] = []
        for shard in CacheFileSystem.names(in: objectsDirectory) {
            let shardURL = objectsDirectory.appendingPathComponent(shard, isDirectory: true)
            for name in CacheFileSystem.names(in: shardURL) where Self.isDigest(name) {
                let url = shardURL.appendingPathComponent(name)
                if let status = CacheFileSystem.status(of: url), status.isRegularFile {
                    records.append(FileRecord(url: url, size: status.size, modificationDate: status.modificationDate))
                }
            }
        }
        return records
    }

    /// Every page file, with sizes and dates.
    func pageFiles() -> [FileRecord] {
        CacheFileSystem.names(in: pagesDirectory).compactMap { name in
            let url = pagesDirectory.appendingPathComponent(name)
            guard let status = CacheFileSystem.status(of: url), status.isRegularFile else {
                return nil
            }
            return FileRecord(url: url, size: status.size, modificationDate: status.modificationDate)
        }
    }
}
