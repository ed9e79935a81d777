import Foundation
import MirrorCore
import MirrorImages
import MirrorStorage
import MirrorTransport

/// What every download operation of one manager shares: the driver, the request template, the
/// validator, the cache and the event stream.
struct DownloadContext: Sendable {
    package let loader: any HTTPLoading
    let transferTemplate: TransferRequest
    package let validator: ImageValidator
    package let cache: ImageCache?
    /// The download queue's own threads (its `underlyingQueue`): where a transfer's completion is verified, off the
    /// driver thread.
    package let threads: DispatchQueue
    /// Body buffers, reused from one transfer to the next (see ``HashingFileSink``).
    let buffers: BufferPool
    /// Buffers that bodies too large to keep in memory while they arrived are read back into, to be validated.
    let readBack = ReadBackBuffers()
    /// The manager's observer, called synchronously on whichever thread the event happens; nil for none.
    let observer: (@Sendable (DownloadEvent) -> Void)?

    func emit(_ event: @autoclosure () -> DownloadEvent) {
        observer?(event())
    }

    /// A verified copy from the disk cache, placed as a temporary file in the destination folder.
    func cachedImage(for request: DownloadRequest) -> ImageDownloadOperation.Outcome? {
        guard let cache, let entry = cache.entry(for: CacheKey(url: request.url)).value else { return nil }
        let destination = request.directory.appendingPathComponent(
            AtomicFile.temporaryPrefix + "cache-" + UUID().uuidString.lowercased() + AtomicFile.temporarySuffix
        )
        do {
            try cache.materialize(entry, at: destination)
        } catch {
            return nil
        }
        // The cache holds only validated bodies, but a file on disk can change: check again.
        guard let info = try? validator.validate(fileAt: destination) else {
            AtomicFile.remove(destination)
            return nil
        }
        if let reason = request.filter?.rejection(for: info) {
            AtomicFile.remove(destination)
            return .failed(.filtered(reason), retryable: false, retryAfter: nil, throttled: false)
        }
        let image = VerifiedImage(
            url: request.url, effectiveURL: request.url, temporaryFile: destination, info: info,
            bytes: entry.bytes, sha256: entry.sha256, source: .disk, attempts: 0, fetchedAt: Date()
        )
        return .verified(image)
    }

    /// Validates the body in a temporary file (open for reading at `file.descriptor`, `count` bytes long): read back
    /// into a reused buffer, or mapped when it is larger than one. Measured (`perf record`, 5,000 images at 64 at once,
    /// tmpfs): mapping every file cost an `mmap`, page faults, and a `munmap` whose TLB shoot-down reached every core —
    /// 7 % of all samples, against 2 % for the copy.
    package func validate(_ file: AtomicFile.Temporary, count: Int64) throws -> ImageInfo {
        guard count > 0, count <= ReadBackBuffers.maximumSize else { return try validator.validate(fileAt: file.url) }
        let size = Int(count)
        let buffer = readBack.take(size)
        defer { readBack.give(buffer) }
        var done = 0
        while done < size {
            let got = pread(file.descriptor, buffer.pointer + done, size - done, off_t(done))
            if got < 0, errno == EINTR { continue }
            guard got > 0 else { throw FileError(operation: "read back", path: file.url.path, code: got < 0 ? errno : EIO) }
            done += got
        }
        return try validator.validate(bytes: UnsafeRawBufferPointer(start: buffer.pointer, count: size))
    }

    func storeInCache(_ image: VerifiedImage) {
        guard let cache else { return }
        try? cache.store(fileAt: image.temporaryFile, sha256: image.sha256, for: CacheKey(url: image.url))
    }
}

/// Growable byte buffers for reading bodies back, reused from one validation to the next (a fresh allocation of a few
/// hundred kilobytes is a fresh mapping: page faults and zeroed pages per image). A few are kept, each at most
/// ``maximumSize``; larger bodies are mapped instead. Thread-safe.
final class ReadBackBuffers: Sendable {
    /// The largest body read back; larger ones are validated from a mapping.
    static let maximumSize: Int64 = 4 * 1024 * 1024
    /// Buffers kept for reuse at most (verifications run on the download queue's threads, about one per core).
    package static let kept = 4

    struct Buffer: @unchecked Sendable {  // owned by one validation at a time, handed over under `free`'s lock
        package let pointer: UnsafeMutableRawPointer
        package let capacity: Int
    }

    private let free = Locked<[Buffer]>([])

    deinit {
        for buffer in free.withLock({ $0 }) { buffer.pointer.deallocate() }
    }

    /// A buffer of at least `size` bytes (contents undefined).
    package func take(_ size: Int) -> Buffer {
        let reused = free.withLock { free -> Buffer? in
            guard let index = free.firstIndex(where: { $0.capacity >= size }) ?? free.indices.last else { return nil }
            return free.remove(at: index)
        }
        if let reused, reused.capacity >= size { return reused }
        reused?.pointer.deallocate()
        // Round up to 256 KiB, so that a buffer grows a few times and then fits most bodies.
        let capacity = (size + 0x3FFFF) & ~0x3FFFF
        return Buffer(pointer: .allocate(byteCount: capacity, alignment: 64), capacity: capacity)
    }

    /// Returns a buffer from ``take(_:)``.
    package func give(_ buffer: Buffer) {
        let kept = free.withLock { free -> Bool in
            guard free.count < Self.kept else { return false }
            free.append(buffer)
            return true
        }
        if !kept { buffer.pointer.deallocate() }
    }
}
