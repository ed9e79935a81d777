import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Listens on `127.0.0.1:listenPort` and pipes every connection to `127.0.0.1:targetPort`, byte for byte, one
/// thread per direction. `TestServer` always binds a port the kernel picks; this gives `--port N` a fixed one.
final class PortForwarder: @unchecked Sendable {
    // `listener` is written once in init; `stopped` only under `lock`.
    private let listener: Int32
    private let targetPort: Int
    private let lock = NSLock()
    private var stopped = false

    struct SocketError: Error, CustomStringConvertible {
        var call: String
        var code: Int32
        var description: String { "\(call): \(String(cString: strerror(code)))" }
    }

    init(listenPort: Int, targetPort: Int) throws {
        self.targetPort = targetPort
        #if canImport(Glibc)
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
            let fd = socket(AF_INET, SOCK_STREAM, 0)
        #endif
        guard fd >= 0 else { throw SocketError(call: "socket", code: errno) }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = Self.loopback(port: listenPort)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(fd, 256) == 0 else {
            let code = errno
            close(fd)
            throw SocketError(call: "bind/listen", code: code)
        }
        listener = fd
        let thread = Thread { [self] in acceptLoop() }
        thread.start()
    }

    func stop() {
        lock.lock()
        defer { lock.unlock() }
        guard !stopped else { return }
        stopped = true
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
    }

    private var isStopped: Bool {
        lock.lock()
        defer { lock.unlock() }
        return stopped
    }

    private static func loopback(port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return address
    }

    private func acceptLoop() {
        while !isStopped {
            let client = accept(listener, nil, nil)
            if client < 0 {
                if errno == EINTR { continue }
                return
            }
            #if canImport(Glibc)
                let upstream = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            #else
                let upstream = socket(AF_INET, SOCK_STREAM, 0)
            #endif
            var address = Self.loopback(port: targetPort)
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(upstream, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard upstream >= 0, connected == 0 else {
                if upstream >= 0 { close(upstream) }
                close(client)
                continue
            }
            let pair = Pair(client: client, upstream: upstream)
            Thread { pair.pump(from: client, to: upstream) }.start()
            Thread { pair.pump(from: upstream, to: client) }.start()
        }
    }

    /// Two sockets spliced together; closed when both directions are done.
    private final class Pair: @unchecked Sendable {
        let client: Int32
        let upstream: Int32
        private let lock = NSLock()
        private var finished = 0

        init(client: Int32, upstream: Int32) {
            self.client = client
            self.upstream = upstream
        }

        func pump(from source: Int32, to destination: Int32) {
            var buffer = [UInt8](repeating: 0, count: 64 * 1024)
            loop: while true {
                let count = buffer.withUnsafeMutableBytes { recv(source, $0.baseAddress, $0.count, 0) }
                if count < 0, errno == EINTR { continue }
                if count <= 0 { break }
                var offset = 0
                while offset < count {
                    let sent = buffer.withUnsafeBytes { send(destination, $0.baseAddress! + offset, count - offset, Int32(MSG_NOSIGNAL)) }
                    if sent < 0, errno == EINTR { continue }
                    if sent <= 0 { break loop }
                    offset += sent
                }
            }
            // Pass the end of this direction on; the other direction may still be flowing.
            shutdown(destination, Int32(SHUT_WR))
            lock.lock()
            finished += 1
            let done = finished == 2
            lock.unlock()
            if done {
                close(client)
                close(upstream)
            }
        }
    }
}
