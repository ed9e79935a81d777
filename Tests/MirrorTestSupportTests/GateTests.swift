import Foundation
import MirrorTestSupport
import Testing

/// `Gate`: responses held at the moment a test needs, released by the test; arrivals told by the gate, not polled.
@Suite("Gate: responses held until the test opens them", .timeLimit(.minutes(5)))
struct GateTests {
    @Test func aHeldResponseWaitsForTheGateThenGoesOut() async throws {
        // Given a route held by a shut gate, and a client that asked for it
        let server = try TestServer.start()
        defer { server.stop() }
        let gate = Gate()
        server.route("/held", Response.ok(Data("late".utf8)).held(by: gate))
        let connection = try RawHTTPConnection(port: server.port, receiveTimeout: .milliseconds(300))
        connection.sendRequest("/held")

        // When the request has reached the gate (as the gate says)
        #expect(await gate.waitForArrivals(1))

        // Then nothing was answered: the response waits, its request counted and in progress
        #expect(gate.held == 1 && gate.arrivals == 1 && !gate.isOpen)
        #expect(connection.receiveMore() == .timeout)
        #expect(server.totalRequests == 1 && server.maxConcurrentRequests == 1)

        // And once the gate opens it goes out whole, and a later request passes at once
        connection.setReceiveTimeout(.seconds(30))
        gate.open()
        let response = connection.readResponse()
        #expect(response.status == 200 && response.end == .complete && response.body == Array("late".utf8))
        #expect(connection.request("/held").body == Array("late".utf8))
        #expect(gate.held == 0 && gate.arrivals == 2)
    }

    @Test func aGateLettingTwoThroughHoldsTheThird() async throws {
        // Given a gate that lets two responses through
        let server = try TestServer.start()
        defer { server.stop() }
        let gate = Gate(letting: 2)
        server.route(prefix: "/n/") { request in .ok(Data(request.path.utf8)).held(by: gate) }
        let connection = try RawHTTPConnection(port: server.port, receiveTimeout: .milliseconds(300))

        // When three are asked for, one after another on one connection
        let first = connection.request("/n/1")
        let second = connection.request("/n/2")
        connection.sendRequest("/n/3")
        #expect(await gate.waitForArrivals(3))

        // Then the first two were answered, the third waits until the gate opens
        #expect(first.body == Array("/n/1".utf8) && second.body == Array("/n/2".utf8))
        #expect(gate.held == 1)
        #expect(connection.receiveMore() == .timeout)
        connection.setReceiveTimeout(.seconds(30))
        gate.open()
        #expect(connection.readResponse().body == Array("/n/3".utf8))
    }

    @Test func aHeldResponseWhoseClientLeftOrWhoseServerStoppedIsDropped() async throws {
        // Given two held requests: one whose client goes away, one on a server that is then stopped
        let server = try TestServer.start()
        let gate = Gate()
        server.route("/held", Response.ok(Data("late".utf8)).held(by: gate))
        let leaving = try RawHTTPConnection(port: server.port)
        leaving.sendRequest("/held")
        let staying = try RawHTTPConnection(port: server.port, receiveTimeout: .seconds(30))
        staying.sendRequest("/held")
        #expect(await gate.waitForArrivals(2))
        leaving.close()
        #expect(await eventually { server.openConnections == 1 })

        // When the server stops and the gate opens afterwards
        server.stop()
        gate.open()

        // Then the remaining client sees its connection end, and nothing is left in progress
        let end = staying.readToEnd().end
        #expect(end == .closed || end == .reset)
        #expect(server.openConnections == 0)
    }

    @Test func waitingForArrivalsThatDoNotComeEndsAtItsBound() async {
        // Given a gate nobody reaches
        let gate = Gate()

        // When a test waits for an arrival within 50 ms; Then the wait says it did not come
        #expect(await gate.waitForArrivals(1, within: .milliseconds(50)) == false)
        #expect(await gate.waitForArrivals(0, within: .milliseconds(50)))
    }
}
