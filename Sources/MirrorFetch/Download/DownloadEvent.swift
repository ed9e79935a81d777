import Foundation
import MirrorCore
import MirrorImages
import MirrorStorage
import MirrorTransport

/// Progress of the download manager, handed to its `onEvent` callback.
public enum DownloadEvent: Sendable {
    /// Accepted and waiting for a slot.
    case queued(URL)
    /// An attempt began (1 for the first).
    case started(URL, attempt: Int)
    /// An attempt received this many body bytes.
    case bytes(URL, Int64)
    /// An attempt failed and another follows after `delay`.
    case retrying(URL, attempt: Int, delay: Duration, reason: String)
    /// A verified image is ready to be published.
    case verified(URL, ImageInfo, bytes: Int64, source: CacheType)
    /// The download ended without an image.
    case failed(URL, DownloadError)
}
