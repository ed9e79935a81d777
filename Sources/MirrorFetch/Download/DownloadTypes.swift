import Foundation
import MirrorCore
import MirrorImages
import MirrorStorage
import MirrorTransport

/// One image to download into a folder.
public struct DownloadRequest: Sendable {
    /// The image URL (`http` or `https`).
    public var url: URL
    /// The folder the image will be saved in; the temporary file is made there so the final rename is atomic.
    public var directory: URL
    /// Which valid images to keep; nil keeps every valid image.
    public var filter: ImageFilter?
    /// What the image's owner may have reserved it against, and what the run collects it for: the site's files,
    /// the response's headers and the image's own marks are read as evidence and this policy decides; nil reads none.
    public var consent: ConsentPolicy?
    /// The origins' site files (robots.txt, the TDMRep file), asked on the download's own slot before its transfer (so
    /// the fetches count within `--concurrency` and `--per-host`, and the image follows on the connection they came
    /// over); nil asks none.
    public var site: SiteGate?
    /// What a verified image goes through before its download ends, on the download's slot (so that decoding and
    /// encoding count within `--concurrency`); nil for nothing.
    package var transform: DownloadTransform?
    /// Hashes what a verified image looks like (`--dedup near`), on the download's slot and before any transform (the
    /// picture as served is what near-duplicates are judged by); nil for no hash.
    package var hasher: PerceptualHasher?

    public init(url: URL, directory: URL, filter: ImageFilter? = nil, consent: ConsentPolicy? = nil, site: SiteGate? = nil) {
        self.url = url
        self.directory = directory
        self.filter = filter
        self.consent = consent
        self.site = site
    }
}

/// A run's transform (`--resize`, `--encode`) with what bounds its decoding: the memory the transforms at once share,
/// and the journal that remembers a decoder's crash.
package struct DownloadTransform: Sendable {
    package var transform: ImageTransform
    package var budget: DecodeBudget?
    package var journal: DecodeJournal?

    package init(_ transform: ImageTransform, budget: DecodeBudget?, journal: DecodeJournal?) {
        self.transform = transform
        self.budget = budget
        self.journal = journal
    }

    /// The transformed image (in a new temporary file; the old one is gone either way), or why there is none.
    func apply(to image: VerifiedImage) -> Result<VerifiedImage, DownloadError> {
        do throws(ImageTransform.Failure) {
            return .success(try transform.apply(to: image, validator: ImageValidator(), budget: budget, journal: journal))
        } catch {
            return .failure(.transformFailed(error))
        }
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
    /// Images whose shorter side is under this are filtered out (`--min-image-size`). Default 0.
    public var minimumSide: Int = 0
    /// Images whose longer side over their shorter exceeds this are filtered out (`--max-aspect-ratio`); nil for any.
    public var maximumAspectRatio: Double?

    public init(minimumWidth: Int = 0, minimumHeight: Int = 0, formats: Set<ImageFormat>? = nil) {
        self.minimumWidth = minimumWidth
        self.minimumHeight = minimumHeight
        self.formats = formats
    }

    /// Why an image is unwanted, or nil if it is wanted.
    public func rejection(for info: ImageInfo) -> String? {
        rejection(format: info.format) ?? rejection(width: info.width, height: info.height)
    }

    /// Why what a source reports about an image (before any download) already makes it unwanted, or nil when the
    /// report says nothing against it (unknown values pass: the bytes decide).
    public func rejection(reportedWidth width: Int?, reportedHeight height: Int?, mimeType: String?) -> String? {
        if let width, let height, let reason = rejection(width: width, height: height) { return reason }
        return mimeType.flatMap(ImageFormat.init(mimeType:)).flatMap(rejection(format:))
    }

    private func rejection(format: ImageFormat) -> String? {
        guard let formats, !formats.contains(format) else { return nil }
        return "\(format.rawValue) is not among the wanted formats"
    }

    private func rejection(width: Int, height: Int) -> String? {
        if width < minimumWidth || height < minimumHeight {
            return "\(width)×\(height) is smaller than \(minimumWidth)×\(minimumHeight)"
        }
        if min(width, height) < minimumSide {
            return "\(width)×\(height) has a side under \(minimumSide)"
        }
        if let maximumAspectRatio, min(width, height) > 0,
           Double(max(width, height)) / Double(min(width, height)) > maximumAspectRatio {
            return "\(width)×\(height) is more elongated than \(maximumAspectRatio):1"
        }
        return nil
    }
}

extension ImageFormat {
    /// The format a MIME type names, if any (`image/jpeg` → `.jpeg`).
    package init?(mimeType: String) {
        let type = mimeType.lowercased().split(separator: ";").first.map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
        guard let format = ImageFormat.allCases.first(where: { $0.mimeType == type }) ?? (type == "image/jpg" ? .jpeg : nil) else {
            return nil
        }
        self = format
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
