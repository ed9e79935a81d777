import CCurl

/// A libcurl failure as libcurl describes it: its code, its generic text and its specific message.
public struct CurlError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The raw `CURLcode`.
    public let code: Int
    /// `curl_easy_strerror(code)`, such as "Couldn't connect to server".
    public let summary: String
    /// The transfer's error buffer, which is more specific ("Failed to connect to 127.0.0.1 port 1: Connection refused"); may be empty.
    public let message: String

    public init(code: Int, summary: String, message: String) {
        self.code = code
        self.summary = summary
        self.message = message
    }

    init(_ code: CURLcode, message: String) {
        self.init(code: Int(code.rawValue), summary: String(cString: curl_easy_strerror(code)), message: message)
    }

    public var description: String {
        message.isEmpty ? "\(summary) (curl \(code))" : "\(message) (curl \(code))"
    }
}

/// Why a transfer produced no response. Every transfer ends in exactly one response or one of these.
public enum TransportError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The host name could not be resolved.
    case dnsFailure(host: String, CurlError)
    /// No TCP connection could be made (refused, unreachable, or the connect timeout passed).
    case connectFailed(CurlError)
    /// The transfer's total time limit passed.
    case timedOut(CurlError)
    /// The body arrived slower than the stall floor for the whole stall window.
    case stalled(bytesPerSecond: Int, seconds: Double)
    /// The body is larger than the transfer's limit (by Content-Length, or counted while streaming).
    case tooLarge(limit: Int64)
    /// More redirects than allowed.
    case tooManyRedirects(limit: Int)
    /// The URL, or a redirect target, uses a scheme other than `http` or `https`.
    case disallowedProtocol(url: String)
    /// TLS failed: handshake, certificate or verification.
    case tls(CurlError)
    /// The body ended before its Content-Length, or the chunked encoding was cut off.
    case truncated(received: Int64, expected: Int64?)
    /// The connection broke mid-transfer (reset by the peer, or another receive or send failure).
    case connectionLost(CurlError)
    /// What came back was not an HTTP response (libcurl: HTTP/0.9, a weird server reply), over a connection kept
    /// alive from an earlier transfer (`reusedConnection`, most likely bytes an earlier response left past its length:
    /// the connection's fault, worth another try on a fresh one) or a new one (a server that does not speak HTTP).
    case badResponse(CurlError, reusedConnection: Bool)
    /// A length libcurl will not go past (what, and the limit): a URL over its request buffer, a response header line
    /// over its header limit. libcurl reports these as running out of memory; they are not, and trying again changes
    /// nothing.
    case limitExceeded(String)
    /// The destination refused the body (a write failed, for example the disk is full).
    case destinationFailed(String)
    /// The transfer was cancelled by its owner.
    case cancelled
    /// Anything else libcurl reported.
    case other(CurlError)

    public var description: String {
        switch self {
        case let .dnsFailure(host, _): "could not resolve host \(host)"
        case let .connectFailed(error): "could not connect: \(error.message.isEmpty ? error.summary : error.message)"
        case let .timedOut(error): "timed out: \(error.message.isEmpty ? error.summary : error.message)"
        case let .stalled(floor, seconds): "stalled: under \(floor) bytes/s for \(Self.format(seconds)) s"
        case let .tooLarge(limit): "larger than the limit of \(limit) bytes"
        case let .tooManyRedirects(limit): "more than \(limit) redirects"
        case let .disallowedProtocol(url): "refused a non-HTTP(S) URL: \(url)"
        case let .tls(error): "TLS failure: \(error.message.isEmpty ? error.summary : error.message)"
        case let .truncated(received, expected?): "truncated body: \(received) of \(expected) bytes"
        case let .truncated(received, nil): "truncated body after \(received) bytes"
        case let .connectionLost(error): "connection lost: \(error.message.isEmpty ? error.summary : error.message)"
        case let .badResponse(error, reused):
            "the answer was not HTTP\(reused ? " (on a connection kept alive from an earlier response)" : ""): "
                + (error.message.isEmpty ? error.summary : error.message)
        case let .limitExceeded(what): what
        case let .destinationFailed(reason): "could not write the body: \(reason)"
        case .cancelled: "cancelled"
        case let .other(error): error.description
        }
    }

    /// A short, stable key for counting failures by kind (`dns`, `timeout`, `tls`, …): what a row's `error` and the
    /// summaries' `failures` say.
    public var reasonKey: String {
        switch self {
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
    }

    /// Whether the attempt used up its time (`--timeout`, or the stall limit): trying again at once would spend as much,
    /// so the download manager files it transient for a later run (`--retry-failed`) instead of retrying it now.
    public var spentItsTime: Bool {
        switch self {
        case .timedOut, .stalled: true
        default: false
        }
    }

    /// Whether trying again later could succeed: network trouble yes, policy refusals no.
    public var isTransient: Bool {
        switch self {
        case .dnsFailure, .connectFailed, .timedOut, .stalled, .truncated, .connectionLost, .badResponse: true
        case .tooLarge, .tooManyRedirects, .disallowedProtocol, .tls, .limitExceeded, .destinationFailed, .cancelled, .other: false
        }
    }

    private static func format(_ seconds: Double) -> String {
        seconds == seconds.rounded() ? String(Int(seconds)) : String(format: "%.1f", seconds)
    }
}
