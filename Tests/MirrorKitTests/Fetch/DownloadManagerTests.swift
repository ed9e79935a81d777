import Foundation
import MirrorSync
@testable import MirrorCore
@testable import MirrorFetch
import MirrorImages
@testable import MirrorKit
@testable import MirrorSearch
@testable import MirrorStorage
import MirrorTestSupport
import MirrorTransport
import Testing

@Suite("Download manager", .serialized)
struct DownloadManagerTests {
    @Test func downloadsAndVerifiesAnImage() async throws {
        // Given a server with one PNG
        let server = try TestServer.start()
        defer { server.stop() }
        let png = TestImages.png(width: 40, height: 30, seed: 1)
        server.route("/a.png", .ok(png, contentType: "image/png"))
        let folder = TemporaryFolder()
        let manager = makeManager()

        // When it is downloaded
        let result = await manager.download(DownloadRequest(url: server.url("/a.png"), directory: folder.url))
        await manager.shutdown()

        // Then a verified temporary file holds exactly those bytes
        let image = try #require(result.success)
        #expect(image.info == ImageInfo(format: .png, width: 40, height: 30))
        #expect(image.bytes == Int64(png.count))
        #expect(image.sha256 == sha256Hex(png))
        #expect(image.source == .none)
        #expect(image.attempts == 1)
        #expect(try Data(contentsOf: image.temporaryFile) == png)
        #expect(image.temporaryFile.deletingLastPathComponent().standardizedFileURL == folder.url.standardizedFileURL)
    }

