import Foundation
import MirrorSync
import MirrorTestSupport
import MirrorTransport
import Testing
@testable import MirrorTransport

@Suite("Cancellation, connection reuse and leaks", .serialized)
struct ConcurrencyTests {
    @Test func cancelFromAnotherThreadCompletesPromptly() async throws {
        // Given a transfer stalled mid-body
        let server = try TestServer.start()
        defer { server.stop() }
        let driver = CurlMultiDriver()
        defer { driver.shutdown() }
        let completed = Locked<(Result<HTTPResponse, TransportError>, ContinuousClock.Instant)?>(nil)
        var stalled = TransferRequest(url: server.url("/stall?prefix=10&length=1000"))
        // Only the cancel may end it, however slow the machine: no stall detection within the test's time.
        stalled.stall = .init(minimumBytesPerSecond: 1, window: .seconds(600))
        let task = driver.start(stalled) { result in
            completed.withLock { $0 = (result, .now) }
        }
        #expect(await eventually { server.requestCount(path: "/stall") == 1 })
        try await Task.sleep(for: .milliseconds(100))

        // When another thread cancels it
        let cancelledAt = Locked<ContinuousClock.Instant?>(nil)
        DispatchQueue.global().async {
            cancelledAt.withLock { $0 = .now }
            task.cancel()
        }

        // Then its completion is `.cancelled`, well within 100 ms (asserted with a margin for noisy machines)
        #expect(await eventually { completed.withLock { $0 != nil } })
        let (result, finishedAt) = try #require(completed.withLock { $0 })
        let start = try #require(cancelledAt.withLock { $0 })
        #expect(result.failure == .cancelled)
        let latency = finishedAt - start
        print("cancel-to-completion latency: \(latency)")
        #expect(latency < .milliseconds(500))
        // And its socket is released: the server sees the connection close.
        #expect(await eventually { server.openConnections == 0 })
    }

    @Test func asyncPerformIsCancelledWithItsTask() async throws {
        let server = try TestServer.start()
        defer { server.stop() }
        let driver = CurlMultiDriver()
        defer { driver.shutdown() }

        // Only the cancel may end it: with the default 20-s stall limit, a cancel sent late by a test whose threads
        // other suites held (two spinners and a load of 12) found the transfer already failed as stalled.
        var stalled = TransferRequest(url: server.url("/stall?prefix=10&length=1000"))
        stalled.stall = .init(minimumBytesPerSecond: 1, window: .seconds(600))
        let task = Task { [stalled] in try await driver.perform(stalled) }
        #expect(await eventually(within: .seconds(300)) { server.requestCount(path: "/stall") == 1 })
        task.cancel()
        let result = await task.result
        #expect((result.failure as? TransportError) == .cancelled)
        #expect(driver.activeTransferCount == 0)
    }

    @Test func connectionsAreReused() async throws {
        // Given 500 requests to one host, at most 16 in flight at any time
        let server = try TestServer.start()
        defer { server.stop() }
        // A little latency so that the 16 requests really overlap at the server.
        server.latency = .milliseconds(5)
        // Idle connections kept for ten minutes, not libcurl's 118 seconds: how many connections carried the requests
        // must not depend on how long this process, running other suites beside it, takes to start the next one.
        let driver = CurlMultiDriver(maximumConnectionAge: .seconds(600))
        defer { driver.shutdown() }
        let total = 500
        let width = 16

        // When they run
        let statuses = await withTaskGroup(of: Int.self, returning: [Int].self) { group in
            var next = 0
            var statuses: [Int] = []
            func launch() {
                let index = next
                next += 1
                group.addTask { (await fetch(driver, server.url("/bytes/\(1000 + index % 7)"))).success?.status ?? -1 }
            }
            for _ in 0..<width { launch() }
            for await status in group {
                statuses.append(status)
                if next < total { launch() }
            }
            return statuses
        }

        // Then all succeed over at most 16 TCP connections
        #expect(statuses.count == total)
        #expect(statuses.allSatisfy { $0 == 200 })
        print("500 requests, 16 at a time: \(server.connectionsAccepted) TCP connections, max \(server.maxConcurrentRequests) concurrent")
        #expect(server.connectionsAccepted <= width)
        #expect(server.maxConcurrentRequests <= width)
        #expect(server.maxConcurrentRequests >= width / 2)
    }

