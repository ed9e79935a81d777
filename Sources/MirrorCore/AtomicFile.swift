import CSyscalls
import Foundation
import MirrorSync

/// Files that appear whole or not at all: a temporary file in the destination folder, filled,
/// synced, then linked into place under a name that must not exist yet.
///
/// Temporary files are named `.mirror-<random>.part`, are created with `O_EXCL | O_NOFOLLOW` (so a
/// planted symlink is never followed) and are removed on every failure path. A run that was killed
/// leaves at most such files, which `removeLeftovers(in:)` deletes.
public enum AtomicFile {
    /// The prefix and suffix of every temporary file mirror makes.
    public static let temporaryPrefix = ".mirror-"
    public static let temporarySuffix = ".part"

    /// An open temporary file inside a folder.
    public struct Temporary: Sendable {
        public let url: URL
        public let descriptor: Int32
    }

    /// Creates a new temporary file in `directory`, never following a symlink.
    public static func makeTemporary(in directory: URL) throws(FileError) -> Temporary {
        for _ in 0..<8 {
            let name = temporaryPrefix + randomToken() + temporarySuffix
            let url = directory.appendingPathComponent(name, isDirectory: false)
            // Read and write: a download's body is read back through the same descriptor to be validated.
            let descriptor = open(url.path, O_CREAT | O_EXCL | O_RDWR | O_NOFOLLOW | O_CLOEXEC, 0o644)
            if descriptor >= 0 { return Temporary(url: url, descriptor: descriptor) }
            if errno != EEXIST { throw FileError(operation: "create a temporary file in", path: directory.path, code: errno) }
        }
        throw FileError(operation: "create a temporary file in", path: directory.path, code: EEXIST)
    }

    /// Writes all of `bytes` to `descriptor`, retrying interrupted and partial writes.
    public static func writeAll(_ bytes: UnsafeRawBufferPointer, to descriptor: Int32, operation: String = "write", path: String) throws(FileError) {
        guard var pointer = bytes.baseAddress else { return }
        var remaining = bytes.count
        while remaining > 0 {
            let count = write(descriptor, pointer, remaining)
            if count < 0 {
                if errno == EINTR { continue }
                throw FileError(operation: operation, path: path, code: errno)
            }
            remaining -= count
            pointer += count
        }
    }

    /// Writes all of `data` to `descriptor`.
    public static func writeAll(_ data: Data, to descriptor: Int32, path: String) throws(FileError) {
        // withUnsafeBytes rethrows untyped errors, so the typed one travels out as a Result.
        let result = data.withUnsafeBytes { bytes in
            Result { () throws(FileError) in try writeAll(bytes, to: descriptor, path: path) }
        }
        try result.get()
    }

    /// Flushes a file's data to the disk.
    public static func sync(_ descriptor: Int32, path: String) throws(FileError) {
        if fsync(descriptor) != 0 { throw FileError(operation: "sync", path: path, code: errno) }
    }

    /// Flushes a folder's entries (the renames and links in it) to the disk.
    public static func syncDirectory(_ directory: URL) throws(FileError) {
        try onDirectory(directory, "sync", fsync)
    }

    /// Writes back and flushes everything of the file system that holds `directory` (`syncfs(2)`): one device flush
    /// for a whole batch of files where an fsync of each costs one flush each (ext4 without a journal, which cannot
    /// group them). Throws `ENOSYS` where the call is missing (not glibc), and the write-back error it reports.
    public static func syncFileSystem(of directory: URL) throws(FileError) {
        try onDirectory(directory, "sync the file system of", mirror_syncfs)
    }