    @Test func everyRejectionReasonComesFromItsCause() async throws {
        // Given one route per way an image can be bad
        let server = try TestServer.start()
        defer { server.stop() }
        let good = TestImages.png(width: 20, height: 20, seed: 2)
        server.route("/html.jpg", .ok(TestImages.htmlErrorPage, contentType: "image/jpeg"))
        server.route("/empty.jpg", .ok(Data(), contentType: "image/jpeg"))
        server.route("/json.jpg", .ok(Data(#"{"error":"nope","code":17,"detail":"the image is not available right now"}"#.utf8)))
        server.route("/cut.png", .ok(good.prefix(good.count - 20), contentType: "image/png"))
        server.route("/bomb.png", .ok(TestImages.pixelBomb(), contentType: "image/png"))
        server.route("/random.bin", .ok(Data((0..<300).map { UInt8(($0 * 37 + 11) % 256) })))
        server.route("/wrong-type.png", .ok(good, contentType: "text/html"))
        server.route("/small.png", .ok(TestImages.png(width: 10, height: 10, seed: 3), contentType: "image/png"))
        server.route("/big.png", .ok(TestImages.png(width: 200, height: 200, seed: 4), contentType: "image/png"))
        let folder = TemporaryFolder()
        let manager = makeManager {
            $0.retry.maximumRetries = 0
            $0.maximumBytes = 50_000
        }
        func outcome(_ path: String, filter: ImageFilter? = nil) async -> DownloadResult {
            await manager.download(DownloadRequest(url: server.url(path), directory: folder.url, filter: filter))
        }

        // Then each is refused for its own reason, and the Content-Type never decides
        #expect(await outcome("/html.jpg").failure == .rejected(.html))
        #expect(await outcome("/empty.jpg").failure == .rejected(.empty))
        #expect(await outcome("/json.jpg").failure == .rejected(.text(.json)))
        guard case .rejected(.truncated(.png, _))? = await outcome("/cut.png").failure else {
            Issue.record("a cut PNG must be refused as truncated")
            return
        }
        #expect(await outcome("/bomb.png").failure == .rejected(.tooManyPixels(width: 100_000, height: 100_000, limit: ImageValidator.defaultPixelLimit)))
        guard case .rejected(.unknownFormat)? = await outcome("/random.bin").failure else {
            Issue.record("random bytes must be refused as an unknown format")
            return
        }
        #expect(await outcome("/wrong-type.png").success?.info.format == .png)
        #expect(await outcome("/small.png", filter: ImageFilter(minimumWidth: 16)).keptOut == .filtered("10×10 is smaller than 16×0"))
        #expect(await outcome("/missing.png").failure == .statusUnacceptable(404))
        #expect(await outcome("/big.png").failure == .transport(.tooLarge(limit: 50_000)))
        await manager.shutdown()
        // And no refused body is left on disk
        #expect(folder.temporaryFiles.count == 1) // only the accepted wrong-type.png, which its owner publishes
    }

    @Test func anHTMLBodyIsRefusedFromItsFirstBytes() async throws {
        // Given an HTML page of 2 MB served as a JPEG
        let server = try TestServer.start()
        defer { server.stop() }
        var page = TestImages.htmlErrorPage
        while page.count < 2_000_000 { page.append(TestImages.htmlErrorPage) }
        server.route("/big.html.jpg", .ok(page, contentType: "image/jpeg"))
        let folder = TemporaryFolder()
        let manager = makeManager()

        let result = await manager.download(DownloadRequest(url: server.url("/big.html.jpg"), directory: folder.url))
        await manager.shutdown()

        #expect(result.failure == .rejected(.html))
        #expect(folder.temporaryFiles.isEmpty)
        #expect(server.requestCount(path: "/big.html.jpg") == 1)
    }

    @Test func retriesTransientFailuresButNotPermanentOnes() async throws {
        // Given a route that fails twice with 500, then works
        let server = try TestServer.start()
        defer { server.stop() }
        let png = TestImages.png(width: 8, height: 8, seed: 5)
        let calls = Locked(0)
        server.route(prefix: "/flaky") { _ in
            let call = calls.withLock { $0 += 1; return $0 }
            return call <= 2 ? .status(500) : .ok(png, contentType: "image/png")
        }
        let folder = TemporaryFolder()
        let manager = makeManager()

        let flaky = await manager.download(DownloadRequest(url: server.url("/flaky"), directory: folder.url))
        let missing = await manager.download(DownloadRequest(url: server.url("/missing"), directory: folder.url))
        await manager.shutdown()

        #expect(flaky.success?.attempts == 3)
        #expect(missing.failure == .statusUnacceptable(404))
        #expect(server.requestCount(path: "/flaky") == 3)
        #expect(server.requestCount(path: "/missing") == 1)
    }

    @Test func retryAfterIsNeverUndercut() async throws {
        // Given a route that answers 429 with Retry-After: 1, then 503 with an HTTP date 2 s ahead, then the image
        let server = try TestServer.start()
        defer { server.stop() }
        let png = TestImages.png(width: 8, height: 8, seed: 6)
        let calls = Locked(0)
        server.route(prefix: "/busy") { _ in
            let call = calls.withLock { $0 += 1; return $0 }
            switch call {
            case 1: return .status(429, headers: [("Retry-After", "1")])
            case 2: return .status(503, headers: [("Retry-After", RetryAfter.format(Date().addingTimeInterval(2)))])
            default: return .ok(png, contentType: "image/png")
            }
        }
        let folder = TemporaryFolder()
        let manager = makeManager()

        let result = await manager.download(DownloadRequest(url: server.url("/busy"), directory: folder.url))
        await manager.shutdown()

        // Then the server's own clock shows each retry waited at least what it asked
        #expect(result.success != nil)
        let times = server.requests.filter { $0.path == "/busy" }.map(\.arrivedAt)
        try #require(times.count == 3)
        #expect(times[1] - times[0] >= .seconds(1))
        // An HTTP date has one-second resolution: "2 s ahead" may mean as little as 1 s and a fraction.
        #expect(times[2] - times[1] >= .milliseconds(1000))
    }

    @Test func thePerHostCapHoldsAtConcurrency64() async throws {
        // Given 300 images on one host with latency, and a manager allowed 64 at once but 6 per host
        let server = try TestServer.start(latency: .milliseconds(20))
        defer { server.stop() }
        for index in 0..<300 {
            server.route("/img/\(index).png", .ok(TestImages.png(width: 4, height: 4, seed: UInt64(index)), contentType: "image/png"))
        }
        let folder = TemporaryFolder()
        let manager = makeManager {
            $0.concurrency = 64
            $0.perHost = 6
        }

        // When all are requested at once
        await withTaskGroup(of: Void.self) { group in
            for index in 0..<300 {
                group.addTask {
                    let result = await manager.download(DownloadRequest(url: server.url("/img/\(index).png"), directory: folder.url))
                    if let image = result.success { AtomicFile.remove(image.temporaryFile) }
                }
            }
        }
        await manager.shutdown()

        // Then the server never saw more than 6 at once (and did see 6)
        #expect(server.totalRequests == 300)
        #expect(server.maxConcurrentRequests == 6)
    }

    @Test func cancellingOneLeavesTheOthersRunning() async throws {
        // Given three downloads held at the server, all three in flight (they were once 11-s drips, so that the cancel
        // would "surely" land mid-transfer; under ThreadSanitizer on a loaded machine 4 s once was not enough), and no
        // stall limit to end them while they wait
        let server = try TestServer.start()
        defer { server.stop() }
        let png = TestImages.png(width: 50, height: 50, seed: 7)
        let others = Gate(), cancelled = Gate()
        defer { others.open(); cancelled.open() }
        for name in ["a", "b", "c"] {
            server.route("/\(name).png", Response.ok(png, contentType: "image/png").held(by: name == "b" ? cancelled : others))
        }
        let folder = TemporaryFolder()
        let manager = makeManager { $0.stall.window = .seconds(3_600) }
        let outcomes = Outcomes()
        var tickets: [String: DownloadTicket] = [:]
        for name in ["a", "b", "c"] {
            let url = server.url("/\(name).png")
            tickets[name] = manager.download(DownloadRequest(url: url, directory: folder.url)) { outcomes.record(url, $0) }
        }
        #expect(await others.waitForArrivals(2))
        #expect(await cancelled.waitForArrivals(1))

        // When one is cancelled, and then the others are answered
        tickets["b"]?.cancel()
        others.open()
        await manager.waitUntilIdle()
        await manager.shutdown()

        // Then it alone ends cancelled
        let all = outcomes.all
        #expect(all[server.url("/b.png")]?.failure == .cancelled)
        #expect(all[server.url("/a.png")]?.success?.bytes == Int64(png.count))
        #expect(all[server.url("/c.png")]?.success?.bytes == Int64(png.count))
        #expect(folder.temporaryFiles.count == 2)
    }

    @Test func cancelAllIsPromptAndLeavesNoTemporaryFile() async throws {
        // Given 500 downloads that stall mid-body, 64 in flight
        let server = try TestServer.start()
        defer { server.stop() }
        // The stalled bodies start like a real PNG, so that they are not refused from their first bytes.
        let head = TestImages.png(width: 100, height: 100, seed: 11).prefix(100)
        server.route(prefix: "/stall-png") { _ in
            Response(status: 200, headers: [("Content-Type", "image/png")], body: .stall(prefix: Data(head), declaredLength: 100_000))
        }
        let folder = TemporaryFolder()
        // (No stall limit: a cancel the test's starved threads send late must still find them stalled, not failed.)
        let manager = makeManager {
            $0.concurrency = 64
            $0.perHost = 64
            $0.stall.window = .seconds(3_600)
        }
        let outcomes = Outcomes()
        for index in 0..<500 {
            let url = server.url("/stall-png/\(index)")
            manager.download(DownloadRequest(url: url, directory: folder.url)) { outcomes.record(url, $0) }
        }
        #expect(await eventually(within: .seconds(300)) { server.totalRequests >= 64 })

        // When everything is cancelled
        let started = ContinuousClock.now
        manager.cancelAll()
        await manager.waitUntilIdle()
        await manager.shutdown()
        // (timed to the last completion, as the manager delivered it: the await above can resume much later when
        // other tests hold the cooperative threads, as the end-to-end tests do under ThreadSanitizer)
        let elapsed = try #require(outcomes.lastRecorded) - started

        // Then every download ends cancelled well before the stalled transfers' own 20-s stall limit (a few tens of
        // milliseconds in a plain build; up to ~2 s seen under ThreadSanitizer beside the other tests), and no
        // temporary file is left
        print("cancelAll of 500 (64 in flight): \(elapsed)")
        #expect(elapsed < .seconds(10))
        #expect(outcomes.all.count == 500)
        #expect(outcomes.all.values.allSatisfy { $0.failure == .cancelled })
        #expect(folder.temporaryFiles.isEmpty)
    }

    @Test func aCacheHitMakesNoRequest() async throws {
        // Given an image downloaded once through a disk cache
        let server = try TestServer.start()
        defer { server.stop() }
        let png = TestImages.png(width: 12, height: 9, seed: 8)
        server.route("/cached.png", .ok(png, contentType: "image/png"))
        let cacheFolder = TemporaryFolder()
        let cache = DiskCache(directory: cacheFolder.url)
        let first = TemporaryFolder()
        let second = TemporaryFolder()
        let manager = makeManager { $0.cache = ImageCache(memory: nil, disk: cache) }
        let fetched = try #require(await manager.download(DownloadRequest(url: server.url("/cached.png"), directory: first.url)).success)
        #expect(fetched.source == .none)

        // When it is asked for again, into another folder
        let again = try #require(await manager.download(DownloadRequest(url: server.url("/cached.png"), directory: second.url)).success)
        await manager.shutdown()

        // Then it comes from the disk with the same bytes, and the server saw one request
        #expect(again.source == .disk)
        #expect(again.sha256 == fetched.sha256)
        #expect(try Data(contentsOf: again.temporaryFile) == png)
        #expect(server.requestCount(path: "/cached.png") == 1)
    }

    @Test("a long run of attempts that end without a transfer, one slot at a time, ends, and none nests in another")
    func attemptsEndingAtOnceDoNotNest() async throws {
        // Given a host whose robots.txt disallows everything, and one slot
        let server = try TestServer.start()
        defer { server.stop() }
        server.route("/robots.txt", .ok(Data("User-agent: *\nDisallow: /\n".utf8), contentType: "text/plain"))
        let folder = TemporaryFolder()
        let manager = makeManager {
            $0.concurrency = 1
            $0.perHost = 1
        }
        let robots = SiteGate(loader: manager.loader)
        let refused = Locked(0)

        // When 20,000 of its URLs are asked for: after the first, each attempt is refused inside its own start, and the
        // next may not start inside that call (20,000 attempts deep, the thread's stack would not hold them)
        for index in 0..<20_000 {
            manager.download(DownloadRequest(url: server.url("/\(index).png"), directory: folder.url, consent: ConsentPolicy(), site: robots)) { result in
                if case .keptOut(.disallowed) = result { refused.withLock { $0 += 1 } }
            }
        }
        await manager.waitUntilIdle()
        await manager.shutdown()

        // Then every one was refused, and only the site files were asked for (the TDMRep file too: reading a
        // reservation is not crawling)
        #expect(refused.withLock { $0 } == 20_000)
        #expect(server.requests.map(\.path) == ["/robots.txt", "/.well-known/tdmrep.json"])
    }
}

@Suite("Download manager cancellation between attempts")
struct RetryWaitCancellationTests {
    @Test func cancellingDuringARetryWaitEndsAtOnce() async throws {
        // Given a download whose server asks it to come back in 5 minutes, and a manager that says when a retry is
        // scheduled (the test once slept 50 ms after the request arrived, hoping the wait had begun by then)
        let server = try TestServer.start()
        defer { server.stop() }
        server.route("/later.png", .status(503, headers: [("Retry-After", "300")]))
        let folder = TemporaryFolder()
        let retrying = Beacon()
        var configuration = DownloadManager.Configuration()
        configuration.retry = RetryPolicy(maximumRetries: 3, baseDelay: .milliseconds(10), maximumDelay: .milliseconds(50))
        configuration.retry.maximumRetryAfter = .seconds(600)
        let manager = DownloadManager(configuration: configuration, onRetry: { _ in retrying.signal() })
        let outcomes = Outcomes()
        let url = server.url("/later.png")
        manager.download(DownloadRequest(url: url, directory: folder.url)) { outcomes.record(url, $0) }
        #expect(await retrying.wait(for: 1))

        // When everything is cancelled while it waits
        let started = ContinuousClock.now
        manager.cancelAll()
        await manager.waitUntilIdle()
        let elapsed = ContinuousClock.now - started
        await manager.shutdown()

        // Then it ends cancelled at once, not when the 300 s timer fires (typically well under a millisecond;
        // the bound is a fifth of the wait, which no loaded or sanitized run has come near)
        #expect(outcomes.all[url]?.failure == .cancelled)
        print("cancel during a retry wait: \(elapsed)")
        #expect(elapsed < .seconds(60))
        #expect(server.requestCount(path: "/later.png") == 1)
    }
}

@Suite("The default deadline of an attempt")
struct AttemptDeadlineTests {
    @Test func fifteenSecondsPlusTheLargestImageAtAQuarterMebibyteASecondAtMostFiveMinutes() {
        // 50 MiB (the default): 15 + 200 s; 1 MiB: 19 s; 1 GiB: capped at 300 s; --timeout replaces it
        #expect(DownloadManager.Configuration().attemptDeadline == .seconds(215))
        #expect(DownloadManager.Configuration.defaultDeadline(maximumBytes: 1 << 20) == .seconds(19))
        #expect(DownloadManager.Configuration.defaultDeadline(maximumBytes: 1 << 30) == .seconds(300))
        #expect(DownloadManager.Configuration { $0.timeout = .seconds(7) }.attemptDeadline == .seconds(7))
    }
}
