import Foundation

extension DiskCache {
    /// What one ``sweep()`` removed.
    public struct SweepResult: Sendable, Hashable {
        /// Objects and pages removed to get under the size limit.
        public var evictedFiles = 0
        /// Their bytes.
        public var evictedBytes: Int64 = 0
        /// Expired or corrupt pages removed.
        public var expiredPages = 0
        /// Index records removed because their object was gone or they were unreadable.
        public var danglingIndexEntries = 0
    }

    /// How old a file in `tmp/` must be before a sweep takes it for the leftover of a killed writer.
    static let staleTemporaryFileAge: TimeInterval = 3600

    /// Brings the cache back under ``sizeLimit`` and clears out what is no longer valid.
    ///
    /// In order:
    /// 1. expired and corrupt pages are removed, and temporary files older than an hour (left by a
    ///    killed writer);
    /// 2. if objects and pages together exceed ``sizeLimit``, files are removed in order of modification
    ///    date, oldest (least recently used) first, until they total at most 70% of the limit;
    /// 3. index records that are unreadable or point at a missing object are removed.
    ///
    /// Runs synchronously; call it at the end of a run or from `mirror cache`. Two sweeps of one instance
    /// never overlap (``maintenanceLock``); stores and lookups may run during a sweep.
    @discardableResult
    public func sweep() -> SweepResult {
        maintenanceLock.lock()
        defer { maintenanceLock.unlock() }
        var result = SweepResult()
        let now = now()

        // 1. Pages that can no longer be served, and leftovers of killed writers.
        var pages: [FileRecord] = []
        for page in pageFiles() {
            if let expiresAt = Self.pageExpiry(ofFileAt: page.url), now < expiresAt {
                pages.append(page)
            } else if CacheFileSystem.removeFile(page.url) {
                result.expiredPages += 1
            }
        }
        for name in CacheFileSystem.names(in: temporaryDirectory) {
            let url = temporaryDirectory.appendingPathComponent(name)
            if let status = CacheFileSystem.status(of: url),
               now.timeIntervalSince(status.modificationDate) > Self.staleTemporaryFileAge {
                CacheFileSystem.removeFile(url)
            }
        }

        // 2. Least recently used first, down to 70% of the limit, so the next store does not sweep again.
        let files = objectFiles() + pages
        var total = files.reduce(Int64(0)) { $0 + $1.size }
        if total > sizeLimit {
            let target = sizeLimit / 10 * 7
            for file in files.sorted(by: { $0.modificationDate < $1.modificationDate }) {
                guard total > target else {
                    break
                }
                if CacheFileSystem.removeFile(file.url) {
                    total -= file.size
                    result.evictedFiles += 1
                    result.evictedBytes += file.size
                }
            }
        }

        // 3. Index records whose object is gone (just now, or earlier).
        for name in CacheFileSystem.names(in: indexDirectory) {
            let url = indexDirectory.appendingPathComponent(name)
            let record = (try? Data(contentsOf: url)).flatMap { try? JSONDecoder().decode(IndexRecord.self, from: $0) }
            let isLive = record.map { Self.isDigest($0.sha256) && CacheFileSystem.exists(objectURL(for: $0.sha256)) }
            if isLive != true, CacheFileSystem.removeFile(url) {
                result.danglingIndexEntries += 1
            }
        }
        return result
    }
}