    /// Opens `directory` and applies `call` to its descriptor; a failure is `operation`'s, with its errno.
    private static func onDirectory(_ directory: URL, _ operation: String, _ call: (Int32) -> Int32) throws(FileError) {
        let descriptor = open(directory.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else { throw FileError(operation: "open", path: directory.path, code: errno) }
        defer { close(descriptor) }
        if call(descriptor) != 0 { throw FileError(operation: operation, path: directory.path, code: errno) }
    }

    /// Moves a temporary file to `destination`, failing with `EEXIST` rather than replacing a file.
    ///
    /// `renameat2(2)` with `RENAME_NOREPLACE`; where the kernel or the file system lacks it, `link(2)` then
    /// `unlink(2)`; where the file system has no hard links either, `rename(2)` after a last check that `destination`
    /// is free (a small race remains there alone). At every instant the destination either does not exist or is the
    /// whole file. The one call is one directory change instead of two (measured: a third of the cost of publishing
    /// a file on tmpfs).
    public static func publish(_ temporary: URL, as destination: URL) throws(FileError) {
        try publish(temporaryPath: temporary.path, as: destination.path)
    }

    /// ``publish(_:as:)`` for paths.
    public static func publish(temporaryPath temporary: String, as destination: String) throws(FileError) {
        if renameWithoutReplacing.withLock({ $0 }) {
            if mirror_rename_noreplace(temporary, destination) == 0 { return }
            let code = errno
            guard code == EINVAL || code == ENOSYS || code == EPERM else {
                throw FileError(operation: "save", path: destination, code: code)
            }
            // Not here (an old kernel, a file system without the flag): link and unlink from now on.
            renameWithoutReplacing.withLock { $0 = false }
        }
        if link(temporary, destination) == 0 {
            unlink(temporary)
            return
        }
        let code = errno
        guard refusesHardLinks(code) else { throw FileError(operation: "save", path: destination, code: code) }
        var status = stat()
        guard lstat(destination, &status) != 0 else { throw FileError(operation: "save", path: destination, code: EEXIST) }
        if rename(temporary, destination) != 0 { throw FileError(operation: "save", path: destination, code: errno) }
    }

    /// Whether a failed `link(2)`'s `errno` says the link cannot be made here at all: across file systems (`EXDEV`), or
    /// on one without hard links (`EPERM`, `ENOTSUP`, `EOPNOTSUPP`, `EMLINK`, `ENOSYS`).
    public static func refusesHardLinks(_ code: Int32) -> Bool {
        [EXDEV, EPERM, ENOTSUP, EOPNOTSUPP, EMLINK, ENOSYS].contains(code)
    }

    /// Whether `renameat2` with `RENAME_NOREPLACE` worked so far in this process.
    private static let renameWithoutReplacing = Locked(true)

    /// Writes `data` as `destination`, whole or not at all (temporary file, optional fsync, link into place); the
    /// temporary file is made in `staging` (same file system) or beside the destination.
    public static func writeFile(_ data: Data, to destination: URL, sync: Bool, staging: URL? = nil) throws(FileError) {
        let temporary = try makeTemporary(in: staging ?? destination.deletingLastPathComponent())
        defer { close(temporary.descriptor) }
        do throws(FileError) {
            try writeAll(data, to: temporary.descriptor, path: destination.path)
            if sync { try self.sync(temporary.descriptor, path: destination.path) }
            try publish(temporary.url, as: destination)
        } catch {
            remove(temporary.url)
            throw error
        }
    }

    /// Writes `data` as `destination`, replacing what is there: readers see the old file or the new one, whole
    /// (temporary file in `staging` or beside it, optional fsync, then `rename(2)`). For derived files that are
    /// rewritten (a gallery page, a shard's records when failed rows are retried), not images.
    public static func replaceFile(_ data: Data, at destination: URL, sync: Bool = false, staging: URL? = nil) throws(FileError) {
        let temporary = try makeTemporary(in: staging ?? destination.deletingLastPathComponent())
        defer { close(temporary.descriptor) }
        do throws(FileError) {
            try writeAll(data, to: temporary.descriptor, path: destination.path)
            if sync { try self.sync(temporary.descriptor, path: destination.path) }
            try replace(destination, with: temporary.url)
        } catch {
            remove(temporary.url)
            throw error
        }
    }

    /// Moves a temporary file over `destination` (`rename(2)`: readers see the old file or the new one, whole).
    public static func replace(_ destination: URL, with temporary: URL) throws(FileError) {
        if rename(temporary.path, destination.path) != 0 { throw FileError(operation: "save", path: destination.path, code: errno) }
    }

    /// Deletes a file, ignoring a missing one.
    public static func remove(_ url: URL) {
        unlink(url.path)
    }

    /// Removes temporary files a killed run left in `directory`; returns how many.
    @discardableResult
    public static func removeLeftovers(in directory: URL) -> Int {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory.path) else { return 0 }
        var removed = 0
        for name in names where name.hasPrefix(temporaryPrefix) && name.hasSuffix(temporarySuffix) {
            if unlink(directory.appendingPathComponent(name).path) == 0 { removed += 1 }
        }
        return removed
    }

    /// A name token unique in this process and unlikely in any other: a random number drawn once, then a counter
    /// (a `getrandom(2)` per temporary file was one system call per image more than needed). Names need not be secret:
    /// `O_EXCL | O_NOFOLLOW` is what keeps a planted file or link from being used.
    private static func randomToken() -> String {
        let count = tokenCounter.withLock { value -> UInt64 in
            value &+= 1
            return value
        }
        return tokenPrefix + String(count, radix: 36)
    }

    private static let tokenPrefix: String = {
        var generator = SystemRandomNumberGenerator()
        return String(UInt64.random(in: 0...UInt64.max, using: &generator), radix: 36) + "-"
    }()

    private static let tokenCounter = Locked<UInt64>(0)
}

/// A failed file-system call: what was being done, to which path, and the `errno`.
public struct FileError: Error, Sendable, Hashable, CustomStringConvertible {
    public let operation: String
    public let path: String
    public let code: Int32
    /// What happened, in words, where `strerror`'s would mislead (a folder that is a symbolic link is not "Not a
    /// directory"), or `nil` for those.
    public let explanation: String?

    public init(operation: String, path: String, code: Int32, explanation: String? = nil) {
        self.operation = operation
        self.path = path
        self.code = code
        self.explanation = explanation
    }

    /// Whether the error says the disk (or the file size limit) is full.
    public var isOutOfSpace: Bool { code == ENOSPC || code == EDQUOT || code == EFBIG }

    /// Whether the folder as a whole cannot take images (full, read-only, not permitted, a planted symlink,
    /// an I/O error), so that a run stops rather than fail every image in turn. A name that appeared meanwhile
    /// (`EEXIST`) concerns one image only.
    public var isFatal: Bool { code != EEXIST }

    public var description: String {
        "could not \(operation) \(path): \(explanation ?? (code == ELOOP ? Self.linkRefused : String(cString: strerror(code))))"
    }

    /// What `ELOOP` means where mirror opens with `O_NOFOLLOW` or checks with `lstat`: the last part of the path is a
    /// symbolic link (not "Too many levels of symbolic links").
    public static let linkRefused = "it is a symbolic link, and mirror never writes through a link it finds in a folder it fills"
}
