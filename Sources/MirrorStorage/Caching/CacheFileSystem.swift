import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
import MirrorCore
#endif

/// The few POSIX file operations the disk cache needs, with errors turned into ``DiskCacheError``.
///
/// POSIX rather than `FileManager` where the semantics matter: `link(2)` creates a name atomically and
/// never replaces one, `rename(2)` replaces one atomically, and `mkdir(2)` reports `EEXIST` instead of
/// racing a check. All functions are safe to call from any thread.
enum CacheFileSystem {
    /// What `stat(2)` says about a file.
    package struct Status: Sendable, Hashable {
        package var size: Int64
        var modificationDate: Date
        var inode: UInt64
        package var isRegularFile: Bool
        package var isDirectory: Bool
    }

    /// The error for a failed POSIX call, with `strerror`'s text for `code`.
    package static func failure(_ operation: String, _ url: URL, _ code: Int32) -> DiskCacheError {
        .fileSystem(operation: operation, path: url.path, reason: String(cString: strerror(code)))
    }

    /// The status of the file at `url`, or `nil` if there is none.
    ///
    /// - Parameter followingLinks: Whether a symbolic link stands for its target (`stat`) or for itself
    ///   (`lstat`, so `isRegularFile` is false for it).
    package static func status(of url: URL, followingLinks: Bool = true) -> Status? {
        var info = stat()
        guard (followingLinks ? stat(url.path, &info) : lstat(url.path, &info)) == 0 else {
            return nil
        }
        #if canImport(Darwin)
        let time = info.st_mtimespec
        #else
        let time = info.st_mtim
        #endif
        let kind = info.st_mode & S_IFMT
        return Status(
            size: Int64(info.st_size),
            modificationDate: Date(timeIntervalSince1970: Double(time.tv_sec) + Double(time.tv_nsec) / 1e9),
            inode: UInt64(info.st_ino),
            isRegularFile: kind == S_IFREG,
            isDirectory: kind == S_IFDIR
        )
    }

    /// Whether any file, even a dangling symbolic link, exists at `url`.
    package static func exists(_ url: URL) -> Bool {
        var info = stat()
        return lstat(url.path, &info) == 0
    }

    /// Creates the directory at `url` and any missing parents; an existing directory is not an error,
    /// even when another thread creates it at the same moment.
    static func makeDirectory(_ url: URL) throws(DiskCacheError) {
        if mkdir(url.path, 0o755) == 0 {
            return
        }
        let code = errno
        switch code {
        case EEXIST:
            if status(of: url)?.isDirectory == true {
                return
            }
            throw failure("mkdir", url, ENOTDIR)
        case ENOENT:
            let parent = url.deletingLastPathComponent()
            guard parent.path != url.path else {
                throw failure("mkdir", url, code)
            }
            try makeDirectory(parent)
            try makeDirectory(url)
        default:
            throw failure("mkdir", url, code)
        }
    }

    /// Makes `destination` a new name for the file at `source` (`link(2)`).
    ///
    /// - Returns: 0 on success, else the `errno`: `EEXIST` when `destination` exists (it is never
    ///   replaced), `EXDEV` across filesystems, `EPERM`/`ENOTSUP`/`EMLINK` where hard links are refused.
    static func hardLink(_ source: URL, to destination: URL) -> Int32 {
        link(source.path, destination.path) == 0 ? 0 : errno
    }

    /// Renames `source` to `destination` atomically, replacing any file there (`rename(2)`).
    package static func move(_ source: URL, to destination: URL) throws(DiskCacheError) {
        guard rename(source.path, destination.path) == 0 else {
            throw failure("rename", destination, errno)
        }
    }

    /// Copies the contents of `source` to a new file at `destination`, which must not exist.
    package static func copy(_ source: URL, to destination: URL) throws(DiskCacheError) {
        do {
            try FileManager.default.copyItem(at: source, to: destination)
        } catch {
            throw .fileSystem(operation: "copy", path: destination.path, reason: "\(error)")
        }
    }

    /// Removes the file at `url`; a file that is already gone is not an error. Returns whether it removed one.
    @discardableResult
    static func removeFile(_ url: URL) -> Bool {
        unlink(url.path) == 0
    }

    /// Removes the directory at `url` with everything in it; a missing directory is not an error.
    static func removeTree(_ url: URL) throws(DiskCacheError) {
        guard exists(url) else {
            return
        }
        do {
            try FileManager.default.removeItem(at: url)
        } catch {
            // Another thread may have removed part of the tree first; only a tree still there is a failure.
            if exists(url) {
                throw .fileSystem(operation: "remove", path: url.path, reason: "\(error)")
            }
        }
    }

    /// Sets the modification date of the file at `url`, ignoring failure (it only affects sweep order).
    ///
    /// - Note: Linux cannot set a file's creation (birth) time, so recency lives in the modification date.
    static func setModificationDate(_ date: Date, of url: URL) {
        try? FileManager.default.setAttributes([.modificationDate: date], ofItemAtPath: url.path)
    }

    /// The names in the directory at `url`, or none if it does not exist or cannot be read.
    package static func names(in url: URL) -> [String] {
        (try? FileManager.default.contentsOfDirectory(atPath: url.path)) ?? []
    }

    /// Writes `data` to a new file in `temporaryDirectory`, then renames it to `destination`, so readers
    /// see the old file or the whole new one, never part of it.
    static func writeAtomically(
        _ data: Data,
        to destination: URL,
        temporaryDirectory: URL
    ) throws(DiskCacheError) {
        try makeDirectory(temporaryDirectory)
        try makeDirectory(destination.deletingLastPathComponent())
        let temporary = temporaryDirectory.appendingPathComponent(UUID().uuidString)
        do {
            try data.write(to: temporary)
        } catch {
            removeFile(temporary)
            throw .fileSystem(operation: "write", path: temporary.path, reason: "\(error)")
        }
        do {
            try move(temporary, to: destination)
        } catch {
            removeFile(temporary)
            throw error
        }
    }
}
