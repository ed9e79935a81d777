import CArchive
import Foundation
import MirrorCore

/// Writes one tar file through libarchive, whole or not at all: into a temporary file beside its destination, synced,
/// then linked into place.
///
/// POSIX pax, restricted (plain ustar headers whenever they suffice, as GNU tar and Python's `tarfile` read); every
/// entry a regular file owned by 0:0 with mode 0644, so a shard's bytes depend only on its samples.
///
/// ```swift
/// let tar = try TarWriter(destination: directory.appendingPathComponent("00000.tar"))
/// try tar.add("000000000.jpg", contents: bytes, modified: date)
/// try tar.commit(sync: true)
/// ```
final class TarWriter {
    private var archive: OpaquePointer?
    private let temporary: AtomicFile.Temporary
    private let destination: URL
    private var closed = false

    /// Starts a tar file that will be `destination` once committed, written in `staging` (on the same file system;
    /// default: beside the destination).
    /// - Throws: ``FileError`` when the temporary file cannot be made.
    init(destination: URL, staging: URL? = nil) throws(FileError) {
        self.destination = destination
        temporary = try AtomicFile.makeTemporary(in: staging ?? destination.deletingLastPathComponent())
        archive = archive_write_new()
        archive_write_set_format_pax_restricted(archive)
        archive_write_set_bytes_in_last_block(archive, 1)  // no padding of the last block to 10 KiB
        guard archive_write_open_fd(archive, temporary.descriptor) == ARCHIVE_OK else {
            let error = failure("open")
            discard()
            throw error
        }
    }

    deinit {
        if !closed { discard() }
    }

    /// Appends a regular file.
    /// - Throws: ``FileError`` when libarchive cannot write it (the disk is full, say).
    package func add(_ name: String, contents: Data, modified: Date) throws(FileError) {
        let entry = archive_entry_new()
        defer { archive_entry_free(entry) }
        archive_entry_set_pathname_utf8(entry, name)
        archive_entry_set_size(entry, la_int64_t(contents.count))
        archive_entry_set_filetype(entry, 0o100000)  // AE_IFREG
        archive_entry_set_perm(entry, 0o644)
        archive_entry_set_mtime(entry, time_t(modified.timeIntervalSince1970), 0)
        guard archive_write_header(archive, entry) == ARCHIVE_OK else { throw failure("write") }
        let written = contents.withUnsafeBytes { bytes in
            bytes.isEmpty ? 0 : archive_write_data(archive, bytes.baseAddress, bytes.count)
        }
        guard written == contents.count else { throw failure("write") }
    }

    /// Ends the archive, syncs it when asked, and links it into place (or renames it over the file there, `replacing`).
    /// - Throws: ``FileError``; the temporary file is removed and the destination left as it was.
    package func commit(sync: Bool, replacing: Bool = false) throws(FileError) {
        guard archive_write_close(archive) == ARCHIVE_OK else {
            let error = failure("write")
            discard()
            throw error
        }
        archive_write_free(archive)
        archive = nil
        closed = true
        defer { close(temporary.descriptor) }
        do {
            if sync { try AtomicFile.sync(temporary.descriptor, path: temporary.url.path) }
            if replacing {
                try AtomicFile.replace(destination, with: temporary.url)
            } else {
                try AtomicFile.publish(temporary.url, as: destination)
            }
        } catch {
            AtomicFile.remove(temporary.url)
            throw error
        }
    }

    private func discard() {
        if let archive { archive_write_free(archive) }
        archive = nil
        closed = true
        close(temporary.descriptor)
        AtomicFile.remove(temporary.url)
    }

    private func failure(_ operation: String) -> FileError {
        let code = archive_errno(archive)
        return FileError(operation: operation, path: destination.path, code: code > 0 ? code : EIO)
    }
}
