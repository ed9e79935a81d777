import Foundation

/// What ``TestServer`` sends back for a request: a status, headers and a body that may misbehave on purpose.
///
/// The body kind owns the framing: the server adds `Content-Length` or `Transfer-Encoding: chunked` as the
/// kind requires and drops any `Content-Length` / `Transfer-Encoding` given in ``headers``. It adds
/// `Connection: close` whenever it is going to close the connection after the response (the client asked
/// for it, or the body kind ends by closing). A `Connection: close` in ``headers`` makes the server close
/// after the response too. Responses to `HEAD`, and with status 1xx, 204 or 304, carry no body.
///
/// ```swift
/// server.route("/cat.jpg", .ok(jpegData, contentType: "image/jpeg"))
/// server.route("/slow.jpg", Response(body: .drip(jpegData, chunkSize: 512, interval: .milliseconds(20))))
/// server.route("/flaky", .status(503, headers: [("Retry-After", "1")]))
/// ```
public struct Response: Sendable {
    /// The status code, written with its standard reason phrase.
    public var status: Int
    /// Extra headers, written in order before the framing headers.
    public var headers: [(String, String)]
    /// The body and how it is delivered.
    public var body: Body
    /// Extra delay before the response head, added to ``TestServer/latency``. `nil` means none.
    public var latency: Duration?
    /// A hold: the response waits until the gate is open (then any latency, then the head). `nil` means none.
    public var gate: Gate?

    /// How a body is delivered, including the ways it can go wrong.
    public enum Body: Sendable {
        /// The whole body at once, with `Content-Length`.
        case bytes(Data)
        /// `Content-Length: data.count`, then `chunkSize` (at least 1) bytes every `interval`; the first piece
        /// goes one `interval` after the head, so the body takes `ceil(count / chunkSize) * interval`.
        case drip(Data, chunkSize: Int, interval: Duration)
        /// `Content-Length: declaredLength`, then `prefix`, then nothing: the connection stays open until the
        /// client gives up (or the server stops).
        case stall(prefix: Data, declaredLength: Int)
        /// `Content-Length: declaredLength` (meant to exceed `data.count`), then `data`, then an orderly close (FIN).
        case truncated(Data, declaredLength: Int)
        /// `Transfer-Encoding: chunked`, `data` as one chunk (none when empty), then a close (FIN) without the
        /// terminating zero-length chunk.
        case truncatedChunked(Data)
        /// No `Content-Length`, no chunking, `Connection: close`: the body ends when the server closes. A complete,
        /// valid HTTP/1.1 body.
        case untilClose(Data)
        /// `Content-Length: declaredLength`, then `prefix`, then an abortive close: `SO_LINGER {1, 0}` and
        /// `close`, so the client sees a TCP RST (`ECONNRESET`).
        case reset(prefix: Data, declaredLength: Int)
        /// `Content-Length: data.count`, then `data`, then `excess` — bytes past the declared length — on a connection
        /// kept alive, so that what the client asks next on it is answered by them first (a server bug that poisons a
        /// reused connection). `sent` says when the excess goes: with the body, or held until the client's next
        /// request on the connection has arrived and written just before its answer — so the client has taken the
        /// response as complete and reused the connection, whatever the machine's speed (a delay in time was a race:
        /// a client slower than the delay found the excess on the idle connection and opened another).
        case overlong(Data, excess: Data, sent: ExcessTiming)
        /// `size` bytes of ``DeterministicBytes`` streamed in 64 KiB chunks as fast as the client reads them
        /// (with backpressure; never held in memory, so many gigabytes are fine). With
        /// `includeContentLength == false` the body is sent chunked.
        case generated(size: Int, includeContentLength: Bool)
    }

    /// When an ``Body/overlong(_:excess:sent:)`` body's excess is written.
    public enum ExcessTiming: Sendable {
        /// In the same write as the body.
        case withTheBody
        /// Just before the answer to the next request on the connection (after it arrived).
        case beforeTheNextAnswer
    }

    /// Creates a response.
    /// - Parameters:
    ///   - status: The status code. Defaults to 200.
    ///   - headers: Extra headers. Defaults to none.
    ///   - body: The body. Defaults to an empty ``Body/bytes(_:)``.
    ///   - latency: Extra delay before the head. Defaults to none.
    public init(status: Int = 200, headers: [(String, String)] = [], body: Body = .bytes(Data()), latency: Duration? = nil) {
        self.status = status
        self.headers = headers
        self.body = body
        self.latency = latency
    }

    /// This response, held until `gate` opens (``Gate``).
    public func held(by gate: Gate) -> Response {
        var response = self
        response.gate = gate
        return response
    }

    /// `200 OK` with `data` and a `Content-Type`.
    public static func ok(_ data: Data, contentType: String = "application/octet-stream") -> Response {
        Response(status: 200, headers: [("Content-Type", contentType)], body: .bytes(data))
    }

    /// Any status with optional headers and a small body.
    public static func status(_ code: Int, headers: [(String, String)] = [], body: Data = Data()) -> Response {
        Response(status: code, headers: headers, body: .bytes(body))
    }

    /// A redirect to `location` (absolute, relative or any scheme; sent verbatim) with an empty body.
    public static func redirect(to location: String, status: Int = 302) -> Response {
        Response(status: status, headers: [("Location", location)], body: .bytes(Data()))
    }
}
