import Foundation
import MirrorCore
import MirrorImages
import MirrorModel
import MirrorStorage
import MirrorTransport

/// What every download operation of one manager shares: the driver, the request template, the
/// validator, the cache and the event stream.
struct DownloadContext: Sendable {
    package let loader: any HTTPLoading
    let transferTemplate: TransferRequest
    package let validator: ImageValidator
    package let cache: ImageCache?
    /// The manager's download threads: where attempts start and a transfer's completion is verified, off the
    /// driver thread.
    package let threads: DispatchQueue
    /// Body buffers, reused from one transfer to the next (see ``HashingFileSink``).
    let buffers: BufferPool
    /// Buffers that bodies too large to keep in memory while they arrived are read back into, to be validated: as
    /// many as verifications ever ran at once (about one per core), each of ``readBackLimit`` bytes of which only
    /// what the largest body read touched is resident.
    let readBack = BufferPool(size: Self.readBackLimit)
    /// The largest body read back; larger ones are validated from a mapping.
    static let readBackLimit = 4 * 1024 * 1024
    /// The manager's `onRetry`, called synchronously where a retry is decided; nil for none.
    let onRetry: (@Sendable (DownloadRetry) -> Void)?
    /// The manager's clock.
    let sleeper: Sleeper
    /// Whether requests to a host are spaced (`--host-rate`): an attempt whose slot fetched its host's site files then
    /// gives the slot back and queues again behind the rate.
    let hasHostRate: Bool

    /// A verified copy from the disk cache, placed as a temporary file in the destination folder.
    /// (`siteSetAside`: the site's reservations the run set aside, for its record.)
    func cachedImage(for request: DownloadRequest, siteSetAside: [ConsentEvidence]) -> ImageDownloadOperation.Outcome? {
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
        if let expected = request.expectedDigest {
            let served = expected.algorithm == .md5 ? (try? md5Hex(fileAt: destination)) ?? "" : entry.sha256
            if !expected.matches(served) {
                AtomicFile.remove(destination)
                return .failed(.hashMismatch(expected: expected, served: served), next: .none)
            }
        }
        if let reason = request.filter?.rejection(for: info) {
            AtomicFile.remove(destination)
            return .keptOut(.filtered(reason))
        }
        // The image's own marks are read again (the cache keeps bytes, not what the response said).
        var declarations = ImageDeclarations()
        if let consent = request.consent {
            switch consent.judge(marks: info.marks, setAside: siteSetAside) {
            case let .keptOut(outcome):
                AtomicFile.remove(destination)
                return .keptOut(outcome)
            case let .kept(judged):
                declarations = judged
            }
        }
        var image = VerifiedImage(
            url: request.url, effectiveURL: request.url, temporaryFile: destination, info: info,
            bytes: entry.bytes, sha256: entry.sha256, source: .disk, attempts: 0, fetchedAt: Date()
        )
        image.declarations = declarations
        return .verified(image)
    }

    /// Validates the body in a temporary file (open for reading at `file.descriptor`, `count` bytes long): read back
    /// into a reused buffer, or mapped when it is larger than one. Measured (`perf record`, 5,000 images at 64 at once,
    /// tmpfs): mapping every file cost an `mmap`, page faults, and a `munmap` whose TLB shoot-down reached every core —
    /// 7 % of all samples, against 2 % for the copy.
    package func validate(_ file: AtomicFile.Temporary, count: Int64) throws -> ImageInfo {
        guard count > 0, count <= Self.readBackLimit else { return try validator.validate(fileAt: file.url) }
        let size = Int(count)
        let buffer = readBack.take()
        defer { readBack.give(buffer) }
        var done = 0
        while done < size {
            let got = pread(file.descriptor, buffer + done, size - done, off_t(done))
            if got < 0, errno == EINTR { continue }
            guard got > 0 else { throw FileError(operation: "read back", path: file.url.path, code: got < 0 ? errno : EIO) }
            done += got
        }
        return try validator.validate(bytes: UnsafeRawBufferPointer(start: buffer, count: size))
    }

    func storeInCache(_ image: VerifiedImage) {
        guard let cache else { return }
        try? cache.store(fileAt: image.temporaryFile, sha256: image.sha256, for: CacheKey(url: image.url))
    }
}

