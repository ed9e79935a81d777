import Foundation
import MirrorTestSupport
import Testing
@testable import MirrorTransport

/// Every `TransportError` kind, produced by its real cause over a real socket.
@Suite("Transport errors by cause")
struct TransportErrorTests {
    let server: TestServer
    let driver: CurlMultiDriver

    init() throws {
        server = try TestServer.start()
        // Idle connections kept for ten minutes, not libcurl's 118 seconds: a test that poisons a kept connection must
        // find it kept however long this process, running every other suite beside it (under ThreadSanitizer, for
        // minutes), takes to send the next request. Under load it once took longer, and the request went out fresh.
        driver = CurlMultiDriver(maximumConnectionAge: .seconds(600))
    }

    // Swift Testing creates one instance per test and drops it afterwards; stop both then.
    // (There is no deinit on structs, so each test ends with `finish()`.)
    func finish() {
        driver.shutdown()
        server.stop()
    }

    @Test func unresolvableHost() async {
        defer { finish() }
        let result = await fetch(driver, URL(string: "http://mirror-test-host.invalid/a.jpg")!)
        guard case let .dnsFailure(host, _)? = result.failure else {
            Issue.record("expected a DNS failure, got \(result)")
            return
        }
        #expect(host == "mirror-test-host.invalid")
    }

    @Test func refusedConnection() async {
        defer { finish() }
        // Port 1 on loopback has no listener.
        let result = await fetch(driver, URL(string: "http://127.0.0.1:1/a.jpg")!)
        guard case .connectFailed? = result.failure else {
            Issue.record("expected a connect failure, got \(result)")
            return
        }
    }

    @Test func totalTimeout() async {
        defer { finish() }
        let result = await fetch(driver, server.url("/slow?ms=3000")) { $0.totalTimeout = .milliseconds(300) }
        guard case .timedOut? = result.failure else {
            Issue.record("expected a timeout, got \(result)")
            return
        }
    }

    @Test func stallIsDetected() async {
        defer { finish() }
        // The server sends 100 bytes of 10,000, then nothing.
        let result = await fetch(driver, server.url("/stall?prefix=100&length=10000")) {
            $0.stall = .init(minimumBytesPerSecond: 500, window: .seconds(1))
        }
        // The stall detector, not some other timeout, ended it (there is no total timeout here).
        #expect(result.failure == .stalled(bytesPerSecond: 500, seconds: 1))
    }

    @Test func slowButSteadyDripIsNotAStall() async {
        defer { finish() }
        // 2,000 bytes in 200-byte chunks every 100 ms: 2,000 bytes/s, above a 500 bytes/s floor.
        let result = await fetch(driver, server.url("/drip?bytes=2000&chunk=200&ms=100")) {
            $0.stall = .init(minimumBytesPerSecond: 500, window: .seconds(1))
        }
        #expect(result.success?.bytesReceived == 2000)
    }

    @Test func sizeLimitByContentLength() async {
        defer { finish() }
        let file = TemporaryFile()
        var request = TransferRequest(url: server.url("/huge?size=50000000&length=1"), destination: .file(descriptor: file.descriptor))
        request.maximumBodyBytes = 1_000_000
        let result = await fetch(driver, request)
        #expect(result.failure == .tooLarge(limit: 1_000_000))
        // Refused from the header: nothing of the body was written.
        #expect(file.contents.isEmpty)
    }

    @Test func sizeLimitWithoutContentLength() async {
        defer { finish() }
        let file = TemporaryFile()
        var request = TransferRequest(url: server.url("/huge?size=50000000&length=0"), destination: .file(descriptor: file.descriptor))
        request.maximumBodyBytes = 1_000_000
        let result = await fetch(driver, request)
        #expect(result.failure == .tooLarge(limit: 1_000_000))
        // Enforced while streaming: at most the limit was written, far less than the 50 MB offered.
        #expect(file.contents.count <= 1_000_000)
    }

    @Test func redirectLoop() async {
        defer { finish() }
        let result = await fetch(driver, server.url("/loop"))
        #expect(result.failure == .tooManyRedirects(limit: 5))
        #expect(server.requestCount(path: "/loop") == 6)
    }

    @Test func sixRedirectsAreTooMany() async {
        defer { finish() }
        let five = await fetch(driver, server.url("/redirect/5"))
        #expect(five.success?.redirectCount == 5)
        let six = await fetch(driver, server.url("/redirect/6"))
        #expect(six.failure == .tooManyRedirects(limit: 5))
    }

    @Test(arguments: ["file:///etc/passwd", "ftp://127.0.0.1/secret.jpg", "gopher://127.0.0.1/x"])
    func redirectToAnotherSchemeIsRefusedWithoutReading(target: String) async {
        defer { finish() }
        let file = TemporaryFile()
        let encoded = target.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
        let result = await fetch(driver, TransferRequest(url: server.url("/redirect-to?url=\(encoded)"), destination: .file(descriptor: file.descriptor)))
        #expect(result.failure == .disallowedProtocol(url: target))
        #expect(file.contents.isEmpty)
    }

