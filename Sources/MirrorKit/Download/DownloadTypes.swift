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

/// What a download ended in.
public typealias DownloadResult = Result<VerifiedImage, DownloadError>

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
