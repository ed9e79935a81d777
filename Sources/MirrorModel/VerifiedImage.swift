import Foundation
import MirrorImages

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
    /// The width as downloaded, when the file was resized or re-encoded since (``ImageTransform``); else `nil`.
    public var originalWidth: Int? = nil
    /// The height as downloaded, when the file was resized or re-encoded since; else `nil`.
    public var originalHeight: Int? = nil
    /// The format as downloaded, when the file was re-encoded since; else `nil`.
    public var originalFormat: ImageFormat? = nil
    /// The size in bytes as downloaded, when the file was resized or re-encoded since; else `nil`.
    public var originalBytes: Int64? = nil
    /// The SHA-256 of the bytes as downloaded, when the file was resized or re-encoded since; else `nil`.
    public var originalSHA256: String? = nil
    /// What the image looks like, as PDQ hashes of the download (`--dedup near`): the whole image's and its trimmed
    /// centres'; `nil` when not asked for, or when the image could not be hashed (then it is never taken for a
    /// near-duplicate).
    public var pictureHashes: PictureHashes? = nil
    /// What the image declares of how it was made, and the reservations read for it that the run set aside.
    public var declarations = ImageDeclarations()
    /// How many of its row's boxes were blurred (`--blur-col`: 0 when the row gave none); nil when the run blurs none.
    public var blurredBoxes: Int? = nil

    /// A verified image as a download leaves it (the originals are set when a transform replaces the bytes).
    package init(
        url: URL, effectiveURL: URL, temporaryFile: URL, info: ImageInfo, bytes: Int64, sha256: String, source: CacheType,
        attempts: Int, fetchedAt: Date
    ) {
        self.url = url
        self.effectiveURL = effectiveURL
        self.temporaryFile = temporaryFile
        self.info = info
        self.bytes = bytes
        self.sha256 = sha256
        self.source = source
        self.attempts = attempts
        self.fetchedAt = fetchedAt
    }

    /// What duplicates are judged by: the bytes as downloaded (two different downloads that resize to the same
    /// pixels are still two images).
    public var downloadDigest: String { originalSHA256 ?? sha256 }
}
