import Foundation
import MirrorCore

/// Why a ``DiskCache`` operation failed.
///
/// Lookups never throw: a missing, corrupt or mismatched entry is a miss. Only writes and
/// ``DiskCache/materialize(_:at:)`` throw these.
public enum DiskCacheError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The digest passed to ``DiskCache/store(fileAt:sha256:for:format:)`` is not 64 lowercase hex digits.
    case invalidDigest(String)
    /// ``DiskCache/materialize(_:at:)`` refused to replace a file that exists at the destination.
    case destinationExists(path: String)
    /// The cached object disappeared (swept or removed) between the lookup and its use.
    case objectMissing(sha256: String)
    /// A file-system call failed: the package's one ``FileError`` (what was being done, to which path, the `errno`).
    case fileSystem(FileError)

    public var description: String {
        switch self {
        case .invalidDigest(let digest):
            "not a SHA-256 hex digest: \"\(digest.prefix(80))\""
        case .destinationExists(let path):
            "will not replace the existing file \(path)"
        case .objectMissing(let sha256):
            "cached object \(sha256) is gone"
        case .fileSystem(let error):
            "the cache \(error)"
        }
    }
}
