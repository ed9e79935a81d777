import Foundation
import MirrorTestSupport
import Testing

@Suite("TestServer: every body kind on the wire", .timeLimit(.minutes(5)))
struct ResponseBodyTests {
    private let sample = Data((0..<100).map { UInt8($0) })

    @Test func bytesAreSentWithContentLengthAndKeepAlive() async throws {
        // Given
        let server = try TestServer.start()
        defer { server.stop() }
        server.route("/a", Response(status: 201, headers: [("X-One", "1"), ("Content-Length", "999")], body: .bytes(sample)))
        let connection = try RawHTTPConnection(port: server.port)

        // When
        let response = connection.request("/a")
        let again = connection.request("/a")

        // Then the body kind owns the framing, extra headers pass through
        #expect(response.status == 201)
        #expect(response.header("Content-Length") == "100")
        #expect(response.header("X-One") == "1")
        #expect(response.body == Array(sample) && response.end == .complete)
        #expect(again.body == Array(sample))
        #expect(server.connectionsAccepted == 1)
        #expect(await eventually { server.bodyBytesSent == 200 })
    }

    @Test func dripSendsAPieceEveryInterval() throws {
        // Given 10 bytes, 3 at a time, every 60 ms: pieces at 60, 120, 180, 240 ms
        let server = try TestServer.start()
        defer { server.stop() }
        let data = Data(sample.prefix(10))
        server.route("/drip", Response(body: .drip(data, chunkSize: 3, interval: .milliseconds(60))))

        // When
        let connection = try RawHTTPConnection(port: server.port)
        let (response, elapsed) = measure { connection.request("/drip") }

        // Then
        #expect(response.header("Content-Length") == "10")
        #expect(response.body == Array(data) && response.end == .complete)
        #expect(elapsed >= .milliseconds(240))
        #expect(elapsed < .seconds(2))
        // The keep-alive connection serves the next request once the drip is done.
        #expect(connection.request("/bytes/2").status == 200)
    }

    @Test func dripPiecesArriveOneIntervalApart() throws {
        // Given 30 bytes in pieces of 10, one every 400 ms
        let server = try TestServer.start()
        defer { server.stop() }
        server.route("/drip", Response(body: .drip(sample.prefix(30), chunkSize: 10, interval: .milliseconds(400))))
        let connection = try RawHTTPConnection(port: server.port, receiveTimeout: .milliseconds(200))

        // When reading for 200 ms after the head
        let head = connection.request("/drip")

        // Then the head came at once but no body yet
        #expect(head.status == 200 && head.header("Content-Length") == "30")
        #expect(head.body.isEmpty && head.end == .timeout)

        // When waiting for the first piece, then briefly for more
        connection.setReceiveTimeout(.seconds(2))
        let first = connection.read(count: 10)
        connection.setReceiveTimeout(.milliseconds(150))
        let tooSoon = connection.receiveMore()

        // Then exactly one piece had come
        #expect(first.bytes == Array(sample.prefix(10)) && first.end == nil)
        #expect(tooSoon == .timeout)
    }

    @Test func stallSendsThePrefixAndThenNothingWhileKeepingTheConnection() async throws {
        // Given
        let server = try TestServer.start()
        defer { server.stop() }
        server.route("/stall", Response(body: .stall(prefix: sample.prefix(5), declaredLength: 100)))
        let connection = try RawHTTPConnection(port: server.port, receiveTimeout: .milliseconds(300))

        // When
        let response = connection.request("/stall")

        // Then
        #expect(response.header("Content-Length") == "100")
        #expect(response.body == Array(sample.prefix(5)))
        #expect(response.end == .timeout)
        #expect(server.openConnections == 1)

        // When the client gives up, the server lets go
        connection.close()
        #expect(await eventually { server.openConnections == 0 })
    }

    @Test func truncatedSendsLessThanDeclaredThenCloses() throws {
        // Given
        let server = try TestServer.start()
        defer { server.stop() }
        server.route("/t", Response(body: .truncated(sample.prefix(10), declaredLength: 100)))
        let connection = try RawHTTPConnection(port: server.port)

        // When
        let response = connection.request("/t")

        // Then an orderly close, short of the declared length
        #expect(response.header("Content-Length") == "100")
        #expect(response.header("Connection") == "close")
        #expect(response.body == Array(sample.prefix(10)))
        #expect(response.end == .closed)
    }

    @Test func truncatedChunkedClosesWithoutTheLastChunk() throws {
        // Given
        let server = try TestServer.start()
        defer { server.stop() }
        server.route("/tc", Response(body: .truncatedChunked(sample)))
        let connection = try RawHTTPConnection(port: server.port)

        // When
        let response = connection.request("/tc")

        // Then the chunk arrives whole, but the zero-length chunk never does
        #expect(response.header("Transfer-Encoding") == "chunked")
        #expect(response.header("Content-Length") == nil)
        #expect(response.body == Array(sample))
        #expect(response.end == .closed)
    }