    @Test func thousandTransfersWithRandomCancellationsLeakNothing() async throws {
        let server = try TestServer.start()
        defer { server.stop() }
        server.latency = .milliseconds(20)
        // The driver's threads are named for this test and the sockets counted are those to this test's server: the other
        // suites run in this process at the same time, so the process's totals of threads and descriptors are theirs too.
        let threadName = "leak-\(server.port)"
        var generator = SystemRandomNumberGenerator()

        let completions = Locked<[Int: Int]>([:])
        let outcomes = Locked<(ok: Int, cancelled: Int, other: [String: Int])>((0, 0, [:]))
        do {
            let driver = CurlMultiDriver(threadName: threadName, maximumConnectionAge: nil)
            #expect(await eventually { threadCount(named: threadName) == 1 })
            var tasks: [TransferTask] = []
            for index in 0..<1000 {
                let path = index % 10 == 0 ? "/stall?prefix=10&length=100" : "/bytes/\(500 + index % 13)"
                // Generous limits: 1,000 connections at once to an instrumented server (ThreadSanitizer) on a loaded
                // machine can take longer than the default 10 s to be accepted, and a body longer than the default 20 s
                // under 1,000 bytes/s to arrive (a CI run saw 581 of them fail so, the ten-percent held ones among them,
                // before the test came to cancel those); neither timeout is what this test is about.
                var request = TransferRequest(url: server.url(path))
                request.connectTimeout = .seconds(600)
                request.stall = TransferRequest.StallPolicy(minimumBytesPerSecond: 1, window: .seconds(600))
                let task = driver.start(request) { result in
                    completions.withLock { $0[index, default: 0] += 1 }
                    outcomes.withLock { counts in
                        switch result {
                        case .success: counts.ok += 1
                        case .failure(.cancelled): counts.cancelled += 1
                        case let .failure(error): counts.other[error.description, default: 0] += 1
                        }
                    }
                }
                tasks.append(task)
                if Int.random(in: 0..<4, using: &generator) == 0 {
                    let victim = tasks[Int.random(in: 0..<tasks.count, using: &generator)]
                    DispatchQueue.global().async { victim.cancel() }
                }
            }
            // Cancel whatever is still stalled, then wait for every completion.
            #expect(await eventually(within: .seconds(300)) {
                driver.activeTransferCount <= 100
            })
            // The stalled transfers hold their connections: what the count below must see fall to zero.
            #expect(openSocketCount(toPort: server.port) > 0)
            for (index, task) in tasks.enumerated() where index % 10 == 0 { task.cancel() }
            #expect(await eventually(within: .seconds(300)) { driver.activeTransferCount == 0 })
            driver.shutdown()
        }

        // Every transfer completed exactly once
        let counts = completions.withLock { $0 }
        #expect(counts.count == 1000)
        #expect(counts.values.allSatisfy { $0 == 1 })
        let (ok, cancelled, other) = outcomes.withLock { $0 }
        print("1000 transfers: \(ok) ok, \(cancelled) cancelled, \(other.values.reduce(0, +)) other")
        #expect(ok + cancelled == 1000)
        #expect(other.isEmpty, "failed otherwise: \(other)")
        #expect(cancelled >= 100)
        // No thread or socket outlives the driver, and every connection is closed at both ends.
        #expect(await eventually { threadCount(named: threadName) == 0 })
        #expect(await eventually { openSocketCount(toPort: server.port) == 0 })
        #expect(await eventually { server.openConnections == 0 })
    }

    @Test func startingAfterShutdownCompletesAsCancelled() async throws {
        let driver = CurlMultiDriver()
        driver.shutdown()
        driver.shutdown()
        let result = await fetch(driver, URL(string: "http://127.0.0.1:1/")!)
        #expect(result.failure == .cancelled)
    }
}
