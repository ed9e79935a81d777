import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// Free functions so the calls are not shadowed by `RawHTTPConnection`'s own `close` and `send`.
private func sysClose(_ fd: Int32) {
    _ = close(fd)
}

private func sysSend(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Int {
    #if canImport(Glibc)
    send(fd, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL))
    #else
    send(fd, bytes.baseAddress, bytes.count, 0)
    #endif
}

/// How a read from the server ended.
enum StreamEnd: Equatable, CustomStringConvertible {
    /// The response's framing was satisfied (Content-Length reached, final chunk seen, or no body).
    case complete
    /// The server closed in an orderly way (FIN) before the framing was satisfied, or the body is
    /// close-delimited.
    case closed
    /// The server aborted the connection (RST, `ECONNRESET`).
    case reset
    /// Nothing arrived within the receive timeout.
    case timeout
    case error(Int32)

    var description: String {
        switch self {
        case .complete: "complete"
        case .closed: "closed (FIN)"
        case .reset: "reset (RST)"
        case .timeout: "timeout"
        case .error(let code): "errno \(code)"
        }
    }
}

struct RawResponse {
    var status: Int
    var headers: [(String, String)]
    var body: [UInt8]
    /// How the body ended.
    var end: StreamEnd

    func header(_ name: String) -> String? {
        headers.first { $0.0.caseInsensitiveCompare(name) == .orderedSame }?.1
    }
}

/// A deliberately dumb HTTP/1.1 client on a blocking POSIX socket, so tests see exactly which bytes came and
/// whether the connection was closed (FIN) or reset (RST). Not thread-safe; one per test.
final class RawHTTPConnection {
    let port: Int
    private let fd: Int32
    /// Bytes received and not yet consumed by a response.
    private var buffer: [UInt8] = []
    /// Set once recv reported the end of the stream; later reads return it again.
    private var ended: StreamEnd?
    private var isClosed = false

    init(port: Int, receiveTimeout: Duration = .seconds(5)) throws {
        self.port = port
        #if canImport(Glibc)
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
        fd = socket(AF_INET, SOCK_STREAM, 0)
        #endif
        guard fd >= 0 else {
            isClosed = true
            throw POSIXError(.init(rawValue: errno) ?? .EIO)
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard result == 0 else {
            let code = errno
            // A class whose init throws still runs deinit: mark the descriptor closed so it is not closed
            // twice (a second close could hit a descriptor the server has since been given for a connection).
            close()
            throw POSIXError(.init(rawValue: code) ?? .EIO)
        }
        setReceiveTimeout(receiveTimeout)
    }

    deinit {
        close()
    }

    func setReceiveTimeout(_ timeout: Duration) {
        let (seconds, attoseconds) = timeout.components
        var value = timeval(tv_sec: Int(seconds), tv_usec: Int(attoseconds / 1_000_000_000_000))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &value, socklen_t(MemoryLayout<timeval>.size))
    }

    // MARK: Sending

    func send(_ text: String) {
        send(Array(text.utf8))
    }

