import CArchive
import Foundation
import MirrorCore

/// Reads the regular files of a tar through libarchive, one after another (a shard written by ``TarWriter``).
///
/// ```swift
/// try TarReader.forEachFile(in: shard) { name, contents in … }
/// ```
package enum TarReader {
    /// Calls `body` with each regular file's name and bytes, in the archive's order; `body` returns false to stop.
    /// - Throws: ``FileError`` when the file cannot be opened or is not a readable tar.
    package static func forEachFile(in url: URL, _ body: (String, Data) throws -> Bool) throws {
        try forEachFile(in: url) { name, contents, _ in try body(name, contents) }
    }

    /// Calls `body` with each regular file's name, bytes and modification time, in the archive's order; `body` returns
    /// false to stop.
    /// - Throws: ``FileError`` when the file cannot be opened or is not a readable tar; what `body` throws.
    package static func forEachFile(in url: URL, _ body: (String, Data, Date) throws -> Bool) throws {
        guard let archive = archive_read_new() else { throw FileError(operation: "read", path: url.path, code: ENOMEM) }
        defer { archive_read_free(archive) }
        archive_read_support_format_tar(archive)
        guard archive_read_open_filename(archive, url.path, 1 << 16) == ARCHIVE_OK else {
            throw FileError(operation: "read", path: url.path, code: max(archive_errno(archive), EIO))
        }
        var entry: OpaquePointer?
        while true {
            let status = archive_read_next_header(archive, &entry)
            if status == ARCHIVE_EOF { return }
            guard status == ARCHIVE_OK || status == ARCHIVE_WARN, let entry else {
                throw FileError(operation: "read", path: url.path, code: max(archive_errno(archive), EIO))
            }
            guard archive_entry_filetype(entry) == 0o100000, let name = archive_entry_pathname(entry) else { continue }
            let size = Int(max(0, archive_entry_size(entry)))
            var contents = Data(count: size)
            let read = contents.withUnsafeMutableBytes { archive_read_data(archive, $0.baseAddress, size) }
            guard read == size else { throw FileError(operation: "read", path: url.path, code: EIO) }
            let modified = Date(timeIntervalSince1970: TimeInterval(archive_entry_mtime(entry)))
            guard try body(String(cString: name), contents, modified) else { return }
        }
    }
}
