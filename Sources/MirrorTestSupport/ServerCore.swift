import Foundation
import MirrorSync
import NIOCore

/// Everything the connection handlers and ``TestServer`` share: routes, latency, open channels and counters,
/// all in one ``Locked`` box.
///
/// Handlers hold the core, not the ``TestServer``, so a server nobody stopped can still be deinitialised
/// (its `deinit` stops it).
final class ServerCore: Sendable {
    typealias Handler = @Sendable (RecordedRequest) -> Response

    struct State: Sendable {
        var latency: Duration
        var isStopped = false
        var exactRoutes: [String: Response] = [:]
        var prefixRoutes: [(prefix: String, handler: Handler)] = []
        var channels: [Int: any Channel] = [:]
        var nextConnectionID = 1
        var connectionsAccepted = 0
        var inFlight = 0
        var maxInFlight = 0
        var inFlightByHost: [String: Int] = [:]
        var maxInFlightByHost: [String: Int] = [:]
        var requests: [RecordedRequest] = []
        var countsByPath: [String: Int] = [:]
        var bodyBytesSent = 0
    }

    let state: Locked<State>

    init(latency: Duration) {
        state = Locked(State(latency: latency))
    }

    // MARK: Connections

    /// Registers an accepted channel; returns its ID, or `nil` when the server is stopping (the caller closes it).
    func connectionOpened(_ channel: any Channel) -> Int? {
        state.withLock { state in
            guard !state.isStopped else { return nil }
            let id = state.nextConnectionID
            state.nextConnectionID += 1
            state.connectionsAccepted += 1
            state.channels[id] = channel
            return id
        }
    }

    func connectionClosed(_ id: Int) {
        state.withLock { _ = $0.channels.removeValue(forKey: id) }
    }

    // MARK: Requests

    /// A request head arrived: it is in progress until ``requestFinished(host:)``.
    func requestStarted(host: String) {
        state.withLock { state in
            state.inFlight += 1
            state.maxInFlight = max(state.maxInFlight, state.inFlight)
            let forHost = state.inFlightByHost[host, default: 0] + 1
            state.inFlightByHost[host] = forHost
            state.maxInFlightByHost[host] = max(state.maxInFlightByHost[host, default: 0], forHost)
        }
    }

    /// The response to a request was fully written, or its connection closed first.
    func requestFinished(host: String) {
        state.withLock { state in
            state.inFlight -= 1
            let forHost = state.inFlightByHost[host, default: 1] - 1
            state.inFlightByHost[host] = forHost == 0 ? nil : forHost
        }
    }

    /// Records a complete request (``TestServer/requests``, ``TestServer/requestCount(path:)``).
    func record(_ request: RecordedRequest) {
        state.withLock { state in
            state.requests.append(request)
            state.countsByPath[request.path, default: 0] += 1
        }
    }

    /// Picks the response to a recorded request and the total delay before its head.
    func respond(to request: RecordedRequest) -> (response: Response, delay: Duration) {
        let (exact, prefixHandler, latency) = state.withLock { state -> (Response?, Handler?, Duration) in
            let exact = state.exactRoutes[request.path]
            // The longest matching prefix wins; among equals, the latest registration.
            let prefix = state.prefixRoutes.enumerated()
                .filter { request.path.hasPrefix($0.element.prefix) }
                .max { ($0.element.prefix.count, $0.offset) < ($1.element.prefix.count, $1.offset) }
            return (exact, prefix?.element.handler, state.latency)
        }
        // User handlers run outside the lock, so they may read the server's counters.
        let response = exact ?? prefixHandler?(request) ?? BuiltinRoutes.response(for: request)
        return (response, latency + (response.latency ?? .zero))
    }

    func addBodyBytesSent(_ count: Int) {
        state.withLock { $0.bodyBytesSent += count }
    }

    /// The key ``TestServer/maxConcurrentRequests(host:)`` groups by: the host without its port, lowercased.
    static func hostKey(_ host: String) -> String {
        var host = Substring(host.lowercased())
        if host.hasPrefix("["), let close = host.firstIndex(of: "]") {
            host = host[...close]
        } else if let colon = host.lastIndex(of: ":") {
            host = host[..<colon]
        }
        return String(host)
    }
}

extension Duration {
    /// The duration as NIO's `TimeAmount` (nanosecond precision).
    var timeAmount: TimeAmount {
        let (seconds, attoseconds) = components
        return .nanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }
}
