import Foundation
import MirrorSync
import MirrorTestSupport
import Testing
@testable import MirrorTransport

@Suite("Responses and their metadata")
struct ResponseTests {
    @Test func metadataOfAPlainResponse() async throws {
        // Given a route with every header the transport reports
        let server = try TestServer.start()
        defer { server.stop() }
        let payload = Data((0..<5000).map { UInt8($0 % 251) })
        server.route("/meta", Response(
            status: 200,
            headers: [
                ("Content-Type", "image/png"), ("ETag", "\"abc123\""),
                ("Last-Modified", "Wed, 21 Oct 2015 07:28:00 GMT"), ("Retry-After", "7"),
            ],
            body: .bytes(payload)
        ))
        let driver = CurlMultiDriver()
        defer { driver.shutdown() }

        // When it is fetched into memory
        let response = try #require(await fetch(driver, server.url("/meta")).success)

        // Then every field is read from the response
        #expect(response.status == 200)
        #expect(response.contentType == "image/png")
        #expect(response.contentLength == 5000)
        #expect(response.etag == "\"abc123\"")
        #expect(response.lastModified == "Wed, 21 Oct 2015 07:28:00 GMT")
        #expect(response.retryAfter() == .seconds(7))
        #expect(response.effectiveURL == server.url("/meta"))
        #expect(response.redirectCount == 0)
        #expect(response.bytesReceived == 5000)
        #expect(response.body == payload)
        #expect(response.connectionsOpened == 1)
        #expect(response.timings.total > .zero)
        #expect(response.timings.firstByte <= response.timings.total)
    }

    @Test func sendsTheUserAgentAndAcceptsEveryEncoding() async throws {
        let server = try TestServer.start()
        defer { server.stop() }
        let driver = CurlMultiDriver()
        defer { driver.shutdown() }

        _ = try #require(await fetch(driver, server.url("/bytes/10")).success)

        let request = try #require(server.requests.last)
        #expect(request.header("User-Agent") == MirrorVersion.userAgent)
        #expect(MirrorVersion.userAgent.hasPrefix("mirror/\(MirrorVersion.current) "))
        let encodings = try #require(request.header("Accept-Encoding"))
        #expect(encodings.contains("gzip"))
        #expect(encodings.contains("deflate"))
    }

    @Test func sendsHeadersAndAPostBody() async throws {
        let server = try TestServer.start()
        defer { server.stop() }
        let driver = CurlMultiDriver()
        defer { driver.shutdown() }

        let response = try #require(await fetch(driver, server.url("/bytes/4")) { request in
            request.method = "POST"
            request.body = Data("grant_type=client_credentials".utf8)
            request.headers = [("Content-Type", "application/x-www-form-urlencoded"), ("X-Test", "yes")]
        }.success)

        #expect(response.status == 200)
        let recorded = try #require(server.requests.last)
        #expect(recorded.method == "POST")
        #expect(recorded.header("X-Test") == "yes")
        #expect(String(decoding: recorded.body, as: UTF8.self) == "grant_type=client_credentials")
    }

    @Test func followsARedirectChain() async throws {
        let server = try TestServer.start()
        defer { server.stop() }
        let driver = CurlMultiDriver()
        defer { driver.shutdown() }

        let response = try #require(await fetch(driver, server.url("/redirect/3")).success)

        #expect(response.status == 200)
        #expect(response.redirectCount == 3)
        #expect(response.effectiveURL.path == "/bytes/16")
        #expect(response.bytesReceived == 16)
        #expect(server.requestCount(path: "/bytes/16") == 1)
    }

    @Test func anErrorStatusIsAResponseWithItsBody() async throws {
        let server = try TestServer.start()
        defer { server.stop() }
        server.route("/missing", .status(404, headers: [("Content-Type", "text/html")], body: Data("<html>gone</html>".utf8)))
        let driver = CurlMultiDriver()
        defer { driver.shutdown() }

        let response = try #require(await fetch(driver, server.url("/missing")).success)

        #expect(response.status == 404)
        #expect(!response.isSuccess)
        #expect(String(decoding: response.body, as: UTF8.self) == "<html>gone</html>")
    }
}

@Suite("Destinations")
struct DestinationTests {
    @Test func aFileReceivesASuccessfulBody() async throws {
        let server = try TestServer.start()
        defer { server.stop() }
        let file = TemporaryFile()
        let driver = CurlMultiDriver()
        defer { driver.shutdown() }

        let response = try #require(await fetch(driver, TransferRequest(url: server.url("/bytes/300000"), destination: .file(descriptor: file.descriptor))).success)

        #expect(response.status == 200)
        #expect(response.body.isEmpty)
        #expect(file.contents.count == 300_000)
        #expect(file.contents == DeterministicBytes.data(count: 300_000))
    }