    @Test func bytesPastALengthOnAKeptConnectionAreABadResponseOfThatConnectionNotARefusedScheme() async {
        defer { finish() }
        // Given a response followed by 64 bytes past its length on the kept connection, written once the client has
        // taken the response and asked for the next (held for that request, not for a time: a loaded machine's client
        // could come back after any delay and find the excess on the idle connection, as ThreadSanitizer's CI run did)
        server.route("/overlong", Response(body: .overlong(Data("whole body".utf8), excess: Data(repeating: 0x41, count: 64), sent: .beforeTheNextAnswer)))
        server.route("/next", .ok(Data("next".utf8)))
        let first = await fetch(driver, server.url("/overlong"))
        #expect(first.success?.body == Data("whole body".utf8))

        // When the next request goes over that connection, and then over a fresh one
        let poisoned = await fetch(driver, server.url("/next"))
        let fresh = await fetch(driver, server.url("/next")) { $0.freshConnection = true }

        // Then the first is a bad response on a reused connection (transient), not "a non-HTTP(S) URL"; the second works
        guard case let .badResponse(error, reusedConnection)? = poisoned.failure else {
            Issue.record("expected a bad response, got \(poisoned)")
            return
        }
        #expect(reusedConnection && error.code == 1)
        #expect(poisoned.failure?.isTransient == true)
        #expect(fresh.success?.body == Data("next".utf8))
        #expect(fresh.success?.connectionsOpened == 1)
    }

    @Test func libcurlsLengthLimitsAreNamedNotCalledOutOfMemory() async {
        defer { finish() }
        // Given a response with a 10 MB header line, and a URL of 5 MB
        server.route("/giant-header", Response(headers: [("X-Giant", String(repeating: "a", count: 10_000_000))], body: .bytes(Data("x".utf8))))
        let longURL = server.url("/" + String(repeating: "b", count: 5_000_000))

        // When each is fetched
        let header = await fetch(driver, server.url("/giant-header"))
        let url = await fetch(driver, longURL)

        // Then each failure says which limit it hit, in a short line, and neither claims the machine ran out of memory
        for (result, limit) in [(header, "header"), (url, "URL")] {
            let text = result.failure.map(String.init(describing:)) ?? "no failure"
            #expect(text.contains(limit), "\(text)")
            #expect(!text.contains("Out of memory"), "\(text)")
            #expect(text.count < 300, "\(text.prefix(300))")
        }
    }

    @Test func aFileURLIsRefused() async {
        defer { finish() }
        let result = await fetch(driver, URL(string: "file:///etc/passwd")!)
        #expect(result.failure == .disallowedProtocol(url: "file:///etc/passwd"))
    }

    @Test func truncatedWithContentLength() async {
        defer { finish() }
        let result = await fetch(driver, server.url("/truncated?send=1000&length=5000"))
        #expect(result.failure == .truncated(received: 1000, expected: 5000))
    }

    @Test func truncatedChunkedBody() async {
        defer { finish() }
        let result = await fetch(driver, server.url("/truncated-chunked?send=1000"))
        guard case let .truncated(received, expected)? = result.failure else {
            Issue.record("expected truncation, got \(result)")
            return
        }
        #expect(received == 1000)
        #expect(expected == nil)
    }

    @Test func aBodyEndedByCloseIsComplete() async throws {
        defer { finish() }
        // No Content-Length and no chunking: the close is the end, and that is a whole body.
        server.route("/eof", Response(status: 200, headers: [], body: .untilClose(Data(repeating: 7, count: 3000))))
        let response = try #require(await fetch(driver, server.url("/eof")).success)
        #expect(response.bytesReceived == 3000)
    }

    @Test func connectionResetMidBody() async {
        defer { finish() }
        let result = await fetch(driver, server.url("/reset?send=2000&length=100000"))
        guard case .connectionLost? = result.failure else {
            Issue.record("expected a lost connection, got \(result)")
            return
        }
    }

    @Test func tlsFailure() async {
        defer { finish() }
        // Speaking TLS to a plain-HTTP port fails the handshake.
        let result = await fetch(driver, URL(string: "https://127.0.0.1:\(server.port)/bytes/10")!)
        guard case .tls? = result.failure else {
            Issue.record("expected a TLS failure, got \(result)")
            return
        }
    }

    @Test func errorsReadWell() {
        defer { finish() }
        #expect(TransportError.tooLarge(limit: 10).description == "larger than the limit of 10 bytes")
        #expect(TransportError.truncated(received: 5, expected: 9).description == "truncated body: 5 of 9 bytes")
        #expect(TransportError.stalled(bytesPerSecond: 1000, seconds: 20).description == "stalled: under 1000 bytes/s for 20 s")
        #expect(TransportError.disallowedProtocol(url: "file:///x").isTransient == false)
        #expect(TransportError.truncated(received: 1, expected: nil).isTransient)
    }
}