    @Test func untilCloseIsDelimitedByTheClose() throws {
        // Given
        let server = try TestServer.start()
        defer { server.stop() }
        server.route("/uc", Response(body: .untilClose(sample)))
        let connection = try RawHTTPConnection(port: server.port)

        // When
        let response = connection.request("/uc")

        // Then neither length nor chunking, and a close after the whole body
        #expect(response.header("Content-Length") == nil)
        #expect(response.header("Transfer-Encoding") == nil)
        #expect(response.header("Connection") == "close")
        #expect(response.body == Array(sample))
        #expect(response.end == .closed)
    }

    @Test func resetAbortsWithRST() async throws {
        // Given
        let server = try TestServer.start()
        defer { server.stop() }
        server.route("/r", Response(body: .reset(prefix: sample.prefix(10), declaredLength: 100)))
        let connection = try RawHTTPConnection(port: server.port)

        // When
        let response = connection.request("/r")

        // Then the client sees ECONNRESET, not a FIN, and at most the prefix
        #expect(response.header("Content-Length") == "100")
        #expect(response.end == .reset)
        #expect(Array(sample.prefix(10)).starts(with: response.body))
        #expect(await eventually { server.openConnections == 0 })
    }

    @Test(arguments: [true, false])
    func generatedBodiesStreamTheDeterministicPattern(includeContentLength: Bool) async throws {
        // Given a size that is not a multiple of the 64 KiB chunk
        let server = try TestServer.start()
        defer { server.stop() }
        let size = 8 * 1024 * 1024 + 7
        server.route("/g", Response(body: .generated(size: size, includeContentLength: includeContentLength)))
        let connection = try RawHTTPConnection(port: server.port)

        // When
        let response = connection.request("/g")

        // Then
        #expect(response.end == .complete)
        #expect(response.header("Content-Length") == (includeContentLength ? "\(size)" : nil))
        #expect(response.header("Transfer-Encoding") == (includeContentLength ? nil : "chunked"))
        #expect(response.body.count == size)
        #expect(Data(response.body) == DeterministicBytes.data(count: size))
        // Still usable afterwards: the framing was exact.
        #expect(connection.request("/bytes/1").status == 200)
        #expect(await eventually { server.bodyBytesSent == size + 1 })
    }

    @Test(arguments: [true, false])
    func emptyGeneratedBodiesAreValid(includeContentLength: Bool) throws {
        // Given
        let server = try TestServer.start()
        defer { server.stop() }
        server.route("/g0", Response(body: .generated(size: 0, includeContentLength: includeContentLength)))
        let connection = try RawHTTPConnection(port: server.port)

        // When
        let response = connection.request("/g0")

        // Then
        #expect(response.end == .complete && response.body.isEmpty)
        #expect(connection.request("/bytes/1").status == 200)
    }

    @Test func generatedBodiesRespectBackpressure() throws {
        // Given a 16 GiB body that the client stops reading after 1 MiB
        let server = try TestServer.start()
        defer { server.stop() }
        let connection = try RawHTTPConnection(port: server.port)
        connection.sendRequest("/huge?size=\(16 << 30)")
        let head = connection.readResponseHead()
        let received = connection.read(count: 1 << 20)
        #expect(head.status == 200 && head.header("Content-Length") == "\(16 << 30)")
        #expect(received.end == nil && Data(received.bytes) == DeterministicBytes.data(count: 1 << 20))

        // When the client sits still
        usleep(300_000)
        let sentWhileIdle = server.bodyBytesSent

        // Then the server only filled the socket buffers instead of racing ahead
        #expect(sentWhileIdle < 64 << 20, "sent \(sentWhileIdle) bytes to an idle client")

        // And when the client reads again the stream resumes, in pattern, where it left off
        var offset = 1 << 20
        var inPattern = true
        for _ in 0..<64 where server.bodyBytesSent <= sentWhileIdle {
            let more = connection.read(count: 1 << 20)
            inPattern = inPattern && more.end == nil && Data(more.bytes) == DeterministicBytes.data(count: 1 << 20, offset: offset)
            offset += 1 << 20
        }
        #expect(inPattern)
        #expect(server.bodyBytesSent > sentWhileIdle)
    }

    @Test func noBodyStatusesSendNoBodyOrLength() throws {
        // Given
        let server = try TestServer.start()
        defer { server.stop() }
        server.route("/nc", .status(204, body: Data("ignored".utf8)))
        let connection = try RawHTTPConnection(port: server.port)

        // When
        let response = connection.request("/nc")
        let next = connection.request("/bytes/2")

        // Then
        #expect(response.status == 204 && response.header("Content-Length") == nil)
        #expect(next.status == 200 && next.body.count == 2)
    }

    @Test func routeConnectionCloseHeaderClosesAfterTheResponse() throws {
        // Given
        let server = try TestServer.start()
        defer { server.stop() }
        server.route("/bye", Response(headers: [("Connection", "close")], body: .bytes(sample)))
        let connection = try RawHTTPConnection(port: server.port)

        // When
        let response = connection.request("/bye")

        // Then
        #expect(response.body == Array(sample))
        #expect(response.headers.filter { $0.0 == "Connection" }.count == 1)
        #expect(connection.readToEnd().end == .closed)
    }
}
