import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix

/// An in-process HTTP/1.1 server on `127.0.0.1` and a random port, for every test of `mirror` that needs HTTP.
///
/// It runs SwiftNIO on one event-loop thread of its own, so the synchronous API below can be called from any
/// test (XCTest or Swift Testing, sync or async) without blocking the server. Connections are kept alive
/// unless the client sends `Connection: close` (or speaks HTTP/1.0 without keep-alive) or the body kind ends
/// by closing; pipelined requests are answered in order. All delays (``latency``, ``Response/latency``,
/// drips) are NIO scheduled tasks; no thread ever sleeps.
///
/// A request is answered by, in order: an exact ``route(_:_:)`` for its path (query ignored), the handler of
/// the longest matching ``route(prefix:_:)``, a built-in route (see ``BuiltinRoutes``), or `404`.
///
/// ```swift
/// let server = try TestServer.start()
/// defer { server.stop() }
/// server.route("/a.png", .ok(png, contentType: "image/png"))
/// // GET server.url("/a.png"), server.url("/bytes/1024"), server.url("/status/503?retry-after=2") …
/// #expect(server.connectionsAccepted == 1)
/// ```
///
/// - Important: Call ``stop()`` when done (`deinit` stops a forgotten server too). Counters are thread-safe
///   and reflect events as soon as the event loop has seen them; a client may see a response's last byte
///   a moment before the server counts it as finished, so poll briefly when asserting right after a response.
public final class TestServer: Sendable {
    /// The port the server listens on, on `127.0.0.1`.
    public let port: Int

    private let group: MultiThreadedEventLoopGroup
    private let serverChannel: any Channel
    let core: ServerCore

    private init(port: Int, group: MultiThreadedEventLoopGroup, serverChannel: any Channel, core: ServerCore) {
        self.port = port
        self.group = group
        self.serverChannel = serverChannel
        self.core = core
    }

    deinit {
        stop()
    }

