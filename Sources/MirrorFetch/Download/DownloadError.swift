import Foundation
import MirrorCore
import MirrorImages
import MirrorModel
import MirrorTransport

/// Why an image was not downloaded. Each case carries what a person needs to see.
public enum DownloadError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The network failed, after any retries.
    case transport(TransportError)
    /// The server answered with a status other than 2xx, after any retries.
    case statusUnacceptable(Int)
    /// The bytes are not a valid image.
    case rejected(ImageRejection)
    /// A valid image that the filters turned away (too small, unwanted format).
    case filtered(String)
    /// The output folder could not be written.
    case filesystem(FileError)
    /// Its owner reserved it against the run's purpose: a site file, a response header or the image's own marks (the
    /// reservation, with its evidence).
    case optedOut(Reservation)
    /// Its host's robots.txt does not let mirror fetch it (the reservation, with the rule or why the file is missing).
    case disallowed(Reservation)
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
        case let .filtered(reason): "filtered: \(reason)"
        case let .filesystem(error): error.description
        case let .optedOut(reservation): "opted out: \(reservation.message)"
        case let .disallowed(reservation): reservation.message
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
        case let .transport(error):
            switch error {
            case .dnsFailure: "dns"
            case .connectFailed: "connect"
            case .timedOut: "timeout"
            case .stalled: "stalled"
            case .tooLarge: "too-large"
            case .tooManyRedirects: "redirects"
            case .disallowedProtocol: "protocol"
            case .tls: "tls"
            case .truncated: "truncated"
            case .connectionLost: "connection-lost"
            case .badResponse: "bad-response"
            case .limitExceeded: "too-long"
            case .destinationFailed: "write"
            case .cancelled: "cancelled"
            case .other: "network"
            }
        case let .statusUnacceptable(status): "http-\(status)"
        case let .rejected(rejection): rejection.reasonKey
        case .filtered: RowOutcome.Status.filtered.rawValue
        case .filesystem: "filesystem"
        case .optedOut: RowOutcome.Status.optedOut.rawValue
        case .disallowed: RowOutcome.Status.disallowed.rawValue
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
        case .rejected, .filtered, .optedOut, .disallowed, .transformFailed, .hashMismatch: false
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
