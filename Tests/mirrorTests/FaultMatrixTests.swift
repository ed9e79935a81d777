import Foundation
import MirrorSync
import MirrorTestSupport
import MirrorTransport
import Testing

/// The fault matrix, image side: `mirror urls --json` (the built binary) against the loopback test server,
/// one fault per case, each asserting what was saved or which reason rejected it, the exit code and the
/// summary counts. The API side is in `APIFaultMatrixTests`.
@Suite("Fault matrix: image servers, end to end", .serialized)
struct FaultMatrixTests {
    /// What one run printed and left behind.
    struct Outcome {
        var run: MirrorBinary.Run
        var summary: [String: Any]
        var folder: TemporaryFolder

        var saved: Int { summary["saved"] as? Int ?? -1 }
        var failed: Int { summary["failed"] as? Int ?? -1 }
        var failures: [String: Int] { summary["failures"] as? [String: Int] ?? [:] }
        var images: [String] { folder.visibleFiles.filter { $0 != "manifest.jsonl" } }
    }

    static let png = TestImages.png(width: 24, height: 16, seed: 7)

    /// Runs `mirror urls - --json` on the given URLs.
    func mirror(_ urls: [URL], _ arguments: [String] = [], environment: [String: String] = [:]) async throws -> Outcome {
        let folder = TemporaryFolder()
        let run = try await MirrorBinary.run(
            ["urls", "-", "--out", folder.path, "--json", "--no-cache"] + arguments,
            stdin: urls.map(\.absoluteString).joined(separator: "\n") + "\n",
            environment: environment
        )
        let summary = (try? JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any]) ?? [:]
        return Outcome(run: run, summary: summary, folder: folder)
    }

    /// Asserts a single-URL run that saved its image: exit 0, one file, one manifest line, no failure.
    func expectSaved(_ outcome: Outcome, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(outcome.run.status == 0, "stderr: \(outcome.run.stderr)", sourceLocation: sourceLocation)
        #expect(outcome.saved == 1, sourceLocation: sourceLocation)
        #expect(outcome.failed == 0, sourceLocation: sourceLocation)
        #expect(outcome.failures.isEmpty, sourceLocation: sourceLocation)
        #expect(outcome.images.count == 1, sourceLocation: sourceLocation)
        #expect(outcome.folder.temporaryFiles.isEmpty, sourceLocation: sourceLocation)
        if let name = outcome.images.first {
            #expect((try? Data(contentsOf: outcome.folder.file(name))) == Self.png, sourceLocation: sourceLocation)
        }
    }

    /// Asserts a single-URL run that saved nothing, for `reason`, with `status`.
    func expectRejected(_ outcome: Outcome, reason: String, status: Int32, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(outcome.run.status == status, "stderr: \(outcome.run.stderr)", sourceLocation: sourceLocation)
        #expect(outcome.saved == 0, sourceLocation: sourceLocation)
        #expect(outcome.failed == 1, sourceLocation: sourceLocation)
        #expect(outcome.failures == [reason: 1], sourceLocation: sourceLocation)
        #expect(outcome.images.isEmpty, "saved \(outcome.images)", sourceLocation: sourceLocation)
        #expect(outcome.folder.temporaryFiles.isEmpty, sourceLocation: sourceLocation)
    }

    /// A route that answers with `first` the first `times` requests, then with the PNG.
    func failing(_ server: TestServer, _ path: String, times: Int = 1, _ first: @escaping @Sendable () -> Response) {
        let count = Locked(0)
        server.route(prefix: path) { _ in
            let n = count.withLock { value -> Int in
                value += 1
                return value
            }
            return n <= times ? first() : .ok(Self.png, contentType: "image/png")
        }
    }

    func gap(_ server: TestServer, path: String) -> Duration {
        let arrivals = server.requests.filter { $0.path == path }.map(\.arrivedAt)
        guard arrivals.count >= 2 else { return .zero }
        return arrivals[1] - arrivals[0]
    }

    // MARK: Status codes

    /// Issue 43: a response with bytes past its `Content-Length` leaves them on the kept-alive connection, where the
    /// next request reads them as its answer (libcurl reports HTTP/0.9): that row, a good image, must not fail for
    /// good — its attempt is the connection's fault, tried again on a fresh one, even with `--retries 0`.
    @Test(arguments: [Response.ExcessTiming.withTheBody, .beforeTheNextAnswer])
    func aResponseWithBytesPastItsLengthCostsNoOtherRow(excessSent: Response.ExcessTiming) async throws {
        // Given a PNG followed by 700 garbage bytes (at once, or once the client has asked for the next image on that
        // connection), then a good PNG on the same host
        let server = try TestServer.start()
        defer { server.stop() }
        let garbage = Data((0..<700).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) })
        server.route("/bad.png", Response(headers: [("Content-Type", "image/png")], body: .overlong(Self.png, excess: garbage, sent: excessSent)))
        let good = TestImages.png(width: 30, height: 20, seed: 8)
        server.route("/good.png", .ok(good, contentType: "image/png"))

        // When both are fetched one at a time with no retries
        let outcome = try await mirror([server.url("/bad.png"), server.url("/good.png")], ["--concurrency", "1", "--retries", "0", "--ignore-opt-out", "all"])

        // Then both are saved (the bad one's body was whole), nothing failed, and the good one is the good bytes
        #expect(outcome.run.status == 0, "stderr: \(outcome.run.stderr)")
        #expect(outcome.saved == 2 && outcome.failed == 0, "\(outcome.summary)")
        #expect((try? Data(contentsOf: outcome.folder.file("good.png"))) == good)
        #expect(!outcome.run.stderr.contains("non-HTTP(S)"))
    }

    @Test func a500OnceIsRetriedAndSaved() async throws {
        // Given an image whose first request gets 500
        let server = try TestServer.start()
        defer { server.stop() }
        failing(server, "/flaky.png") { .status(500, headers: [("Content-Type", "text/html")], body: Data("<h1>oops</h1>".utf8)) }

        // When mirror fetches it
        let outcome = try await mirror([server.url("/flaky.png")])

        // Then it is saved after one retry
        expectSaved(outcome)
        #expect(server.requestCount(path: "/flaky.png") == 2)
    }

    @Test func a503WithRetryAfterIsWaitedOutThenSaved() async throws {
        let server = try TestServer.start()
        defer { server.stop() }
        failing(server, "/busy.png") { .status(503, headers: [("Retry-After", "2")]) }

        let outcome = try await mirror([server.url("/busy.png")])

        expectSaved(outcome)
        #expect(server.requestCount(path: "/busy.png") == 2)
        #expect(gap(server, path: "/busy.png") >= .seconds(2), "Retry-After: 2 was undercut")
    }

    @Test func a429WithRetryAfterInSecondsIsNotUndercut() async throws {
        let server = try TestServer.start()
        defer { server.stop() }
        failing(server, "/limited.png") { .status(429, headers: [("Retry-After", "2")]) }

        let outcome = try await mirror([server.url("/limited.png")])

        expectSaved(outcome)
        #expect(server.requestCount(path: "/limited.png") == 2)
        #expect(gap(server, path: "/limited.png") >= .seconds(2), "Retry-After: 2 was undercut")
        #expect(outcome.run.stderr.contains("HTTP 429"))
    }

    @Test func a429WithRetryAfterAsAnHTTPDateIsNotUndercut() async throws {
        // Given a 429 whose Retry-After is an HTTP date 3 s (rounded up to a whole second) after it is sent
        let server = try TestServer.start()
        defer { server.stop() }
        let promised = Locked<(sentAt: ContinuousClock.Instant, wait: Duration)?>(nil)
        let count = Locked(0)
        server.route(prefix: "/dated.png") { _ in
            let n = count.withLock { value -> Int in
                value += 1
                return value
            }
            guard n == 1 else { return .ok(Self.png, contentType: "image/png") }
            let now = Date()
            let date = Date(timeIntervalSince1970: (now.timeIntervalSince1970 + 3).rounded(.up))
            promised.withLock { $0 = (.now, .milliseconds(Int64((date.timeIntervalSince(now) * 1000).rounded(.down)))) }
            return .status(429, headers: [("Retry-After", Self.httpDate(date))])
        }

        let outcome = try await mirror([server.url("/dated.png")])

        // Then the retry came no sooner than that date
        expectSaved(outcome)
        let requests = server.requests.filter { $0.path == "/dated.png" }
        #expect(requests.count == 2)
        let (sentAt, wait) = try #require(promised.withLock { $0 })
        #expect(requests.count == 2 && requests[1].arrivedAt - sentAt >= wait, "retried \(requests.count == 2 ? requests[1].arrivedAt - sentAt : .zero) after a Retry-After of \(wait)")
    }

    static func httpDate(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return formatter.string(from: date)
    }

    @Test func a404IsRejectedAtOnceWithExit3() async throws {
        let server = try TestServer.start()
        defer { server.stop() }

        let outcome = try await mirror([server.url("/missing.png")])

        expectRejected(outcome, reason: "http-404", status: 3)
        #expect(server.requestCount(path: "/missing.png") == 1)
        #expect(outcome.run.stderr.contains("HTTP 404"))
    }

    // MARK: Bodies that are not images

    @Test func htmlServedAsJPEGIsNeverSaved() async throws {
        let server = try TestServer.start()
        defer { server.stop() }
        server.route("/photo.jpg", .ok(TestImages.htmlErrorPage, contentType: "image/jpeg"))

        let outcome = try await mirror([server.url("/photo.jpg")])

        expectRejected(outcome, reason: "not-image-html", status: 3)
        #expect(server.requestCount(path: "/photo.jpg") == 1)
    }

    @Test func anEmpty200IsRejected() async throws {
        let server = try TestServer.start()
        defer { server.stop() }
        server.route("/empty.png", .ok(Data(), contentType: "image/png"))

        let outcome = try await mirror([server.url("/empty.png")])

        expectRejected(outcome, reason: "empty", status: 3)
        #expect(server.requestCount(path: "/empty.png") == 1)
    }

    @Test func aValidImageWithAWrongContentTypeIsAccepted() async throws {
        let server = try TestServer.start()
        defer { server.stop() }
        server.route("/mislabelled.jpg", .ok(Self.png, contentType: "text/html; charset=utf-8"))

        let outcome = try await mirror([server.url("/mislabelled.jpg")])

        // The bytes decide: a PNG, saved with the extension of the bytes
        expectSaved(outcome)
        #expect(outcome.images == ["mislabelled.png"])
    }

    @Test func aPNGHeaderClaiming100000x100000IsRefused() async throws {
        let server = try TestServer.start()
        defer { server.stop() }
        server.route("/bomb.png", .ok(TestImages.pixelBomb(), contentType: "image/png"))

        let outcome = try await mirror([server.url("/bomb.png")])

        expectRejected(outcome, reason: "too-many-pixels", status: 3)
    }

    // MARK: Bodies that break off

    @Test func aBodyTruncatedBeforeItsContentLengthIsRetriedThenRejected() async throws {
        let server = try TestServer.start()
        defer { server.stop() }
        server.route("/short.png", Response(headers: [("Content-Type", "image/png")], body: .truncated(Self.png.prefix(Self.png.count / 2), declaredLength: Self.png.count)))

        let outcome = try await mirror([server.url("/short.png")], ["--retries", "1"])

        // Truncation is a network failure (a later run may succeed): retried once, then exit 5
        expectRejected(outcome, reason: "truncated", status: 5)
        #expect(server.requestCount(path: "/short.png") == 2)
    }

    @Test func aChunkedBodyCutOffIsRetriedThenRejected() async throws {
        let server = try TestServer.start()
        defer { server.stop() }
        server.route("/chunked.png", Response(headers: [("Content-Type", "image/png")], body: .truncatedChunked(Self.png.prefix(Self.png.count / 2))))

        let outcome = try await mirror([server.url("/chunked.png")], ["--retries", "1"])

        expectRejected(outcome, reason: "truncated", status: 5)
        #expect(server.requestCount(path: "/chunked.png") == 2)
    }

    @Test func aCompleteResponseHoldingHalfAPNGIsRejectedAsTruncated() async throws {
        // Given no Content-Length and no chunking: the body ends at the close, so HTTP sees a whole response
        let server = try TestServer.start()
        defer { server.stop() }
        server.route("/half.png", Response(headers: [("Content-Type", "image/png")], body: .untilClose(Self.png.prefix(Self.png.count / 2))))

        let outcome = try await mirror([server.url("/half.png")], ["--retries", "1"])

        // Then the image check catches it; a cut-off connection looks the same, so it is tried once more,
        // and a body that stays cut off is not an image (exit 3: retrying later will not help)
        expectRejected(outcome, reason: "truncated", status: 3)
        #expect(server.requestCount(path: "/half.png") == 2)
    }

    @Test func aConnectionResetMidBodyIsRetriedThenRejected() async throws {
        let server = try TestServer.start()
        defer { server.stop() }
        server.route("/reset.png", Response(headers: [("Content-Type", "image/png")], body: .reset(prefix: Self.png.prefix(100), declaredLength: Self.png.count)))

        let outcome = try await mirror([server.url("/reset.png")], ["--retries", "1"])

        expectRejected(outcome, reason: "connection-lost", status: 5)
        #expect(server.requestCount(path: "/reset.png") == 2)
    }

    @Test func aStallMidBodyIsCaught() async throws {
        // Given a body that stops after 100 bytes and never closes, and a 1 s stall window (MIRROR_STALL_SECONDS, for tests)
        let server = try TestServer.start()
        defer { server.stop() }
        server.route("/stall.png", Response(headers: [("Content-Type", "image/png")], body: .stall(prefix: Self.png.prefix(100), declaredLength: Self.png.count)))
        let started = ContinuousClock.now

        let outcome = try await mirror([server.url("/stall.png")], ["--retries", "0"], environment: ["MIRROR_STALL_SECONDS": "1"])

        // Then it gives up within a few seconds, as a stall
        expectRejected(outcome, reason: "stalled", status: 5)
        #expect(outcome.run.ended - started < .seconds(10))
        #expect(outcome.run.stderr.contains("stalled"))
    }

    @Test func aSlowDripAboveTheStallFloorIsSaved() async throws {
        // Given the PNG in 200-byte pieces every 100 ms (2,000 bytes/s, above the 1,000 bytes/s floor)
        let server = try TestServer.start()
        defer { server.stop() }
        server.route("/drip.png", Response(headers: [("Content-Type", "image/png")], body: .drip(Self.png, chunkSize: 200, interval: .milliseconds(100))))

        let outcome = try await mirror([server.url("/drip.png")], environment: ["MIRROR_STALL_SECONDS": "1"])

        expectSaved(outcome)
        #expect(server.requestCount(path: "/drip.png") == 1)
    }

    // MARK: Redirects

    @Test func aRedirectChainIsFollowedAndSaved() async throws {
        let server = try TestServer.start()
        defer { server.stop() }
        server.route("/final.png", .ok(Self.png, contentType: "image/png"))

        let outcome = try await mirror([server.url("/redirect/4?to=/final.png")])

        expectSaved(outcome)
        #expect(server.requestCount(path: "/final.png") == 1)
        let manifest = try String(contentsOf: outcome.folder.file("manifest.jsonl"), encoding: .utf8)
        #expect(manifest.contains("/redirect/4"))
    }

    @Test func aRedirectLoopIsRefused() async throws {
        let server = try TestServer.start()
        defer { server.stop() }

        let outcome = try await mirror([server.url("/loop")])

        expectRejected(outcome, reason: "redirects", status: 3)
        // The first request and at most 5 redirects
        #expect(server.requestCount(path: "/loop") == 6)
    }

    @Test(arguments: ["file:///etc/passwd", "ftp://127.0.0.1/image.png"])
    func aRedirectToAnotherSchemeIsRefused(target: String) async throws {
        let server = try TestServer.start()
        defer { server.stop() }
        let encoded = target.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? target

        let outcome = try await mirror([server.url("/redirect-to?url=\(encoded)")])

        expectRejected(outcome, reason: "protocol", status: 3)
        #expect(outcome.run.stderr.contains("refused a non-HTTP(S) URL"))
    }

    // MARK: Sizes and hosts

    @Test func a2GBContentLengthIsRefusedWithoutReadingTheBody() async throws {
        let server = try TestServer.start()
        defer { server.stop() }

        let outcome = try await mirror([server.url("/huge?size=2147483648")])

        expectRejected(outcome, reason: "too-large", status: 3)
        // The socket took at most what was in flight before the refusal, not gigabytes
        #expect(server.bodyBytesSent < 4 * 1024 * 1024, "\(server.bodyBytesSent) bytes were sent")
    }

    @Test func aBodyWithoutContentLengthIsCutAtTheLimit() async throws {
        // Given a PNG signature followed by 16 MB, with no Content-Length (the body ends at the close)
        let server = try TestServer.start()
        defer { server.stop() }
        server.route("/endless.png", Response(headers: [("Content-Type", "image/png")], body: .untilClose(Self.png + Data(count: 16 << 20))))

        let outcome = try await mirror([server.url("/endless.png")], ["--max-bytes", "1MB"])

        // Then it stops reading at the 1 MB limit
        expectRejected(outcome, reason: "too-large", status: 3)
        #expect(server.bodyBytesSent < 8 * 1024 * 1024, "\(server.bodyBytesSent) bytes were sent")
    }

    @Test func anUnresolvableHostIsANetworkFailure() async throws {
        let outcome = try await mirror([URL(string: "http://no-such-host.invalid/image.png")!], ["--retries", "0"])

        expectRejected(outcome, reason: "dns", status: 5)
        #expect(outcome.run.stderr.contains("could not resolve host no-such-host.invalid"))
    }
    @Test func aSelfSignedCertificateIsRefused() async throws {
        // Given an HTTPS server (openssl s_server) on loopback with a self-signed certificate for 127.0.0.1
        let openssl = "/usr/bin/openssl"
        try #require(FileManager.default.isExecutableFile(atPath: openssl), "needs openssl to serve TLS")
        let work = TemporaryFolder()
        let generate = Process()
        generate.executableURL = URL(fileURLWithPath: openssl)
        generate.arguments = ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
                              "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", work.file("key.pem").path, "-out", work.file("cert.pem").path]
        generate.standardOutput = FileHandle.nullDevice
        generate.standardError = FileHandle.nullDevice
        try generate.run()
        generate.waitUntilExit()
        try #require(generate.terminationStatus == 0)
        // (a port the kernel just handed out and took back, so not one of the suite's thousands of loopback
        // connections; if s_server still cannot listen there, it exits and another port is tried)
        var started: (server: Process, port: Int)?
        for _ in 0..<5 where started == nil {
            let port = try Self.freeLoopbackPort()
            let server = Process()
            server.executableURL = URL(fileURLWithPath: openssl)
            server.arguments = ["s_server", "-accept", "127.0.0.1:\(port)", "-cert", work.file("cert.pem").path, "-key", work.file("key.pem").path, "-www", "-quiet"]
            server.standardInput = Pipe()
            server.standardOutput = FileHandle.nullDevice
            server.standardError = FileHandle.nullDevice
            try server.run()
            // Wait until it listens, or exits
            for _ in 0..<200 where server.isRunning {
                if Self.acceptsConnections(port: port) { started = (server, port); break }
                try await Task.sleep(for: .milliseconds(50))
            }
            // s_server does not stop on SIGTERM
            if started == nil { kill(server.processIdentifier, SIGKILL); server.waitUntilExit() }
        }
        let (server, port) = try #require(started, "openssl s_server did not start listening")
        defer { kill(server.processIdentifier, SIGKILL); server.waitUntilExit() }

        // When mirror fetches from it
        let outcome = try await mirror([URL(string: "https://127.0.0.1:\(port)/image.png")!], ["--retries", "0"])

        // Then the certificate is not trusted: a TLS failure, nothing saved, no retry (it will not get better)
        expectRejected(outcome, reason: "tls", status: 3)
        #expect(outcome.run.stderr.contains("TLS failure"), "stderr: \(outcome.run.stderr)")
    }

    /// A loopback port that was free a moment ago: bound with port 0, read back, closed.
    static func freeLoopbackPort() throws -> Int {
        let probe = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(probe) }
        var address = loopback(port: 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(probe, $0, length) == 0 && getsockname(probe, $0, &length) == 0 }
        }
        try #require(bound, "cannot bind a loopback port: errno \(errno)")
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// Whether something accepts TCP connections on 127.0.0.1:`port`.
    static func acceptsConnections(port: Int) -> Bool {
        let probe = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(probe) }
        var address = loopback(port: port)
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(probe, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
    }

    /// 127.0.0.1:`port` as a socket address (port 0: any free port, when bound).
    static func loopback(port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return address
    }
}
