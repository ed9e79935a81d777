import Crypto
import Foundation
import MirrorCore
import MirrorImages
import MirrorTransport

/// Writes a body to a temporary file while hashing it, and stops early when the first bytes are
/// plainly not an image (an HTML error page served as `image/jpeg`), so no bandwidth is spent on it.
///
/// Bytes are hashed as they arrive and kept in memory (up to ``memoryLimit``) while whole, page-aligned blocks of
/// ``blockSize`` are written to the file as they fill. Why, measured with `perf record` on `mirror urls`:
/// - curl hands over chunks of any size, and a write that ends mid-page makes the kernel zero and patch that page
///   (7 % of all samples, writing to ext4), besides costing one `write(2)` per chunk;
/// - validating the finished file by mapping it back cost an `mmap` and a `munmap` per image, and the `munmap`'s
///   TLB shoot-down across cores (4 % of all samples); a body kept in memory is validated from there.
/// A body larger than ``memoryLimit`` is written out as it arrives (the buffer then only stages the next block) and
/// validated from the file.
///
/// Used only on the driver thread while the transfer runs, and by the completion that follows it (``finish()``);
/// the transfer's completion orders those accesses, which is what makes `@unchecked Sendable` true.
final class HashingFileSink: TransferSink, @unchecked Sendable {
    /// Bytes looked at before deciding that a body is not an image.
    static let sniffLength = 64
    /// The unit of writes to the file: a multiple of the page size.
    package static let blockSize = 64 * 1024
    /// The largest body kept whole in memory, at most. A manager with many transfers in flight
    /// keeps less per transfer (``memoryLimit(concurrency:)``).
    static let memoryLimit = 512 * 1024
    /// What all the transfers of one manager keep in memory at most, together. Measured (2,000 photos of 110 KB on
    /// average from nginx on loopback, tmpfs, 11 interleaved runs): 8 MiB instead of 2 took 0.264 to 0.249 ms of CPU
    /// per image at 16 at once (bodies no longer read back to be validated), the same at 64, for 5.5 to 6.5 MB more
    /// peak RSS; 16 MiB gained nothing more and cost 10 to 18 MB.
    static let memoryBudget = 8 * 1024 * 1024

    /// The in-memory limit per transfer for `concurrency` transfers: ``memoryBudget`` shared, between one block and
    /// ``memoryLimit`` (16 at once: 512 KiB each; 64: 128 KiB; 128 or more: one 64 KiB block), so that peak memory does
    /// not grow with the concurrency.
    static func memoryLimit(concurrency: Int) -> Int {
        let share = memoryBudget / max(1, concurrency)
        return min(memoryLimit, max(blockSize, share - share % blockSize))
    }

    private let descriptor: Int32
    private var hasher = SHA256()
    /// MD5 too, only when a row's digest asks for it (`--verify-hash` with `--hash md5`).
    private var md5: Insecure.MD5?
    private var head = Data()
    private var decided = false
    /// The buffer (`pool.size` bytes, taken with the first chunk); bytes `0..<count` are valid.
    private var buffer: UnsafeMutableRawPointer?
    private var count = 0
    /// Bytes at the start of the buffer already written to the file (a multiple of ``blockSize``).
    private var flushed = 0
    /// Whether the body outgrew ``memoryLimit`` (then the buffer holds only what is not written yet).
    private var streaming = false
    /// Bytes received.
    private(set) var written: Int64 = 0
    /// Set when the body was refused from its first bytes.
    private(set) var earlyRejection: ImageRejection?
    /// Set when writing the body to the temporary file failed (the disk is full, the file size limit, …).
    private(set) var writeError: FileError?

    /// Where the file is, for messages.
    private let folder: String

    /// Where buffers come from and go back to; its size is this sink's in-memory limit.
    private let pool: BufferPool

    init(descriptor: Int32, folder: String = "a folder", pool: BufferPool, hashesMD5: Bool = false) {
        self.pool = pool
        self.descriptor = descriptor
        self.folder = folder
        md5 = hashesMD5 ? Insecure.MD5() : nil
    }

