import Foundation
import MirrorImages
import MirrorTransport

/// What every download operation of one manager shares: the driver, the request template, the
/// validator, the cache and the event stream.
struct DownloadContext: Sendable {
    let loader: any HTTPLoading
    let transferTemplate: TransferRequest
    let validator: ImageValidator
    let cache: ImageCache?
    /// The download queue's own threads (its `underlyingQueue`): where a transfer's completion is verified, off the
    /// driver thread.
    let threads: DispatchQueue
    /// Body buffers, reused from one transfer to the next (see ``HashingFileSink``).
    let buffers: BufferPool
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

    func storeInCache(_ image: VerifiedImage) {
        guard let cache else { return }
        try? cache.store(fileAt: image.temporaryFile, sha256: image.sha256, for: CacheKey(url: image.url))
    }
}
