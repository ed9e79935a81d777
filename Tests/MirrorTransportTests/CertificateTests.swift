import Foundation
import Testing
@testable import MirrorTransport

/// Verification stays on, always: with libcurl's CA cache in use (the CA path unset, the bundle parsed once and kept)
/// a certificate for another name, or from a CA nobody trusts, is still refused, before and after a good one.
@Suite("TLS verification with the CA cache", .serialized)
struct CertificateTests {
    /// A private CA, a leaf for `right.test` it signed, and openssl s_server presenting the leaf on loopback.
    final class PrivateTLSServer {
        let folder: URL
        let port: Int
        let process: Process
        var ca: String { folder.appendingPathComponent("ca.crt").path }

        init() throws {
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("mirror-tls-\(UUID().uuidString)")
            self.folder = folder
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            let path = { (name: String) in folder.appendingPathComponent(name).path }
            try Self.openssl(["ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", path("ca.key")])
            try Self.openssl(["req", "-x509", "-new", "-key", path("ca.key"), "-days", "1", "-subj", "/CN=mirror test CA", "-out", path("ca.crt")])
            try Self.openssl(["ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", path("leaf.key")])
            try Self.openssl(["req", "-new", "-key", path("leaf.key"), "-subj", "/CN=right.test", "-out", path("leaf.csr")])
            try "subjectAltName=DNS:right.test\nextendedKeyUsage=serverAuth\n".write(toFile: path("leaf.ext"), atomically: true, encoding: .utf8)
            try Self.openssl(["x509", "-req", "-in", path("leaf.csr"), "-CA", path("ca.crt"), "-CAkey", path("ca.key"), "-CAcreateserial",
                              "-days", "1", "-extfile", path("leaf.ext"), "-out", path("leaf.crt")])
            var started: (Process, Int)?
            for _ in 0..<5 where started == nil {
                let port = try Self.freePort()
                let server = Process()
                server.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
                server.arguments = ["s_server", "-accept", "127.0.0.1:\(port)", "-cert", path("leaf.crt"), "-key", path("leaf.key"), "-www", "-quiet"]
                server.standardInput = Pipe()
                server.standardOutput = FileHandle.nullDevice
                server.standardError = FileHandle.nullDevice
                try server.run()
                for _ in 0..<200 where server.isRunning && started == nil {
                    if Self.accepts(port) { started = (server, port) } else { usleep(50_000) }
                }
                if started == nil { kill(server.processIdentifier, SIGKILL); server.waitUntilExit() }
            }
            guard let (process, port) = started else { throw CocoaError(.fileReadUnknown) }
            self.process = process
            self.port = port
        }

        deinit {
            kill(process.processIdentifier, SIGKILL)  // s_server does not stop on SIGTERM
            process.waitUntilExit()
            try? FileManager.default.removeItem(at: folder)
        }

        /// A request for `https://NAME:PORT/` connected to this server.
        func request(_ name: String, trusting ca: String?) -> TransferRequest {
            var request = TransferRequest(url: URL(string: "https://\(name):\(port)/")!)
            request.connectTo = ["\(name):\(port):127.0.0.1:\(port)"]
            request.trustedCertificates = ca
            return request
        }

        private static func openssl(_ arguments: [String]) throws {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
            process.arguments = arguments
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            process.waitUntilExit()
            guard process.terminationStatus == 0 else { throw CocoaError(.fileWriteUnknown) }
        }

        private static func freePort() throws -> Int {
            let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            defer { close(socket) }
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socket, $0, length) } }
            _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(socket, $0, &length) } }
            return Int(UInt16(bigEndian: address.sin_port))
        }

        private static func accepts(_ port: Int) -> Bool {
            let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            defer { close(socket) }
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(port).bigEndian)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            return withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            } == 0
        }
    }

    private static func outcome(_ driver: CurlMultiDriver, _ request: TransferRequest) async -> Result<HTTPResponse, TransportError> {
        await withCheckedContinuation { continuation in driver.start(request) { continuation.resume(returning: $0) } }
    }

    @Test func aWrongNameAndAnUnknownCAAreRefusedAroundAGoodCertificate() async throws {
        // Given a server whose certificate is for right.test, from a private CA, and one driver (one CA cache)
        try #require(FileManager.default.isExecutableFile(atPath: "/usr/bin/openssl"), "serving TLS needs openssl's s_server")
        let server = try PrivateTLSServer()
        let driver = CurlMultiDriver(threads: 2)
        defer { driver.shutdown() }
        #expect(CurlRuntime.usesCABundleOnly, "the system's bundle is readable here, so the cache is what is tested")

        for round in 1...2 {
            // When it is asked for by its name with its CA trusted, by another name with its CA trusted, and by its
            // name with only the system's CAs (twice: with the caches cold, then warm)
            let good = await Self.outcome(driver, server.request("right.test", trusting: server.ca))
            let wrongName = await Self.outcome(driver, server.request("wrong.test", trusting: server.ca))
            let unknownCA = await Self.outcome(driver, server.request("right.test", trusting: nil))

            // Then only the first gets an answer
            if case let .success(response) = good { #expect(response.status == 200) } else { Issue.record("round \(round): \(good)") }
            guard case .failure(.tls) = wrongName else { Issue.record("round \(round): a wrong name was accepted: \(wrongName)"); continue }
            guard case .failure(.tls) = unknownCA else { Issue.record("round \(round): an unknown CA was accepted: \(unknownCA)"); continue }
        }
    }
}
