import Foundation

/// One HTTP request for the multi driver: what to fetch, with which limits, and where the body goes.
///
/// Defaults suit image downloads: a 10 s connect timeout, no total time limit (big images on slow
/// links are fine as long as bytes keep coming), a stall floor of 1,000 bytes/s held for 20 s,
/// a 100 MiB body limit, at most 5 redirects, `http`/`https` only, TLS always verified.
public struct TransferRequest: Sendable {
    /// Where the body of the final response goes.
    public enum Destination: Sendable {
        /// Keep the body in memory (`HTTPResponse.body`), whatever the status.
        case memory
        /// Append the body to an open file descriptor, which the caller owns and closes.
        /// Only a 2xx body is written; any other status keeps its first 64 KiB in `HTTPResponse.body`.
        case file(descriptor: Int32)
        /// Hand each chunk of a 2xx body to a sink on the driver thread; other statuses as for `.file`.
        case sink(any TransferSink)
    }

    /// Stall detection: the transfer fails with `.stalled` when fewer than `minimumBytesPerSecond`
    /// arrive, averaged over `window`.
    public struct StallPolicy: Sendable, Hashable {
        /// The floor in bytes per second. Default 1,000.
        public var minimumBytesPerSecond: Int
        /// How long the rate may stay under the floor. Default 20 s.
        public var window: Duration

        public init(minimumBytesPerSecond: Int = 1_000, window: Duration = .seconds(20)) {
            self.minimumBytesPerSecond = minimumBytesPerSecond
            self.window = window
        }
    }

    // MARK: What

    /// The URL; only `http` and `https` are accepted.
    public var url: URL
    /// `GET` unless set; a non-nil `body` is sent as the request body.
    public var method: String = "GET"
    /// Extra request headers, in order.
    public var headers: [(String, String)] = []
    /// The request body for `POST`, if any.
    public var body: Data?
    /// The body's destination. Default `.memory`.
    public var destination: Destination = .memory
    /// A byte range of an open file sent as the body of a `PUT` (streamed, never held in memory), or `nil`.
    public var upload: FileRange?
    /// Signs the request with AWS Signature Version 4 (libcurl's `CURLOPT_AWS_SIGV4`), or `nil`.
    public var awsSignature: AWSSignature?

    // MARK: Limits

    /// The `User-Agent` header. Default `mirror/<version> libcurl/<version>`.
    public var userAgent: String = MirrorVersion.userAgent
    /// Time allowed to resolve and connect. Default 10 s.
    public var connectTimeout: Duration = .seconds(10)
    /// A limit on the whole transfer, or nil for none (the default; the stall policy guards progress).
    public var totalTimeout: Duration?
    /// Stall detection. Default 1,000 bytes/s over 20 s.
    public var stall: StallPolicy = StallPolicy()
    /// The largest body accepted, enforced by Content-Length and while streaming. Default 100 MiB.
    public var maximumBodyBytes: Int64 = 100 * 1024 * 1024
    /// Redirects followed at most. Default 5.
    public var maximumRedirects: Int = 5
    /// Where to connect instead, as curl's `--connect-to` takes it (`HOST:PORT:CONNECT-TO-HOST:CONNECT-TO-PORT`; an
    /// empty `HOST` or `PORT` matches any): the URL, its `Host` header and its host's limits stay as they are.
    public var connectTo: [String] = []
    /// A file of PEM certificates to trust instead of the system's (a private CA), or `nil` (the default) for the
    /// system's bundle. Verification of the peer and of its name is always on.
    public var trustedCertificates: String?
    /// Whether the transfer must open a connection of its own rather than reuse one kept alive (after a reused one
    /// answered with bytes that were not HTTP). Default false.
    public var freshConnection = false

    public init(url: URL, destination: Destination = .memory) {
        self.url = url
        self.destination = destination
    }
}

/// A byte range of an open file, read with `pread(2)` (the caller owns and closes the descriptor).
public struct FileRange: Sendable, Hashable {
    public var descriptor: Int32
    public var offset: Int64
    public var length: Int64

    public init(descriptor: Int32, offset: Int64, length: Int64) {
        self.descriptor = descriptor
        self.offset = offset
        self.length = length
    }
}

/// What libcurl needs to sign a request with AWS Signature Version 4. Its description never shows the secret.
///
/// libcurl 7.88 signs the method, path, query (as given: send it sorted and encoded), `host`, `x-amz-date` and the
/// headers set on the request; it does not hash the body, so the caller sets `x-amz-content-sha256` itself.
public struct AWSSignature: Sendable, Hashable, CustomStringConvertible {
    /// libcurl's provider string, `aws:amz:REGION:SERVICE`.
    public var provider: String
    public var accessKeyID: String
    public var secretAccessKey: String

    public init(region: String, service: String = "s3", accessKeyID: String, secretAccessKey: String) {
        provider = "aws:amz:\(region):\(service)"
        self.accessKeyID = accessKeyID
        self.secretAccessKey = secretAccessKey
    }

    public var description: String { "AWSSignature(\(provider), key \(accessKeyID), secret redacted)" }
}

/// Receives the body of a successful (2xx) response as it streams in.
///
/// - Important: `write(_:)` runs on the multi driver's thread, between other transfers' I/O: it must
///   be quick (hashing and a buffered `write(2)` are fine; fsync, validation and database work are not).
///   Throwing aborts the transfer with `TransportError.destinationFailed`.
public protocol TransferSink: AnyObject, Sendable {
    /// Consumes the next chunk of the body.
    func write(_ chunk: UnsafeRawBufferPointer) throws
}
