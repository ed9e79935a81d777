import Foundation
import MirrorConsent
import MirrorModel

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
    /// What the served bytes must hash to (`--verify-hash`): a verified image that does not fails
    /// ``DownloadError/hashMismatch(expected:served:)``; nil checks nothing.
    public var expectedDigest: ExpectedDigest?
    /// Boxes to blur before the image is saved (`--blur-col`), as the ``transform`` runs (an image with boxes is decoded
    /// and encoded again even when the transform is otherwise none); nil when the source has no boxes to give.
    public var blurBoxes: BlurBoxes?

    public init(url: URL, directory: URL, filter: ImageFilter? = nil, consent: ConsentPolicy? = nil, site: SiteGate? = nil) {
        self.url = url
        self.directory = directory
        self.filter = filter
        self.consent = consent
        self.site = site
    }
}

/// What a download ended in: an image, a row kept out on purpose, or a failure.
public enum DownloadResult: Sendable {
    /// A verified image in a temporary file inside the request's folder: publish it (``AtomicFile``), or remove it.
    case verified(VerifiedImage)
    /// Not taken, on purpose: a filter turned it away, its owner reserved it, or robots.txt disallows it
    /// (``RowOutcome/filtered(_:)``, ``RowOutcome/optedOut(_:)``, ``RowOutcome/disallowed(_:)``).
    case keptOut(RowOutcome)
    /// It could not be had.
    case failed(DownloadError)
}