    @Test func aFileNeverReceivesAnErrorBody() async throws {
        let server = try TestServer.start()
        defer { server.stop() }
        server.route("/missing", .status(404, body: Data("not here".utf8)))
        let file = TemporaryFile()
        let driver = CurlMultiDriver()
        defer { driver.shutdown() }

        let response = try #require(await fetch(driver, TransferRequest(url: server.url("/missing"), destination: .file(descriptor: file.descriptor))).success)

        #expect(response.status == 404)
        #expect(file.contents.isEmpty)
        #expect(String(decoding: response.body, as: UTF8.self) == "not here")
    }

    @Test func aSinkSeesEveryChunkAndCanRefuse() async throws {
        final class CountingSink: TransferSink, Sendable {
            // Written on the driver thread, read by the test: under a lock (ThreadSanitizer did not see the completion's
            // ordering through libcurl, and once reported the read as a race).
            private let count = Locked(0)
            let failAfter: Int?
            var received: Int { count.withLock { $0 } }
            init(failAfter: Int? = nil) { self.failAfter = failAfter }
            struct Full: Error, CustomStringConvertible { var description: String { "disk full" } }
            func write(_ chunk: UnsafeRawBufferPointer) throws {
                let total = count.withLock { $0 += chunk.count; return $0 }
                if let failAfter, total > failAfter { throw Full() }
            }
        }
        let server = try TestServer.start()
        defer { server.stop() }
        let driver = CurlMultiDriver()
        defer { driver.shutdown() }

        let sink = CountingSink()
        let ok = await fetch(driver, TransferRequest(url: server.url("/bytes/200000"), destination: .sink(sink)))
        #expect(ok.success?.bytesReceived == 200_000)
        #expect(sink.received == 200_000)

        let refusing = CountingSink(failAfter: 1000)
        let refused = await fetch(driver, TransferRequest(url: server.url("/bytes/200000"), destination: .sink(refusing)))
        #expect(refused.failure == .destinationFailed("disk full"))
    }
}

@Suite("Retry-After")
struct RetryAfterTests {
    @Test func parsesSecondsAndDates() throws {
        let now = Date(timeIntervalSince1970: 1_700_000_000)
        #expect(RetryAfter.parse("120", now: now) == .seconds(120))
        #expect(RetryAfter.parse(" 0 ", now: now) == .seconds(0))
        #expect(RetryAfter.parse("-3", now: now) == nil)
        #expect(RetryAfter.parse("soon", now: now) == nil)
        let later = now.addingTimeInterval(90)
        #expect(RetryAfter.parse(RetryAfter.format(later), now: now) == .seconds(90))
        // A date in the past means no wait, not a negative one.
        #expect(RetryAfter.parse(RetryAfter.format(now.addingTimeInterval(-60)), now: now) == .zero)
        // The obsolete RFC 850 and asctime forms are accepted too.
        #expect(RetryAfter.httpDate("Sunday, 06-Nov-94 08:49:37 GMT") == Date(timeIntervalSince1970: 784_111_777))
        #expect(RetryAfter.httpDate("Sun Nov  6 08:49:37 1994") == Date(timeIntervalSince1970: 784_111_777))
    }

    @Test("the one parser: decimal seconds, and a date measured from the response's own clock")
    func decimalSecondsAndTheServersClock() throws {
        // Given a server whose clock is an hour behind ours
        let ours = Date(timeIntervalSince1970: 1_700_000_000)
        let theirs = ours.addingTimeInterval(-3600)

        // Then a date 30 s after the server's own Date header is a 30-s wait, not an instant (as from our clock)
        let thirtySecondsOn = RetryAfter.format(theirs.addingTimeInterval(30))
        #expect(RetryAfter.delay(thirtySecondsOn, date: RetryAfter.format(theirs), now: ours) == .seconds(30))
        #expect(RetryAfter.delay(thirtySecondsOn, date: nil, now: ours) == .zero)
        // and an unreadable Date header falls back to our clock
        #expect(RetryAfter.delay("12", date: "yesterday", now: ours) == .seconds(12))
        #expect(RetryAfter.delay(nil, date: RetryAfter.format(theirs), now: ours) == nil)
        // and fractions of a second, as some APIs send them, are kept to the millisecond
        #expect(RetryAfter.parse("1.5", now: ours) == .milliseconds(1500))
        #expect(RetryAfter.parse("-0.5", now: ours) == nil)
        #expect(RetryAfter.parse("nan", now: ours) == nil)
        #expect(RetryAfter.parse("1e300", now: ours) == .seconds(1_000_000_000_000))
    }
}
