import Foundation
import MirrorTestSupport
import Testing

@Suite("TestServer: built-in routes", .timeLimit(.minutes(5)))
struct BuiltinRoutesTests {
    @Test func bytesAreDeterministic() throws {
        // Given
        let server = try TestServer.start()
        defer { server.stop() }
        let connection = try RawHTTPConnection(port: server.port)

        // When
        let first = connection.request("/bytes/1000")
        let second = connection.request("/bytes/1000")
        let shorter = connection.request("/bytes/300")

        // Then: byte i is i % 251, the same every time, and shorter bodies are prefixes
        #expect(first.status == 200 && first.header("Content-Length") == "1000")
        #expect(first.body == second.body)
        #expect(first.body == (0..<1000).map { UInt8($0 % 251) })
        #expect(Array(first.body.prefix(300)) == shorter.body)
        #expect(DeterministicBytes.data(count: 5, offset: 250) == Data([250, 0, 1, 2, 3]))
        #expect(connection.request("/bytes/0").body.isEmpty)
        #expect(connection.request("/bytes/-1").status == 400)
    }

    @Test(arguments: [200, 404, 429, 500, 503])
    func statusRoutesAnswerWithThatStatus(code: Int) throws {
        // Given
        let server = try TestServer.start()
        defer { server.stop() }
        let connection = try RawHTTPConnection(port: server.port)

        // When
        let response = connection.request("/status/\(code)")

        // Then
        #expect(response.status == code)
        #expect(String(decoding: response.body, as: UTF8.self).hasPrefix("\(code) "))
        #expect(response.header("Retry-After") == nil)
    }

    @Test func statusRoutesCarryRetryAfter() throws {
        // Given
        let server = try TestServer.start()
        defer { server.stop() }
        let connection = try RawHTTPConnection(port: server.port)

        // When
        let seconds = connection.request("/status/503?retry-after=2")
        let date = connection.request("/status/429?retry-after=Wed,%2021%20Oct%202015%2007:28:00%20GMT")

        // Then
        #expect(seconds.status == 503 && seconds.header("Retry-After") == "2")
        #expect(date.status == 429 && date.header("Retry-After") == "Wed, 21 Oct 2015 07:28:00 GMT")
    }

    @Test func redirectChainsCountDownToTheTarget() throws {
        // Given
        let server = try TestServer.start()
        defer { server.stop() }
        let connection = try RawHTTPConnection(port: server.port)

        // When following /redirect/3 by hand
        var locations: [String] = []
        var target = "/redirect/3"
        for _ in 0..<5 {
            let response = connection.request(target)
            guard response.status == 302, let location = response.header("Location") else { break }
            locations.append(location)
            target = location
        }
        let final = connection.request(target)

        // Then three hops, ending at 16 bytes
        #expect(locations == ["/redirect/2", "/redirect/1", "/bytes/16"])
        #expect(final.status == 200 && final.body.count == 16)
    }

    @Test func redirectChainsCanEndAnywhere() throws {
        // Given
        let server = try TestServer.start()
        defer { server.stop() }
        let connection = try RawHTTPConnection(port: server.port)

        // When
        let two = connection.request("/redirect/2?to=/status/418")
        let one = connection.request(two.header("Location") ?? "")
        let zero = connection.request("/redirect/0?to=/bytes/5")

        // Then
        #expect(two.header("Location") == "/redirect/1?to=/status/418")
        #expect(one.header("Location") == "/status/418")
        #expect(zero.status == 200 && zero.body.count == 5)
    }

    @Test func loopRedirectsToItself() throws {
        // Given
        let server = try TestServer.start()
        defer { server.stop() }
        let connection = try RawHTTPConnection(port: server.port)

        // When
        let responses = (0..<3).map { _ in connection.request("/loop") }

        // Then
        #expect(responses.allSatisfy { $0.status == 302 && $0.header("Location") == "/loop" })
        #expect(server.requestCount(path: "/loop") == 3)
    }

    @Test(arguments: ["file:///etc/passwd", "ftp://example.com/a.jpg", "http://127.0.0.1:1/x?a=1&b=2"])
    func redirectToSendsTheDecodedLocation(location: String) throws {
        // Given
        let server = try TestServer.start()
        defer { server.stop() }
        let connection = try RawHTTPConnection(port: server.port)
        let encoded = location.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!

        // When
        let response = connection.request("/redirect-to?url=\(encoded)")
        let permanent = connection.request("/redirect-to?url=\(encoded)&status=301")

        // Then
        #expect(response.status == 302 && response.header("Location") == location)
        #expect(permanent.status == 301 && permanent.header("Location") == location)
    }