    /// Starts a server on `127.0.0.1` and a port the kernel picks.
    /// - Parameter latency: Delay before every response head. Defaults to none.
    /// - Throws: When the socket cannot be bound.
    public static func start(latency: Duration = .zero) throws -> TestServer {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let core = ServerCore(latency: latency)
        do {
            let channel = try ServerBootstrap(group: group)
                .serverChannelOption(.backlog, value: 1024)
                .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
                .childChannelOption(.allowRemoteHalfClosure, value: true)
                .childChannelOption(.writeBufferWaterMark, value: .init(low: 256 * 1024, high: 1024 * 1024))
                .childChannelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        guard let id = core.connectionOpened(channel) else {
                            channel.close(promise: nil)
                            return
                        }
                        channel.closeFuture.whenComplete { _ in core.connectionClosed(id) }
                        let operations = channel.pipeline.syncOperations
                        try operations.addHandler(ByteToMessageHandler(HTTPRequestDecoder(leftOverBytesStrategy: .dropBytes)))
                        try operations.addHandler(HTTPConnectionHandler(core: core, connectionID: id))
                    }
                }
                .bind(host: "127.0.0.1", port: 0)
                .wait()
            guard let port = channel.localAddress?.port else {
                throw ChannelError.unknownLocalAddress
            }
            return TestServer(port: port, group: group, serverChannel: channel, core: core)
        } catch {
            try? group.syncShutdownGracefully()
            throw error
        }
    }

    /// Stops accepting, closes every open connection (stalled ones included) and shuts the event loop down.
    ///
    /// Idempotent. Blocks until done, except when called on the server's own event loop (from a route handler),
    /// where it only starts the shutdown.
    public func stop() {
        let channels: [any Channel]? = core.state.withLock { state in
            guard !state.isStopped else { return nil }
            state.isStopped = true
            return Array(state.channels.values)
        }
        guard let channels else { return }
        let closes = ([serverChannel] + channels).map { $0.close() }
        if MultiThreadedEventLoopGroup.currentEventLoop != nil {
            group.shutdownGracefully { _ in }
            return
        }
        // Closing an already closed channel fails its future; either way it is closed.
        _ = try? EventLoopFuture.whenAllComplete(closes, on: group.next()).wait()
        try? group.syncShutdownGracefully()
    }

    // MARK: URLs

    /// `http://127.0.0.1:<port>`.
    public var baseURL: URL {
        URL(string: "http://127.0.0.1:\(port)")!
    }

    /// The URL of `path` on this server; `path` may carry a query (`"/bytes/100?x=1"`). A missing leading `/` is added.
    public func url(_ path: String) -> URL {
        let path = path.hasPrefix("/") ? path : "/" + path
        guard let url = URL(string: "http://127.0.0.1:\(port)\(path)") else {
            preconditionFailure("not a valid URL path: \(path)")
        }
        return url
    }

    // MARK: Behaviour

    /// Delay before every response head, added to any ``Response/latency``. Takes effect for requests whose
    /// body completes after the change.
    public var latency: Duration {
        get { core.state.withLock { $0.latency } }
        set { core.state.withLock { $0.latency = newValue } }
    }

    /// Answers requests whose path (query ignored) is exactly `path` with `response`. Replaces an earlier
    /// route for the same path; takes precedence over prefix and built-in routes.
    public func route(_ path: String, _ response: Response) {
        core.state.withLock { $0.exactRoutes[path] = response }
    }

    /// Answers requests whose path starts with `prefix` with whatever `handler` returns.
    ///
    /// The longest matching prefix wins (among equal prefixes, the latest registration). `handler` runs on the
    /// server's event loop for every matching request: keep it quick and never block or call ``stop()`` from it.
    public func route(prefix: String, _ handler: @escaping @Sendable (RecordedRequest) -> Response) {
        core.state.withLock { $0.prefixRoutes.append((prefix, handler)) }
    }

    // MARK: Counters

    /// TCP connections accepted since start or the last ``resetCounters()``.
    public var connectionsAccepted: Int {
        core.state.withLock { $0.connectionsAccepted }
    }

    /// TCP connections open right now.
    public var openConnections: Int {
        core.state.withLock { $0.channels.count }
    }

    /// The most requests in progress at once since start or the last ``resetCounters()``. A request is in
    /// progress from the arrival of its head until its response is fully written or its connection closes.
    public var maxConcurrentRequests: Int {
        core.state.withLock { $0.maxInFlight }
    }

    /// ``maxConcurrentRequests`` counting only requests whose `Host` header names `host`. Hosts compare
    /// case-insensitively and without port, so `"a.test"` matches `Host: A.test:8080`.
    public func maxConcurrentRequests(host: String) -> Int {
        let key = ServerCore.hostKey(host)
        return core.state.withLock { $0.maxInFlightByHost[key, default: 0] }
    }

    /// Requests received for `path` (without query).
    public func requestCount(path: String) -> Int {
        core.state.withLock { $0.countsByPath[path, default: 0] }
    }

    /// Requests received, counted when their body is complete.
    public var totalRequests: Int {
        core.state.withLock { $0.requests.count }
    }

    /// Every request received, in arrival order.
    public var requests: [RecordedRequest] {
        core.state.withLock { $0.requests }
    }

    /// Response body bytes the socket accepted (framing excluded). Useful to prove that a client stopped
    /// reading, or that a large body is streamed with backpressure rather than buffered.
    public var bodyBytesSent: Int {
        core.state.withLock { $0.bodyBytesSent }
    }

    /// Zeroes the counters and forgets recorded requests. ``openConnections`` is a gauge and stays; the
    /// concurrency maxima restart from the requests in progress right now.
    public func resetCounters() {
        core.state.withLock { state in
            state.connectionsAccepted = 0
            state.maxInFlight = state.inFlight
            state.maxInFlightByHost = state.inFlightByHost
            state.requests = []
            state.countsByPath = [:]
            state.bodyBytesSent = 0
        }
    }
}
