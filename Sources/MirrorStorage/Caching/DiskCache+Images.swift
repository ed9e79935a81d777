import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import MirrorCore

extension DiskCache {
    /// The JSON record in `index/<CacheKey.fileName>`.
    struct IndexRecord: Codable, Hashable {
        package var sha256: String
        package var bytes: Int64
        package var format: String?
        /// The key's normalized URL, for people reading the cache; it holds no secrets (see ``CacheKey``).
        package var url: String?
    }

    /// Adds an image body to the cache and points `key` at it.
    ///
    /// The file becomes the object `objects/<2 hex>/<sha256>`. When ``prefersHardLinks`` is on and the
    /// file is on the cache's filesystem, it is added by `link(2)`: no bytes are copied, and the object
    /// appears whole at once. Otherwise it is copied to a temporary file in the cache's `tmp/` and renamed
    /// into place (``AtomicFile``). If an object with this digest and size already exists, nothing is copied.
    /// The index record is then written the same atomic way.
    ///
    /// - Important: Call this only with bodies that were already validated (a complete image whose
    ///   digest is `sha256`); the cache trusts both and does not read the file to check them.
    /// - Note: A hard-linked object *is* the source file under a second name: they share bytes and
    ///   modification date. Replacing the source by rename (as the output folder does) is harmless; writing
    ///   into it in place would change the cached object too. ``entry(for:)`` then catches a size change.
    ///
    /// - Parameters:
    ///   - source: A complete, validated file. It is left where it is.
    ///   - sha256: The SHA-256 of the file's bytes, as 64 lowercase hex digits.
    ///   - key: The key of the URL the body came from.
    ///   - format: The image format to record, such as `"jpeg"`; optional.
    /// - Throws: ``DiskCacheError/invalidDigest(_:)``, or ``DiskCacheError/fileSystem(_:)``.
    public func store(
        fileAt source: URL,
        sha256: String,
        for key: CacheKey,
        format: String? = nil
    ) throws(DiskCacheError) {
        guard Self.isDigest(sha256) else {
            throw .invalidDigest(sha256)
        }
        // A symbolic link is refused: link(2) would make the object a link to a file the cache does not own.
        guard let sourceStatus = CacheFileSystem.status(of: source, followingLinks: false) else {
            throw .fileSystem(FileError(operation: "find", path: source.path, code: ENOENT))
        }
        guard sourceStatus.isRegularFile else {
            throw .fileSystem(FileError(operation: "store", path: source.path, code: EINVAL))
        }
        let object = objectURL(for: sha256)
        let record = IndexRecord(
            sha256: sha256,
            bytes: sourceStatus.size,
            format: format,
            url: key.namespace == nil ? key.normalizedURL : nil
        )
        do throws(FileError) {
            if let existing = CacheFileSystem.status(of: object), existing.size == sourceStatus.size {
                CacheFileSystem.setModificationDate(now(), of: object)
            } else {
                try addObject(from: source, to: object, size: sourceStatus.size)
            }
            try replaceFile(Self.encode(record), at: indexURL(for: key))
        } catch {
            throw .fileSystem(error)
        }
    }

    /// The cached body for `key`, or `nil` on a miss.
    ///
    /// A hit sets the object's modification date to now, which is what ``sweep()`` reads as recency.
    /// An index record that is unreadable, or that points at an object that is missing or has another
    /// size, is a miss: the record (and a mismatched object) is removed, and nothing throws.
    ///
    /// - Note: With hard links the object may share its inode with files in output folders, so touching it
    ///   also changes their modification dates.
    public func entry(for key: CacheKey) -> Entry? {
        let indexFile = indexURL(for: key)
        guard let data = try? Data(contentsOf: indexFile) else {
            return nil
        }
        guard let record = try? JSONDecoder().decode(IndexRecord.self, from: data),
              Self.isDigest(record.sha256), record.bytes >= 0
        else {
            CacheFileSystem.removeFile(indexFile)
            return nil
        }
        let object = objectURL(for: record.sha256)
        guard let status = CacheFileSystem.status(of: object), status.isRegularFile else {
            CacheFileSystem.removeFile(indexFile)
            return nil
        }
        guard status.size == record.bytes else {
            CacheFileSystem.removeFile(indexFile)
            CacheFileSystem.removeFile(object)
            return nil
        }
        CacheFileSystem.setModificationDate(now(), of: object)
        return Entry(sha256: record.sha256, bytes: record.bytes, url: object, format: record.format)
    }

