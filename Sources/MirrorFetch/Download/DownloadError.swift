import Foundation
import MirrorCore
import MirrorImages
import MirrorModel
import MirrorTransport

/// Why an image could not be had. Each case carries what a person needs to see. (A row kept out on purpose — filtered,
/// opted out, disallowed — is no error: ``DownloadResult/keptOut(_:)``.)
public enum DownloadError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The network failed, after any retries.
    case transport(TransportError)
    /// The server answered with a status other than 2xx, after any retries.
    case statusUnacceptable(Int)
    /// The bytes are not a valid image.
    case rejected(ImageRejection)
    /// The output folder could not be written.
    case filesystem(FileError)
    /// Its host's robots.txt could not be had (a 5xx, a redirect loop, a timeout, a failed connection): RFC 9309 says
    /// assume complete disallow for now, so it was not fetched. `reason` is its key (`robots-unavailable`, or the
    /// network failure's: `dns`, `tls`, …); `transient` says whether a later run asks again.
    case siteUnavailable(String, reason: String, transient: Bool)
    /// The image was verified, but the run's transform (`--resize`, `--encode`, `--blur-col`) could not make it.
    case transformFailed(ImageTransform.Failure)
    /// The served bytes do not hash to what the row says (`--verify-hash`): `served` is their digest, lowercase hex.
    case hashMismatch(expected: ExpectedDigest, served: String)
    /// Cancelled before it finished.
    case cancelled

    public var description: String {
        switch self {
        case let .transport(error): error.description
        case let .statusUnacceptable(status): "HTTP \(status)"
        case let .rejected(rejection): rejection.description
        case let .filesystem(error): error.description
        case let .siteUnavailable(message, _, _): message
        case let .transformFailed(failure): failure.description
        case let .hashMismatch(expected, served):
            expected.hex.count == expected.algorithm.hexLength && expected.hex.allSatisfy(\.isHexDigit)
                ? "the served bytes' \(expected.algorithm.rawValue) is \(served), not the row's \(expected.hex)"
                : "the row's \(expected.algorithm.rawValue) is not \(expected.algorithm.hexLength) hex digits (\(expected.hex.prefix(80))): no bytes match it"
        case .cancelled: "cancelled"
        }
    }

    /// A short, stable key for counting failures by kind in summaries ("http-404", "truncated", …).
    public var reasonKey: String {
        switch self {
        case let .transport(error): error.reasonKey
        case let .statusUnacceptable(status): "http-\(status)"
        case let .rejected(rejection): rejection.reasonKey
        case .filesystem: "filesystem"
        case let .siteUnavailable(_, reason, _): reason
        case let .transformFailed(failure): failure.reasonKey
        case .hashMismatch: "hash-mismatch"
        case .cancelled: "cancelled"
        }
    }

    /// Whether a later run may succeed where this one failed (the network, the server, the disk).
    public var isTransient: Bool {
        switch self {
        case let .transport(error): error.isTransient
        case let .statusUnacceptable(status): RetryPolicy.isRetryable(status: status)
        case .filesystem, .cancelled: true
        case let .siteUnavailable(_, _, transient): transient
        case .rejected, .transformFailed, .hashMismatch: false
        }
    }
}

extension ImageRejection {
    /// A short, stable key for summaries.
    package var reasonKey: String {
        switch self {
        case .empty: "empty"
        case .html: "not-image-html"
        case .text: "not-image-text"
        case .unknownFormat: "not-image"
        case .truncated: "truncated"
        case .malformed: "malformed"
        case .tooManyPixels: "too-many-pixels"
        }
    }
}