    deinit {
        if let buffer { pool.give(buffer) }
    }

    package func write(_ chunk: UnsafeRawBufferPointer) throws {
        if !decided {
            head.append(contentsOf: chunk.prefix(Self.sniffLength - head.count))
            if head.count >= Self.sniffLength {
                decided = true
                if ImageValidator.sniff(head) == nil {
                    let rejection = Self.rejection(for: head)
                    earlyRejection = rejection
                    throw rejection
                }
            }
        }
        hasher.update(bufferPointer: chunk)
        md5?.update(bufferPointer: chunk)
        written += Int64(chunk.count)
        var rest = chunk
        while !rest.isEmpty {
            try makeRoom()
            let taken = min(rest.count, pool.size - count)
            (buffer! + count).copyMemory(from: rest.baseAddress!, byteCount: taken)
            count += taken
            rest = UnsafeRawBufferPointer(rebasing: rest[taken...])
            // Write every block that is complete.
            let complete = count - (count - flushed) % Self.blockSize
            if complete > flushed { try writeOut(flushed..<complete) }
        }
    }

    /// Writes what is still pending. Returns the whole body when it is all in memory (to validate it from there;
    /// valid while this sink lives), or nil when it outgrew ``memoryLimit`` and is only in the file.
    package func finish() throws(FileError) -> Data? {
        try writeOut(flushed..<count)
        guard !streaming else { return nil }
        guard let buffer, count > 0 else { return Data() }
        return Data(bytesNoCopy: buffer, count: count, deallocator: .none)
    }

    /// Ensures the buffer has room for at least one more byte: takes one at first; once it is full, the body is
    /// too large to keep whole, and the written part is dropped (streaming).
    private func makeRoom() throws(FileError) {
        guard let buffer else {
            self.buffer = pool.take()
            return
        }
        guard count == pool.size else { return }
        // Too large to keep whole: from now on the buffer only stages blocks. Everything complete is written.
        streaming = true
        let tail = count - flushed
        if tail > 0, flushed > 0 { memmove(buffer, buffer + flushed, tail) }
        count = tail
        flushed = 0
    }

    private func writeOut(_ range: Range<Int>) throws(FileError) {
        guard let buffer, !range.isEmpty else { return }
        do throws(FileError) {
            try AtomicFile.writeAll(UnsafeRawBufferPointer(start: buffer + range.lowerBound, count: range.count), to: descriptor, operation: "write an image into", path: folder)
        } catch {
            writeError = error
            throw error
        }
        flushed = range.upperBound
    }

    /// The SHA-256 of everything written, lowercase hex.
    package func digest() -> String {
        hasher.finalize().hexString
    }

    /// The MD5 of everything written, lowercase hex; nil unless the sink was made to hash it.
    package func md5Digest() -> String? {
        md5?.finalize().hexString
    }

    private static func rejection(for head: Data) -> ImageRejection {
        do {
            _ = try ImageValidator().validate(head)
            return .unknownFormat(prefix: "")
        } catch {
            return error
        }
    }
}

/// Fixed-size byte buffers, reused from one transfer to the next: a fresh buffer cost page faults and zeroed pages
/// for every image (measured: 5 % of all samples), a reused one nothing. One pool per download manager, sized by
/// ``HashingFileSink/memoryLimit(concurrency:)``. Thread-safe.
final class BufferPool: Sendable {
    /// Buffers kept for reuse at most; more are freed when given back.
    package static let limit = 64
    /// Each buffer's size in bytes.
    package let size: Int
    private let pool: ReusePool<UnsafeMutableRawPointer>

    init(size: Int) {
        self.size = size
        pool = ReusePool(limit: Self.limit, make: { .allocate(byteCount: size, alignment: 64) }, discard: { $0.deallocate() })
    }

    /// A buffer of ``size`` bytes (its contents undefined).
    package func take() -> UnsafeMutableRawPointer {
        pool.take()!  // `make` cannot fail: `allocate` traps rather than return nothing.
    }

    /// Returns a buffer from ``take()``.
    package func give(_ pointer: UnsafeMutableRawPointer) {
        pool.give(pointer)
    }
}