    /// Puts a copy of a cached body at `destination`, atomically, never replacing a file there.
    ///
    /// With ``prefersHardLinks`` on and `destination` on the cache's filesystem, `destination` becomes a
    /// hard link to the object: instant, and no extra space. Otherwise the object is copied to a
    /// temporary file next to `destination` (``AtomicFile``'s, named with ``temporaryFilePrefix``), which
    /// ``AtomicFile/publish(_:as:)`` then moves to `destination` without replacing a file there. Either way `destination` appears complete or not at all, and on
    /// failure no temporary file is left behind (a kill can leave one, which the prefix identifies).
    ///
    /// The caller decides about `fsync`: the output folder batches it (see DESIGN, durability).
    ///
    /// - Parameters:
    ///   - entry: An entry from ``entry(for:)``.
    ///   - destination: Where the file should appear. Its directory must exist.
    /// - Throws: ``DiskCacheError/destinationExists(path:)`` if a file is already there;
    ///   ``DiskCacheError/objectMissing(sha256:)`` if the object was swept since the lookup;
    ///   ``DiskCacheError/fileSystem(_:)`` for other failures.
    public func materialize(_ entry: Entry, at destination: URL) throws(DiskCacheError) {
        guard Self.isDigest(entry.sha256) else {
            throw .invalidDigest(entry.sha256)
        }
        guard !CacheFileSystem.exists(destination) else {
            throw .destinationExists(path: destination.path)
        }
        if prefersHardLinks {
            let code = CacheFileSystem.hardLink(entry.url, to: destination)
            switch code {
            case 0:
                return
            case EEXIST:
                throw .destinationExists(path: destination.path)
            case ENOENT where CacheFileSystem.status(of: entry.url) == nil:
                throw .objectMissing(sha256: entry.sha256)
            case _ where AtomicFile.refusesHardLinks(code):
                break // Another filesystem, or one without hard links: copy below.
            default:
                throw .fileSystem(FileError(operation: "link", path: destination.path, code: code))
            }
        }
        try copyIntoPlace(entry, at: destination)
    }

    // MARK: - Private

    /// Adds `source` as the object at `object`, by hard link when allowed and possible, else by copy.
    private func addObject(from source: URL, to object: URL, size: Int64) throws(FileError) {
        try CacheFileSystem.makeDirectory(object.deletingLastPathComponent())
        if prefersHardLinks {
            // link(2) makes the whole object appear at once, and never replaces an existing name.
            let code = CacheFileSystem.hardLink(source, to: object)
            if code == 0 {
                CacheFileSystem.setModificationDate(now(), of: object)
                return
            }
            if code == EEXIST, CacheFileSystem.status(of: object)?.size == size {
                return // Another thread or process stored the same bytes first.
            }
            // EXDEV (another filesystem), EPERM/ENOTSUP (no hard links), or an EEXIST of another size
            // (a damaged object to replace): copy instead.
        }
        try CacheFileSystem.makeDirectory(temporaryDirectory)
        let temporary = try AtomicFile.makeTemporary(in: temporaryDirectory)
        defer {
            close(temporary.descriptor)
            AtomicFile.remove(temporary.url)
        }
        try CacheFileSystem.copy(source, into: temporary)
        CacheFileSystem.setModificationDate(now(), of: temporary.url)
        try AtomicFile.replace(object, with: temporary.url)
    }

    /// The copy path of ``materialize(_:at:)``.
    private func copyIntoPlace(_ entry: Entry, at destination: URL) throws(DiskCacheError) {
        let temporary: AtomicFile.Temporary
        do throws(FileError) {
            temporary = try AtomicFile.makeTemporary(in: destination.deletingLastPathComponent())
        } catch {
            throw .fileSystem(error)
        }
        defer {
            close(temporary.descriptor)
            AtomicFile.remove(temporary.url)
        }
        let copied: Int64
        do throws(FileError) {
            copied = try CacheFileSystem.copy(entry.url, into: temporary)
        } catch {
            if CacheFileSystem.status(of: entry.url) == nil {
                throw .objectMissing(sha256: entry.sha256)
            }
            throw .fileSystem(error)
        }
        guard copied == entry.bytes else {
            throw .objectMissing(sha256: entry.sha256) // Replaced or truncated under us: do not publish it.
        }
        do throws(FileError) {
            try AtomicFile.publish(temporary.url, as: destination)
        } catch {
            throw error.code == EEXIST ? .destinationExists(path: destination.path) : .fileSystem(error)
        }
    }

    static func encode(_ record: IndexRecord) -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Encoding four plain fields cannot fail.
        return (try? encoder.encode(record)) ?? Data()
    }
}