    func send(_ bytes: [UInt8]) {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes {
                sysSend(fd, $0)
            }
            guard sent > 0 else { return }
            offset += sent
        }
    }

    /// Sends a request with `Host` and, when there is a body, `Content-Length`.
    func sendRequest(_ target: String, method: String = "GET", headers: [(String, String)] = [], body: [UInt8] = []) {
        var head = "\(method) \(target) HTTP/1.1\r\n"
        if !headers.contains(where: { $0.0.lowercased() == "host" }) {
            head += "Host: 127.0.0.1:\(port)\r\n"
        }
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        if !body.isEmpty { head += "Content-Length: \(body.count)\r\n" }
        send(Array((head + "\r\n").utf8) + body)
    }

    /// `sendRequest` then `readResponse`.
    func request(_ target: String, method: String = "GET", headers: [(String, String)] = [], body: [UInt8] = []) -> RawResponse {
        sendRequest(target, method: method, headers: headers, body: body)
        return readResponse(isHead: method == "HEAD")
    }

    func shutdownWrite() {
        shutdown(fd, Int32(SHUT_WR))
    }

    func close() {
        guard !isClosed else { return }
        isClosed = true
        sysClose(fd)
    }

    // MARK: Receiving

    /// Receives once into the buffer. Returns `nil` when bytes arrived, otherwise how the stream ended.
    @discardableResult
    func receiveMore(maximum: Int = 256 * 1024) -> StreamEnd? {
        if let ended { return ended }
        var chunk = [UInt8](repeating: 0, count: maximum)
        let count = recv(fd, &chunk, chunk.count, 0)
        if count > 0 {
            buffer.append(contentsOf: chunk[0..<count])
            return nil
        }
        if count == 0 {
            ended = .closed
        } else if errno == EAGAIN || errno == EWOULDBLOCK {
            return .timeout  // not sticky: a later read may succeed
        } else if errno == ECONNRESET {
            ended = .reset
        } else {
            ended = .error(errno)
        }
        return ended
    }

    /// Everything buffered so far, consumed.
    func takeBuffered() -> [UInt8] {
        defer { buffer = [] }
        return buffer
    }

    /// Reads until the stream ends (or times out), returning the bytes and how it ended.
    func readToEnd() -> (bytes: [UInt8], end: StreamEnd) {
        while true {
            if let end = receiveMore() { return (takeBuffered(), end) }
        }
    }

    /// Reads at least `count` bytes (or until the stream ends) and consumes exactly up to `count`.
    func read(count: Int) -> (bytes: [UInt8], end: StreamEnd?) {
        while buffer.count < count {
            if let end = receiveMore() {
                return (takeBuffered(), end)
            }
        }
        let bytes = Array(buffer[0..<count])
        buffer.removeFirst(count)
        return (bytes, nil)
    }

    /// Reads one response (skipping 1xx interim responses) and decodes its body per its framing.
    func readResponse(isHead: Bool = false) -> RawResponse {
        var response = readResponseHead()
        guard response.status != 0, !isHead, response.status != 204, response.status != 304 else { return response }
        if let length = response.header("Content-Length").flatMap(Int.init) {
            let (bytes, end) = read(count: length)
            response.body = bytes
            response.end = end ?? .complete
        } else if response.header("Transfer-Encoding")?.lowercased() == "chunked" {
            (response.body, response.end) = readChunkedBody()
        } else {
            (response.body, response.end) = readToEnd()
        }
        return response
    }

    /// Reads the next final response head (skipping 1xx), leaving its body unread. Status 0 when the stream
    /// ended first; then `body` holds whatever came and `end` says how it ended.
    func readResponseHead() -> RawResponse {
        while true {
            guard let headEnd = readHead() else {
                let end = receiveMore() ?? .timeout
                return RawResponse(status: 0, headers: [], body: takeBuffered(), end: end)
            }
            let headText = String(decoding: buffer[0..<headEnd], as: UTF8.self)
            buffer.removeFirst(headEnd + 4)
            var lines = headText.components(separatedBy: "\r\n")
            let statusLine = lines.removeFirst().split(separator: " ")
            let status = statusLine.count > 1 ? Int(statusLine[1]) ?? 0 : 0
            let headers = lines.compactMap { line -> (String, String)? in
                guard let colon = line.firstIndex(of: ":") else { return nil }
                return (String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
            }
            if (100..<200).contains(status) { continue }
            return RawResponse(status: status, headers: headers, body: [], end: .complete)
        }
    }

    /// The index of the blank line ending the head in the buffer, receiving as needed; `nil` when the stream ended first.
    private func readHead() -> Int? {
        while true {
            if let index = indexOfBlankLine() { return index }
            if receiveMore() != nil { return nil }
        }
    }

    private func indexOfBlankLine() -> Int? {
        guard buffer.count >= 4 else { return nil }
        for index in 0...(buffer.count - 4)
        where buffer[index] == 13 && buffer[index + 1] == 10 && buffer[index + 2] == 13 && buffer[index + 3] == 10 {
            return index
        }
        return nil
    }

    private func readLine() -> (line: String?, end: StreamEnd?) {
        while true {
            if let index = buffer.indices.dropLast().first(where: { buffer[$0] == 13 && buffer[$0 + 1] == 10 }) {
                let line = String(decoding: buffer[0..<index], as: UTF8.self)
                buffer.removeFirst(index + 2)
                return (line, nil)
            }
            if let end = receiveMore() { return (nil, end) }
        }
    }

    private func readChunkedBody() -> ([UInt8], StreamEnd) {
        var body: [UInt8] = []
        while true {
            let (sizeLine, end) = readLine()
            guard let sizeLine, let size = Int(sizeLine.split(separator: ";")[0], radix: 16) else {
                return (body + takeBuffered(), end ?? .error(EPROTO))
            }
            if size == 0 {
                let (_, trailerEnd) = readLine()
                return (body, trailerEnd ?? .complete)
            }
            let (bytes, chunkEnd) = read(count: size + 2)
            if let chunkEnd {
                return (body + bytes, chunkEnd)
            }
            body += bytes.dropLast(2)
        }
    }
}


/// `ContinuousClock` time taken by `body`.
func measure<T>(_ body: () throws -> T) rethrows -> (T, Duration) {
    let start = ContinuousClock.now
    let value = try body()
    return (value, ContinuousClock.now - start)
}
