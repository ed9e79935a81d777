import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import MirrorCore

/// The few POSIX file operations the disk cache needs beside ``AtomicFile`` (which writes its files), failing with
/// ``FileError``.
///
/// POSIX rather than `FileManager` where the semantics matter: `link(2)` creates a name atomically and
/// never replaces one, and `mkdir(2)` reports `EEXIST` instead of racing a check. All functions are safe
/// to call from any thread.
enum CacheFileSystem {
    /// What `stat(2)` says about a file.
    package struct Status: Sendable, Hashable {
        package var size: Int64
        var modificationDate: Date
        var inode: UInt64
        package var isRegularFile: Bool
        package var isDirectory: Bool
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
    static func makeDirectory(_ url: URL) throws(FileError) {
        if mkdir(url.path, 0o755) == 0 {
            return
        }
        let code = errno
        switch code {
        case EEXIST:
            if status(of: url)?.isDirectory == true {
                return
            }
            throw FileError(operation: "create the folder", path: url.path, code: ENOTDIR)
        case ENOENT:
            let parent = url.deletingLastPathComponent()
            guard parent.path != url.path else {
                throw FileError(operation: "create the folder", path: url.path, code: code)
            }
            try makeDirectory(parent)
            try makeDirectory(url)
        default:
            throw FileError(operation: "create the folder", path: url.path, code: code)
        }
    }

    /// Makes `destination` a new name for the file at `source` (`link(2)`).
    ///
    /// - Returns: 0 on success, else the `errno`: `EEXIST` when `destination` exists (it is never
    ///   replaced), `EXDEV` across filesystems, `EPERM`/`ENOTSUP`/`EMLINK` where hard links are refused.
    static func hardLink(_ source: URL, to destination: URL) -> Int32 {
        link(source.path, destination.path) == 0 ? 0 : errno
    }

    /// Copies the bytes of the file at `source` into `temporary` (from ``AtomicFile/makeTemporary(in:)``), 64 KiB at a
    /// time, so that a large image is never held in memory whole.
    ///
    /// - Returns: The number of bytes copied.
    @discardableResult
    static func copy(_ source: URL, into temporary: AtomicFile.Temporary) throws(FileError) -> Int64 {
        let input = open(source.path, O_RDONLY | O_CLOEXEC)
        guard input >= 0 else { throw FileError(operation: "open", path: source.path, code: errno) }
        defer { close(input) }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 1)
        defer { buffer.deallocate() }
        var copied: Int64 = 0
        while true {
            let count = read(input, buffer.baseAddress, buffer.count)
            if count == 0 { return copied }
            if count < 0 {
                if errno == EINTR { continue }
                throw FileError(operation: "read", path: source.path, code: errno)
            }
            try AtomicFile.writeAll(UnsafeRawBufferPointer(rebasing: buffer[..<count]), to: temporary.descriptor, path: temporary.url.path)
            copied += Int64(count)
        }
    }

    /// Removes the file at `url`; a file that is already gone is not an error. Returns whether it removed one.
    @discardableResult
    static func removeFile(_ url: URL) -> Bool {
        unlink(url.path) == 0
    }

    /// Removes the directory at `url` with everything in it; a missing directory is not an error.
    static func removeTree(_ url: URL) throws(FileError) {
        guard exists(url) else {
            return
        }
        do {
            try FileManager.default.removeItem(at: url)
        } catch {
            // Another thread may have removed part of the tree first; only a tree still there is a failure.
            if exists(url) {
                throw FileError(operation: "remove", path: url.path, code: posixCode(of: error))
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

    /// The `errno` behind a `FileManager` error (its underlying POSIX error), or `EIO` when it names none.
    private static func posixCode(of error: any Error) -> Int32 {
        guard let posix = (error as NSError).userInfo[NSUnderlyingErrorKey] as? NSError, posix.domain == NSPOSIXErrorDomain else {
            return EIO
        }
        return Int32(posix.code)
    }
}
