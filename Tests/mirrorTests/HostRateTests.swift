import Foundation
import MirrorTestSupport
import Testing

/// `--host-rate`, measured by the server's own log of when each request arrived and for which host: no host gets more
/// than the rate in any one-second window, its site files (robots.txt and the TDMRep file) included; split by host over
/// four copies running at once, the same holds across the copies (each host is in one copy).
@Suite("mirror urls --host-rate, end to end", .serialized)
struct HostRateTests {
    static let hosts = (0..<8).map { "site-\($0).test" }
    static let perHost = 15
    static let rate = 5

    private func serve(rows: Int = hosts.count * perHost, latency: Duration = .zero) throws -> TestServer {
        let server = try TestServer.start(latency: latency)
        for index in 0..<rows {
            server.route("/i/\(index).png", .ok(TestImages.png(width: 24, height: 24, seed: UInt64(index)), contentType: "image/png"))
        }
        return server
    }

    /// The table: rows round robin over the hosts.
    private func table(_ server: TestServer, hosts: [String] = hosts, perHost: Int = perHost) -> String {
        (0..<(hosts.count * perHost)).map { index in
            "http://\(hosts[index % hosts.count]):\(server.port)/i/\(index).png"
        }.joined(separator: "\n") + "\n"
    }

    /// The arrival times of each host's requests, by the `Host` header.
    private static func arrivals(_ server: TestServer) -> [String: [ContinuousClock.Instant]] {
        var byHost: [String: [ContinuousClock.Instant]] = [:]
        for request in server.requests {
            let host = request.headers.first { $0.0.lowercased() == "host" }?.1.split(separator: ":").first.map(String.init) ?? "?"
            byHost[host, default: []].append(request.arrivedAt)
        }
        return byHost.mapValues { $0.sorted() }
    }

    /// The most requests of one host that arrived within any one second.
    private static func busiestSecond(_ times: [ContinuousClock.Instant]) -> Int {
        var most = 0
        var start = 0
        for end in times.indices {
            while times[end] - times[start] >= .seconds(1) { start += 1 }
            most = max(most, end - start + 1)
        }
        return most
    }

    private static func check(
        _ server: TestServer, hosts: [String] = hosts, perHost: Int = perHost, siteFiles: Bool = true, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        let arrivals = arrivals(server)
        #expect(Set(arrivals.keys) == Set(hosts), "\(arrivals.keys)", sourceLocation: sourceLocation)
        for (host, times) in arrivals {
            // Every image and the host's robots.txt and TDMRep file
            let requests = perHost + (siteFiles ? 2 : 0)
            #expect(times.count == requests, "\(host): \(times.count) requests", sourceLocation: sourceLocation)
            // The rate spaces the requests' starts; they arrive a little later, each by its own delay (a loaded
            // ThreadSanitizer run delivered one ~50 ms late, next to the following one: 6 within a second at rate 5).
            // One more than the rate allows that jitter and still tells the rate kept from copies each keeping their
            // own (4 × 5 a second).
            #expect(busiestSecond(times) <= rate + 1, "\(host): \(busiestSecond(times)) requests in one second: \(times.map { $0 - times[0] })", sourceLocation: sourceLocation)
            // Spaced by the rate, not merely few: 16 requests take at least 15 spacings
            if let first = times.first, let last = times.last {
                #expect(last - first >= .milliseconds(200 * (requests - 1)), "\(host): all in \(last - first)", sourceLocation: sourceLocation)
            }
        }
    }

    @Test func noHostGetsMoreThanTheRateInAnySecond() async throws {
        let server = try serve()
        defer { server.stop() }
        let work = TemporaryFolder()
        let file = work.file("table.txt")
        try table(server).write(to: file, atomically: true, encoding: .utf8)
        let run = try await MirrorBinary.run([
            "urls", file.path, "--out", work.file("out").path, "--host-rate", String(Self.rate), "--concurrency", "32",
            "--per-host", "8", "--connect-to", "::127.0.0.1:\(server.port)", "--quiet", "--json",
        ])
        #expect(run.status == 0, "\(run.stderr.suffix(400))")
        Self.check(server)
    }

    /// Many hosts and slow answers, so that downloads wait for a global slot: what waits for one is not spaced already.
    /// Taken when queued rather than when started, a host's spacing let 6 of its requests arrive within one second here
    /// once slots came free together (issue 35).
    @Test("40 hosts, 400 rows, 64 at once, 4 per host: the rate holds", arguments: [false, true])
    func manyHostsAtHighConcurrency(siteFiles: Bool) async throws {
        let hosts = (0..<40).map { "host-\($0).test" }
        let server = try serve(rows: 400, latency: .milliseconds(400))
        defer { server.stop() }
        let work = TemporaryFolder()
        let file = work.file("table.txt")
        try table(server, hosts: hosts, perHost: 10).write(to: file, atomically: true, encoding: .utf8)
        let run = try await MirrorBinary.run([
            "urls", file.path, "--out", work.file("out").path, "--host-rate", String(Self.rate), "--concurrency", "64",
            "--per-host", "4", "--connect-to", "::127.0.0.1:\(server.port)", "--quiet",
        ] + (siteFiles ? [] : ["--ignore-opt-out", "robots,content-signal,content-usage,tdmrep-file"]))
        #expect(run.status == 0, "\(run.stderr.suffix(400))")
        let saved = (try? FileManager.default.contentsOfDirectory(atPath: work.file("out").path))?.filter { $0.hasSuffix(".png") } ?? []
        #expect(saved.count == 400)
        Self.check(server, hosts: hosts, perHost: 10, siteFiles: siteFiles)
    }

    @Test func fourCopiesSplitByHostKeepTheRateTogether() async throws {
        let server = try serve()
        defer { server.stop() }
        let work = TemporaryFolder()
        let file = work.file("table.txt")
        try table(server).write(to: file, atomically: true, encoding: .utf8)
        let copies = try (0..<4).map { copy in
            try MirrorBinary.start([
                "urls", file.path, "--out", work.file("out").path, "--format", "webdataset", "--shard-size", "10",
                "--shard-by", "host", "--shard", "\(copy)/4", "--host-rate", String(Self.rate), "--per-host", "8",
                "--connect-to", "::127.0.0.1:\(server.port)", "--quiet",
            ])
        }
        for copy in copies {
            let run = await copy.finish()
            #expect(run.status == 0, "\(run.stderr.suffix(400))")
        }
        Self.check(server)
    }
}
