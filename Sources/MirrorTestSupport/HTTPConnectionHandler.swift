import Foundation
import NIOCore
import NIOHTTP1

/// Serves one TCP connection: collects requests from `HTTPRequestDecoder`, answers them one at a time in
/// arrival order, and writes every response byte itself so that each ``Response/Body`` fault is exact.
///
/// Lives on the connection's event loop and is never shared, so its state needs no lock; the shared counters
/// live in ``ServerCore``. Every asynchronous continuation (latency timer, drip timer, write completion)
/// carries the ID of the exchange it belongs to and does nothing once that exchange is over or the channel
/// is gone.
final class HTTPConnectionHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = ByteBuffer

    /// A request whose head arrived and whose body is still coming.
    private struct Incoming {
        var head: HTTPRequestHead
        var body: ByteBuffer
        var arrivedAt: ContinuousClock.Instant
    }

    /// A complete request waiting for its turn (pipelining).
    private struct Queued: Sendable {
        var request: RecordedRequest
        var isKeepAlive: Bool
        var isHTTP10: Bool
    }

    /// How a response ends once its last byte is written.
    private enum Ending {
        case keepAlive, close, reset
    }

    /// The response being written.
    private struct Exchange {
        var id: Int
        var ending: Ending = .keepAlive
        var generator: Generator?
        /// A ``Response/Body/stall(prefix:declaredLength:)`` that will never finish by itself.
        var isStalled = false
        /// A response waiting at its ``Gate``.
        var isHeld = false
    }

    /// An ``Response/Body/overlong(_:excess:sent:)`` body's excess held for the next request on this connection.
    private var heldExcess: Data?

    /// Progress of a ``Response/Body/generated(size:includeContentLength:)`` body.
    private struct Generator {
        var offset = 0
        var size: Int
        var isChunked: Bool
    }

    private enum Framing {
        case length(Int), chunked, none
    }

    private let core: ServerCore
    private let connectionID: Int
    private var context: ChannelHandlerContext?
    private var incoming: Incoming?
    private var queue: [Queued] = []
    private var exchange: Exchange?
    private var lastExchangeID = 0
    /// Hosts of the requests in progress on this connection, oldest first; each is reported finished exactly once.
    private var hostsInProgress: [String] = []
    private var timer: Scheduled<Void>?
    private var isActive = true
    private var isInputClosed = false
    private var isPumpScheduled = false

    init(core: ServerCore, connectionID: Int) {
        self.core = core
        self.connectionID = connectionID
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
    }

    // MARK: Inbound

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            let host = ServerCore.hostKey(head.headers.first(name: "host") ?? "")
            hostsInProgress.append(host)
            core.requestStarted(host: host)
            incoming = Incoming(head: head, body: context.channel.allocator.buffer(capacity: 0), arrivedAt: .now)
            let expectsContinue = head.headers[canonicalForm: "expect"].contains { $0.lowercased() == "100-continue" }
            if expectsContinue, exchange == nil, queue.isEmpty {
                // Spares clients such as curl the wait before they send a large body.
                context.writeAndFlush(wrapOutboundOut(ByteBuffer(string: "HTTP/1.1 100 Continue\r\n\r\n")), promise: nil)
            }
        case .body(var chunk):
            incoming?.body.writeBuffer(&chunk)
        case .end:
            guard let complete = incoming else { return }
            incoming = nil
            let head = complete.head
            let (path, query) = RecordedRequest.split(uri: head.uri)
            let request = RecordedRequest(
                method: head.method.rawValue,
                path: path,
                query: query,
                rawURI: head.uri,
                headers: head.headers.map { ($0.name, $0.value) },
                body: Data(complete.body.readableBytesView),
                arrivedAt: complete.arrivedAt,
                connectionID: connectionID
            )
            core.record(request)
            queue.append(Queued(request: request, isKeepAlive: head.isKeepAlive, isHTTP10: head.version == .http1_0))
            serveNext()
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? ChannelEvent, event == .inputClosed {
            // The client half-closed: answer what already arrived, then close. A stall would never end, and a held
            // response waits for the test: a client that closes meanwhile (a killed process) has given up, so that
            // connection ends now.
            isInputClosed = true
            if (exchange == nil && queue.isEmpty) || exchange?.isStalled == true || exchange?.isHeld == true {
                context.close(promise: nil)
            }
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable, exchange?.generator != nil, !isPumpScheduled {
            // Pump on the next loop iteration rather than inside the flush that made us writable: no reentrancy,
            // and other connections on this loop get their turn between batches.
            isPumpScheduled = true
            context.eventLoop.assumeIsolated().execute { [self] in
                isPumpScheduled = false
                pump()
            }
        }
        context.fireChannelWritabilityChanged()
    }

    func channelInactive(context: ChannelHandlerContext) {
        isActive = false
        timer?.cancel()
        timer = nil
        exchange = nil
        queue = []
        incoming = nil
        // Requests cut off by the close are over too.
        for host in hostsInProgress {
            core.requestFinished(host: host)
        }
        hostsInProgress = []
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if error is HTTPParserError, isActive, exchange == nil {
            let badRequest = "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            let written = context.eventLoop.makePromise(of: Void.self)
            context.writeAndFlush(wrapOutboundOut(ByteBuffer(string: badRequest)), promise: written)
            written.futureResult.assumeIsolated().whenComplete { _ in
                context.close(promise: nil)
            }
        } else {
            context.close(promise: nil)
        }
    }

    // MARK: Exchanges

    /// Starts answering the oldest queued request, unless a response is in progress.
    private func serveNext() {
        guard isActive, let context, exchange == nil else { return }
        guard !queue.isEmpty else {
            if isInputClosed { context.close(promise: nil) }
            return
        }
        let next = queue.removeFirst()
        if let excess = heldExcess {
            // The poison an earlier overlong response left: read by the client as the start of this answer.
            heldExcess = nil
            context.writeAndFlush(wrapOutboundOut(ByteBuffer(bytes: excess)), promise: nil)
        }
        let (response, delay) = core.respond(to: next.request)
        lastExchangeID += 1
        let id = lastExchangeID
        exchange = Exchange(id: id)
        if let gate = response.gate {
            // Held: the gate calls back (now, or from the thread that opens it) and the rest happens on this loop —
            // unless the server stopped meanwhile (checked under the lock `stop()` takes first, so the loop is not yet
            // shutting down when the task goes onto it).
            exchange?.isHeld = true
            let loop = context.eventLoop
            let handler = NIOLoopBound(self, eventLoop: loop)
            gate.admit { [core] in
                core.state.withLock { state in
                    guard !state.isStopped else { return }
                    loop.execute { handler.value.start(response, to: next, exchangeID: id, after: delay) }
                }
            }
            return
        }
        start(response, to: next, exchangeID: id, after: delay)
    }

    /// Sends `response` after `delay`, unless its exchange is over by then (the connection closed).
    private func start(_ response: Response, to next: Queued, exchangeID id: Int, after delay: Duration) {
        guard isActive, let context, exchange?.id == id else { return }
        exchange?.isHeld = false
        if delay > .zero {
            timer = context.eventLoop.assumeIsolated().scheduleTask(in: delay.timeAmount) { [self] in
                timer = nil
                send(response, to: next, exchangeID: id)
            }
        } else {
            send(response, to: next, exchangeID: id)
        }
    }

    /// Writes the head and starts the body of `response`.
    private func send(_ response: Response, to queued: Queued, exchangeID id: Int) {
        guard isActive, exchange?.id == id else { return }
        let request = queued.request
        let clientWantsClose = !queued.isKeepAlive
        let routeWantsClose = response.headers.contains {
            $0.0.lowercased() == "connection" && $0.1.lowercased().contains("close")
        }

        var framing: Framing
        var bodyEnding: Ending = .keepAlive
        switch response.body {
        case .bytes(let data): framing = .length(data.count)
        case .overlong(let data, _, _): framing = .length(data.count)
        case .drip(let data, _, _): framing = .length(data.count)
        case .stall(_, let declaredLength): framing = .length(declaredLength)
        case .truncated(_, let declaredLength): framing = .length(declaredLength); bodyEnding = .close
        case .truncatedChunked: framing = .chunked; bodyEnding = .close
        case .untilClose: framing = .none; bodyEnding = .close
        case .reset(_, let declaredLength): framing = .length(declaredLength); bodyEnding = .reset
        case .generated(let size, let includeContentLength): framing = includeContentLength ? .length(size) : .chunked
        }
        let status = response.status
        let hasNoBody = (100..<200).contains(status) || status == 204 || status == 304
        if hasNoBody { framing = .none }
        let isHeadRequest = request.method == "HEAD"

        var ending: Ending = (clientWantsClose || routeWantsClose) ? .close : .keepAlive
        if bodyEnding != .keepAlive, !hasNoBody, !isHeadRequest {
            ending = bodyEnding
        } else if bodyEnding == .close, isHeadRequest {
            ending = .close
        }

        var head = "HTTP/1.1 \(status) \(HTTPResponseStatus(statusCode: status).reasonPhrase)\r\n"
        for (name, value) in response.headers {
            let lowered = name.lowercased()
            if lowered == "content-length" || lowered == "transfer-encoding" { continue }
            head += "\(name): \(value)\r\n"
        }
        switch framing {
        case .length(let length): head += "Content-Length: \(length)\r\n"
        case .chunked: head += "Transfer-Encoding: chunked\r\n"
        case .none: break
        }
        if ending != .keepAlive, !routeWantsClose {
            head += "Connection: close\r\n"
        } else if ending == .keepAlive, queued.isHTTP10 {
            head += "Connection: keep-alive\r\n"
        }
        head += "\r\n"
        var buffer = ByteBuffer(string: head)
        exchange?.ending = ending

        if hasNoBody || isHeadRequest {
            write(buffer, bodyBytes: 0) { [self] in finish(id) }
            return
        }

        switch response.body {
        case .bytes(let data), .truncated(let data, _), .untilClose(let data):
            buffer.writeBytes(data)
            write(buffer, bodyBytes: data.count) { [self] in finish(id) }
        case .overlong(let data, let excess, .withTheBody):
            buffer.writeBytes(data)
            buffer.writeBytes(excess)
            write(buffer, bodyBytes: data.count) { [self] in finish(id) }
        case .overlong(let data, let excess, .beforeTheNextAnswer):
            buffer.writeBytes(data)
            heldExcess = excess
            write(buffer, bodyBytes: data.count) { [self] in finish(id) }
        case .stall(let prefix, _):
            buffer.writeBytes(prefix)
            exchange?.isStalled = true
            write(buffer, bodyBytes: prefix.count)
        case .reset(let prefix, _):
            buffer.writeBytes(prefix)
            write(buffer, bodyBytes: prefix.count) { [self] in finish(id) }
        case .truncatedChunked(let data):
            if !data.isEmpty {
                buffer.writeString(String(data.count, radix: 16) + "\r\n")
                buffer.writeBytes(data)
                buffer.writeString("\r\n")
            }
            write(buffer, bodyBytes: data.count) { [self] in finish(id) }
        case .drip(let data, let chunkSize, let interval):
            write(buffer, bodyBytes: 0)
            drip(ByteBuffer(bytes: data), from: 0, chunkSize: max(1, chunkSize), interval: interval, exchangeID: id)
        case .generated(let size, let includeContentLength):
            if size <= 0 {
                if !includeContentLength { buffer.writeString("0\r\n\r\n") }
                write(buffer, bodyBytes: 0) { [self] in finish(id) }
            } else {
                write(buffer, bodyBytes: 0)
                exchange?.generator = Generator(size: size, isChunked: !includeContentLength)
                pump()
            }
        }
    }

    /// Sends the next `chunkSize` bytes of `body` one `interval` from now.
    private func drip(_ body: ByteBuffer, from offset: Int, chunkSize: Int, interval: Duration, exchangeID id: Int) {
        guard let context else { return }
        guard offset < body.readableBytes else {
            // Nothing (left) to send: the response is complete once the head is out.
            context.eventLoop.assumeIsolated().execute { [self] in finish(id) }
            return
        }
        timer = context.eventLoop.assumeIsolated().scheduleTask(in: interval.timeAmount) { [self] in
            timer = nil
            guard isActive, exchange?.id == id else { return }
            let length = min(chunkSize, body.readableBytes - offset)
            let end = offset + length
            let piece = body.getSlice(at: body.readerIndex + offset, length: length)!
            if end == body.readableBytes {
                write(piece, bodyBytes: length) { [self] in finish(id) }
            } else {
                write(piece, bodyBytes: length)
                drip(body, from: end, chunkSize: chunkSize, interval: interval, exchangeID: id)
            }
        }
    }

    /// Writes generated chunks while the channel is writable; resumes from `channelWritabilityChanged`.
    private func pump() {
        guard isActive, let context, let current = exchange, var generator = current.generator else { return }
        let id = current.id
        while generator.offset < generator.size, context.channel.isWritable {
            let length = min(DeterministicBytes.maximumSliceLength, generator.size - generator.offset)
            let slice = DeterministicBytes.slice(offset: generator.offset, length: length)
            generator.offset += length
            let isLast = generator.offset == generator.size
            let onLast: (() -> Void)? = isLast ? { [self] in finish(id) } : nil
            if generator.isChunked {
                write(ByteBuffer(string: String(length, radix: 16) + "\r\n"), bodyBytes: 0, flush: false)
                write(slice, bodyBytes: length, flush: false)
                write(ByteBuffer(string: isLast ? "\r\n0\r\n\r\n" : "\r\n"), bodyBytes: 0, flush: false, then: onLast)
            } else {
                write(slice, bodyBytes: length, flush: false, then: onLast)
            }
        }
        // Store progress before flushing: a flush can complete the last write and start the next exchange.
        exchange?.generator = generator
        context.flush()
    }

    /// The last byte of exchange `id` is written: keep the connection for the next request, or end it.
    private func finish(_ id: Int) {
        guard isActive, let context, let current = exchange, current.id == id else { return }
        exchange = nil
        if !hostsInProgress.isEmpty {
            core.requestFinished(host: hostsInProgress.removeFirst())
        }
        switch current.ending {
        case .keepAlive:
            serveNext()
        case .close:
            context.close(promise: nil)
        case .reset:
            // SO_LINGER {on, 0 s} turns close(2) into an abortive close: the peer gets RST, not FIN.
            let channel = context.channel
            if let provider = channel as? any SocketOptionProvider {
                provider.setSoLinger(linger(l_onoff: 1, l_linger: 0)).whenComplete { _ in
                    channel.close(promise: nil)
                }
            } else {
                context.close(promise: nil)
            }
        }
    }

    /// Writes `buffer` and, once the socket took it, counts its body bytes and runs `then`. A failed write
    /// means the channel is closing; `channelInactive` cleans up.
    private func write(_ buffer: ByteBuffer, bodyBytes: Int, flush: Bool = true, then: (() -> Void)? = nil) {
        guard let context else { return }
        let promise = context.eventLoop.makePromise(of: Void.self)
        if flush {
            context.writeAndFlush(wrapOutboundOut(buffer), promise: promise)
        } else {
            context.write(wrapOutboundOut(buffer), promise: promise)
        }
        guard bodyBytes > 0 || then != nil else { return }
        let core = self.core
        promise.futureResult.assumeIsolated().whenSuccess {
            if bodyBytes > 0 { core.addBodyBytesSent(bodyBytes) }
            then?()
        }
    }
}
