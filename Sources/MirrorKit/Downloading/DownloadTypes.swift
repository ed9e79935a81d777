import Foundation
import MirrorImages
import MirrorTransport

/// One image to download into a folder.
public struct DownloadRequest: Sendable {
    /// The image URL (`http` or `https`).
    public var url: URL
    /// The folder the image will be saved in; the temporary file is made there so the final rename is atomic.
    public var directory: URL
    /// Which valid images to keep; nil keeps every valid image.
    public var filter: ImageFilter?

    public init(url: URL, directory: URL, filter: ImageFilter? = nil) {
        self.url = url
        self.directory = directory
        self.filter = filter
    }
}

/// Which valid images are wanted: minimum dimensions and formats.
public struct ImageFilter: Sendable, Hashable {
    /// Narrower images are filtered out. Default 0.
    public var minimumWidth: Int = 0
    /// Shorter images are filtered out. Default 0.
    public var minimumHeight: Int = 0
    /// Wanted formats; nil wants all.
    public var formats: Set<ImageFormat>?

    public init(minimumWidth: Int = 0, minimumHeight: Int = 0, formats: Set<ImageFormat>? = nil) {
        self.minimumWidth = minimumWidth
        self.minimumHeight = minimumHeight
        self.formats = formats
    }

    /// Why an image is unwanted, or nil if it is wanted.
    public func rejection(for info: ImageInfo) -> String? {
        if let formats, !formats.contains(info.format) {
            return "\(info.format.rawValue) is not among the wanted formats"
        }
        if info.width < minimumWidth || info.height < minimumHeight {
            return "\(info.width)×\(info.height) is smaller than \(minimumWidth)×\(minimumHeight)"
        }
        return nil
    }
}

/// A downloaded, verified image in a temporary file inside its destination folder, waiting to be
/// published under its final name (or discarded) by whoever asked for it.
public struct VerifiedImage: Sendable, Equatable {
    /// The URL that was asked for.
    public var url: URL
    /// The URL the bytes came from, after redirects.
    public var effectiveURL: URL
    /// The temporary file holding the bytes; the caller publishes or removes it.
    public var temporaryFile: URL
    /// Format and dimensions, from the bytes.
    public var info: ImageInfo
    /// Size in bytes.
    public var bytes: Int64
    /// SHA-256 of the bytes, lowercase hex.
    public var sha256: String
    /// Which cache the bytes came from, or ``CacheType/none`` for the network.
    public var source: CacheType
    /// Attempts it took (1 when the first one worked; 0 from a cache).
    public var attempts: Int
    /// When the bytes were fetched.
    public var fetchedAt: Date
}

/// What a download ended in.
public typealias DownloadResult = Result<VerifiedImage, DownloadError>

/// Progress of the download manager, as an `AsyncStream` of these.
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