    @Test func dripByQuery() throws {
        // Given
        let server = try TestServer.start()
        defer { server.stop() }
        let connection = try RawHTTPConnection(port: server.port)

        // When
        let (response, elapsed) = measure { connection.request("/drip?bytes=20&chunk=5&ms=50") }

        // Then four pieces, 50 ms apart
        #expect(response.status == 200 && response.header("Content-Length") == "20")
        #expect(Data(response.body) == DeterministicBytes.data(count: 20) && response.end == .complete)
        #expect(elapsed >= .milliseconds(200))
    }

    @Test func stallByQuery() throws {
        // Given
        let server = try TestServer.start()
        defer { server.stop() }
        let connection = try RawHTTPConnection(port: server.port, receiveTimeout: .milliseconds(300))

        // When
        let response = connection.request("/stall?prefix=7&length=70")

        // Then
        #expect(response.header("Content-Length") == "70")
        #expect(Data(response.body) == DeterministicBytes.data(count: 7))
        #expect(response.end == .timeout)
    }

    @Test func truncatedByQuery() throws {
        // Given
        let server = try TestServer.start()
        defer { server.stop() }
        let connection = try RawHTTPConnection(port: server.port)

        // When
        let response = connection.request("/truncated?send=40&length=400")

        // Then
        #expect(response.header("Content-Length") == "400")
        #expect(Data(response.body) == DeterministicBytes.data(count: 40))
        #expect(response.end == .closed)
    }

    @Test func truncatedChunkedByQuery() throws {
        // Given
        let server = try TestServer.start()
        defer { server.stop() }
        let connection = try RawHTTPConnection(port: server.port)

        // When
        let response = connection.request("/truncated-chunked?send=40")

        // Then
        #expect(response.header("Transfer-Encoding") == "chunked")
        #expect(Data(response.body) == DeterministicBytes.data(count: 40))
        #expect(response.end == .closed)
    }

    @Test func untilCloseByQuery() throws {
        // Given
        let server = try TestServer.start()
        defer { server.stop() }
        let connection = try RawHTTPConnection(port: server.port)

        // When
        let response = connection.request("/until-close?bytes=40")

        // Then
        #expect(response.header("Content-Length") == nil && response.header("Transfer-Encoding") == nil)
        #expect(Data(response.body) == DeterministicBytes.data(count: 40))
        #expect(response.end == .closed)
    }

    @Test func resetByQuery() throws {
        // Given
        let server = try TestServer.start()
        defer { server.stop() }
        let connection = try RawHTTPConnection(port: server.port)

        // When
        let response = connection.request("/reset?send=40&length=400")

        // Then
        #expect(response.header("Content-Length") == "400")
        #expect(response.end == .reset)
    }

    @Test(arguments: ["1", "0"])
    func hugeByQuery(length: String) throws {
        // Given
        let server = try TestServer.start()
        defer { server.stop() }
        let connection = try RawHTTPConnection(port: server.port)
        let size = 300_001

        // When
        let response = connection.request("/huge?size=\(size)&length=\(length)")

        // Then
        #expect(response.header("Content-Length") == (length == "1" ? "\(size)" : nil))
        #expect(response.header("Transfer-Encoding") == (length == "1" ? nil : "chunked"))
        #expect(Data(response.body) == DeterministicBytes.data(count: size) && response.end == .complete)
    }

    @Test func headersAreEchoedAsJSON() throws {
        // Given
        let server = try TestServer.start()
        defer { server.stop() }
        let connection = try RawHTTPConnection(port: server.port)

        // When
        let response = connection.request("/headers", headers: [("User-Agent", "mirror/1.0"), ("Accept", "image/*"), ("X-Dup", "a"), ("x-dup", "b")])
        let json = try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: String]

        // Then
        #expect(response.header("Content-Type") == "application/json")
        #expect(json?["user-agent"] == "mirror/1.0")
        #expect(json?["accept"] == "image/*")
        #expect(String(decoding: response.body, as: UTF8.self).contains("mirror/1.0"))
        #expect(json?["x-dup"] == "a, b")
        #expect(json?["host"] == "127.0.0.1:\(server.port)")
    }

    @Test func slowDelaysThenSends16Bytes() throws {
        // Given
        let server = try TestServer.start()
        defer { server.stop() }
        let connection = try RawHTTPConnection(port: server.port)

        // When
        let (response, elapsed) = measure { connection.request("/slow?ms=200") }

        // Then
        #expect(response.status == 200 && response.body.count == 16)
        #expect(elapsed >= .milliseconds(200))
    }

    @Test func unknownPathsAre404() throws {
        // Given
        let server = try TestServer.start()
        defer { server.stop() }
        let connection = try RawHTTPConnection(port: server.port)

        // When
        let responses = ["/", "/nope", "/bytes/", "/bytes/1/2", "/status/abc"].map { connection.request($0).status }

        // Then
        #expect(responses == [404, 404, 404, 404, 400])
        #expect(server.connectionsAccepted == 1)
    }
}
