import Foundation
import MirrorTestSupport
import Testing

/// Name look-ups that do not stall: a burst of new names through a resolver that drops answers. mirror runs in a
/// private mount namespace whose /etc/resolv.conf points at a resolver in this process, which drops the first query
/// for every name's address; glibc must ask again after mirror's 1 s, not its default 5 s.
@Suite("mirror urls, a resolver that drops queries", .serialized)
struct ResolverTests {
    /// A DNS server on port 53 (UDP) of a loopback address of its own (`127.53.X.Y`) that answers `*.burst.test` with
    /// 127.0.0.1, drops the first A query of each name, and notes when each A query arrived.
    final class DroppingResolver: @unchecked Sendable {  // `arrivals` and `stopped` are touched only under `lock`
        /// Where it listens: one fixed address (127.0.53.1) failed to bind when another copy of the suite (another
        /// worktree's, on the same machine) ran this test at the same time, so each resolver takes a free one.
        let address: String
        private let socket: Int32
        private let lock = NSLock()
        private var arrivals: [String: [ContinuousClock.Instant]] = [:]
        private var stopped = false
        private let done = DispatchSemaphore(value: 0)

        init() throws {
            let descriptor = Glibc.socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
            var chosen: String?
            var failure: Int32 = 0
            for _ in 0..<64 where chosen == nil {
                let candidate = "127.53.\(Int.random(in: 0...255)).\(Int.random(in: 1...254))"
                var address = sockaddr_in()
                address.sin_family = sa_family_t(AF_INET)
                address.sin_port = in_port_t(UInt16(53).bigEndian)
                address.sin_addr.s_addr = inet_addr(candidate)
                let bound = withUnsafePointer(to: &address) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
                }
                if bound == 0 { chosen = candidate } else { failure = errno }
                if bound != 0, failure != EADDRINUSE { break }
            }
            guard let chosen else {
                close(descriptor)
                throw POSIXError(POSIXErrorCode(rawValue: failure) ?? .EIO)
            }
            socket = descriptor
            address = chosen
            var timeout = timeval(tv_sec: 0, tv_usec: 200_000)
            setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            Thread { [self] in serve() }.start()
        }

        func stop() {
            lock.withLock { stopped = true }
            done.wait()
            close(socket)
        }

        /// When each name's A queries arrived.
        var queries: [String: [ContinuousClock.Instant]] { lock.withLock { arrivals } }

        private func serve() {
            var buffer = [UInt8](repeating: 0, count: 1_500)
            while !lock.withLock({ stopped }) {
                var peer = sockaddr_in()
                var length = socklen_t(MemoryLayout<sockaddr_in>.size)
                let count = withUnsafeMutablePointer(to: &peer) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { recvfrom(socket, &buffer, buffer.count, 0, $0, &length) }
                }
                guard count > 12, let (name, type, end) = Self.question(buffer, count: count) else { continue }
                var answer = Array(buffer[0..<end])
                answer[2] = 0x81  // a response, recursion desired
                answer[3] = 0x80  // recursion available, no error
                answer[6] = 0; answer[7] = 0  // answers
                answer[8] = 0; answer[9] = 0  // authority
                answer[10] = 0; answer[11] = 0  // additional (the query's EDNS record is not echoed)
                if type == 1, name.hasSuffix(".burst.test") {
                    let first = lock.withLock { () -> Bool in
                        arrivals[name, default: []].append(.now)
                        return arrivals[name]!.count == 1
                    }
                    if first { continue }  // dropped: the client must ask again
                    answer[7] = 1
                    answer += [0xC0, 0x0C, 0x00, 0x01, 0x00, 0x01, 0x00, 0x00, 0x00, 0x3C, 0x00, 0x04, 127, 0, 0, 1]
                }
                _ = withUnsafePointer(to: &peer) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(socket, answer, answer.count, 0, $0, length) }
                }
            }
            done.signal()
        }

        /// The query's name, type and the end of its question.
        private static func question(_ bytes: [UInt8], count: Int) -> (String, Int, Int)? {
            var labels: [String] = []
            var at = 12
            while at < count, bytes[at] != 0 {
                let length = Int(bytes[at])
                guard length < 64, at + 1 + length < count else { return nil }
                labels.append(String(decoding: bytes[(at + 1)...(at + length)], as: UTF8.self))
                at += 1 + length
            }
            guard at + 5 <= count else { return nil }
            let type = Int(bytes[at + 1]) << 8 | Int(bytes[at + 2])
            return (labels.joined(separator: ".").lowercased(), type, at + 5)
        }
    }

    static var canBindAResolver: Bool {
        getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/unshare")
    }

    @Test(.enabled(if: canBindAResolver, "a resolver on port 53 and a bind-mounted /etc/resolv.conf need root and unshare"))
    func aBurstOfNewNamesThroughALossyResolverIsAskedAgainWithinASecond() async throws {
        // Given 24 hosts behind names only a resolver that drops each name's first answer knows
        let resolver = try DroppingResolver()
        defer { resolver.stop() }
        let server = try TestServer.start()
        defer { server.stop() }
        let hosts = 24
        var lines: [String] = []
        for index in 0..<hosts {
            server.route("/i/\(index).png", .ok(TestImages.png(width: 16, height: 16, seed: UInt64(index)), contentType: "image/png"))
            lines.append("http://n\(index).burst.test:\(server.port)/i/\(index).png")
        }
        let work = TemporaryFolder()
        try (lines.joined(separator: "\n") + "\n").write(to: work.file("table.txt"), atomically: true, encoding: .utf8)
        try "nameserver \(resolver.address)\n".write(to: work.file("resolv.conf"), atomically: true, encoding: .utf8)

        // When mirror fetches them all at once, in a mount namespace whose /etc/resolv.conf names that resolver
        let script = "mount --bind '\(work.file("resolv.conf").path)' /etc/resolv.conf && exec '\(MirrorBinary.url.path)' urls "
            + "'\(work.file("table.txt").path)' --out '\(work.file("out").path)' --concurrency 24 --quiet --json"
        let run = try await onDispatchThread { try HostileInputTests.inMountNamespace(script, environment: [:]) }
        let result = try #require(run, "this machine does not allow a mount namespace")

        // Then every image is saved, and every name's dropped query was asked again before glibc's default 5 s (mirror
        // asks again within about a second; the bound leaves a loaded machine room)
        #expect(result.status == 0, "\(result.output.suffix(400))")
        let queries = resolver.queries
        #expect(queries.count == hosts, "\(queries.keys.sorted())")
        for (name, times) in queries {
            #expect(times.count >= 2, "\(name): asked \(times.count) times")
            if times.count >= 2 { #expect(times[1] - times[0] < .seconds(4), "\(name): asked again after \(times[1] - times[0])") }
        }
    }
}
