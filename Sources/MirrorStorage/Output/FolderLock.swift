import Foundation
import MirrorSync
import MirrorCore

/// An exclusive lock on an output folder (`DIR/.mirror/lock`), so that two runs never write one folder.
///
/// Uses `flock(2)`: the kernel drops the lock when the process dies, however it dies, so a killed run
/// never leaves a stale lock behind. The holder writes its PID into the file so that the next run can
/// say who holds it.
public final class FolderLock: Sendable {
    /// Raised when another process holds the lock.
    public struct Held: Error, Sendable, CustomStringConvertible {
        /// The holder's PID, if it could be read.
        public let pid: Int32?
        public let path: String
        public var description: String {
            let who = pid.map { "process \($0)" } ?? "another process"
            return "\(who) is already writing this folder (lock: \(path))"
        }
    }

    /// The locked file's descriptor, until the lock is released.
    private let descriptor: Locked<Int32?>
    public let path: String

    /// Takes the lock without waiting.
    ///
    /// - Throws: `Held` when another process has it; `FileError` when the lock file cannot be made.
    public init(at url: URL) throws {
        path = url.path
        let descriptor = open(url.path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o644)
        guard descriptor >= 0 else { throw FileError(operation: "open the lock", path: url.path, code: errno) }
        if flock(descriptor, LOCK_EX | LOCK_NB) != 0 {
            let code = errno
            var buffer = [UInt8](repeating: 0, count: 32)
            let count = pread(descriptor, &buffer, buffer.count, 0)
            close(descriptor)
            guard code == EWOULDBLOCK else { throw FileError(operation: "lock", path: url.path, code: code) }
            let text = count > 0 ? String(decoding: buffer[0..<count], as: UTF8.self) : ""
            throw Held(pid: Int32(text.trimmingCharacters(in: .whitespacesAndNewlines)), path: url.path)
        }
        self.descriptor = Locked(descriptor)
        let pid = "\(getpid())\n"
        _ = ftruncate(descriptor, 0)
        _ = pid.withCString { pwrite(descriptor, $0, strlen($0), 0) }
    }

    /// Releases the lock now, rather than whenever the last reference goes — which may be a moment later, on another
    /// thread. Safe to call again.
    ///
    /// Unlocked explicitly before the close: a `flock` lock belongs to the open file, and a child this process is
    /// spawning at that moment holds a copy of every descriptor between its fork and its exec (`O_CLOEXEC` closes them
    /// only at the exec), so closing alone could leave the folder locked for that while — a CI run reopening a folder
    /// beside suites that start processes was refused so.
    public func release() {
        guard let descriptor = descriptor.withLock({ value -> Int32? in defer { value = nil }; return value }) else { return }
        _ = ftruncate(descriptor, 0)
        _ = flock(descriptor, LOCK_UN)
        close(descriptor)
    }

    deinit {
        release()
    }
}
