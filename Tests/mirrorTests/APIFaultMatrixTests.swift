import Foundation
import MirrorTestSupport
import Testing

/// The fault matrix, API side: `mirror <query> --json` (the built binary) against the API emulator, one API
/// fault per case, each asserting the exit code, the summary counts and what reached the emulator.
@Suite("Fault matrix: search APIs, end to end", .serialized)
struct APIFaultMatrixTests {
    struct Outcome {
        var run: MirrorBinary.Run
        var summary: [String: Any]
        var folder: TemporaryFolder

        func int(_ key: String) -> Int { summary[key] as? Int ?? -1 }
        var images: [String] { folder.visibleFiles.filter { $0 != "manifest.jsonl" } }
        var manifestLines: Int {
            ((try? String(contentsOf: folder.file("manifest.jsonl"), encoding: .utf8)) ?? "").split(separator: "\n").count
        }
    }

    func emulator(_ configure: (inout APIEmulator.Settings) -> Void = { _ in }) throws -> APIEmulator {
        var settings = APIEmulator.Settings()
        settings.imageBytes = 1_000...3_000
        configure(&settings)
        return try APIEmulator.start(settings: settings)
    }

    func mirror(_ api: APIEmulator, count: Int, provider: String = "openverse", _ arguments: [String] = [], environment extra: [String: String] = [:]) async throws -> Outcome {
        let folder = TemporaryFolder()
        var environment = api.environment
        environment["MIRROR_API_INTERVAL_MS"] = "0"
        for (key, value) in extra { environment[key] = value }
        let run = try await MirrorBinary.run(
            ["kittens", "--count", String(count), "--out", folder.path, "--provider", provider, "--json", "--no-cache"] + arguments,
            environment: environment
        )
        let summary = (try? JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any]) ?? [:]
        return Outcome(run: run, summary: summary, folder: folder)
    }

    /// Exit 0, exactly `count` saved and listed, no image failure, nothing fetched twice.
    func expectComplete(_ outcome: Outcome, count: Int, _ api: APIEmulator, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(outcome.run.status == 0, "stderr: \(outcome.run.stderr)", sourceLocation: sourceLocation)
        #expect(outcome.int("saved") == count, sourceLocation: sourceLocation)
        #expect(outcome.int("total") == count, sourceLocation: sourceLocation)
        #expect(outcome.int("failed") == 0, sourceLocation: sourceLocation)
        #expect(outcome.images.count == count, sourceLocation: sourceLocation)
        #expect(outcome.manifestLines == count, sourceLocation: sourceLocation)
        #expect(api.imagesRequestedMoreThanOnce.isEmpty, sourceLocation: sourceLocation)
        #expect(api.totalImageRequests == count, sourceLocation: sourceLocation)
    }

    func gap(_ requests: [RecordedRequest]) -> Duration {
        requests.count >= 2 ? requests[1].arrivedAt - requests[0].arrivedAt : .zero
    }

    @Test func malformedJSONOnceIsRetried() async throws {
        // Given the first Openverse page cut in half
        let api = try emulator()
        defer { api.stop() }
        api.malformedJSONNext(1, provider: .openverse)

        // When mirror asks for 5
        let outcome = try await mirror(api, count: 5)

        // Then the page is asked for again and the job completes
        expectComplete(outcome, count: 5, api)
        #expect(api.apiRequestCount(provider: .openverse) == 2)
        #expect(outcome.int("apiRequests") == 2)
        #expect(outcome.int("pages") == 1)
    }

    @Test func a500OnceIsRetried() async throws {
        let api = try emulator()
        defer { api.stop() }
        api.failNext(1, provider: .openverse)

        let outcome = try await mirror(api, count: 5)

        expectComplete(outcome, count: 5, api)
        #expect(api.apiRequestCount(provider: .openverse) == 2)
        #expect(outcome.int("pages") == 1)
    }

    @Test func a429IsWaitedOutForItsRetryAfter() async throws {
        let api = try emulator()
        defer { api.stop() }
        api.rateLimitNext(1, provider: .openverse, retryAfter: 2)

        let outcome = try await mirror(api, count: 5)

        expectComplete(outcome, count: 5, api)
        let requests = api.apiRequests(provider: .openverse)
        #expect(requests.count == 2)
        #expect(gap(requests) >= .seconds(2), "Retry-After: 2 was undercut: \(gap(requests))")
    }

    @Test func anErrorInsideA200BodyIsRetriedAfterItsRetryAfter() async throws {
        // Given Wikimedia answering 200 with a maxlag error (and Retry-After: 1) in the body
        let api = try emulator()
        defer { api.stop() }
        api.errorInBodyNext(1, provider: .wikimedia, retryAfter: 1)

        let outcome = try await mirror(api, count: 5, provider: "wikimedia")

        expectComplete(outcome, count: 5, api)
        let requests = api.apiRequests(provider: .wikimedia)
        #expect(requests.count == 2)
        #expect(gap(requests) >= .seconds(1), "maxlag's Retry-After was undercut: \(gap(requests))")
    }

    @Test func a200WithoutResultsIsRetried() async throws {
        // Given Openverse answering 200 with {"detail": …} and no results
        let api = try emulator()
        defer { api.stop() }
        api.errorInBodyNext(1, provider: .openverse)

        let outcome = try await mirror(api, count: 5)

        expectComplete(outcome, count: 5, api)
        #expect(api.apiRequestCount(provider: .openverse) == 2)
    }

    @Test func repeatedPagesEndTheProviderInsteadOfLooping() async throws {
        // Given an Openverse that answers every page with page 1
        let api = try emulator { $0.repeatsFirstPage = [.openverse] }
        defer { api.stop() }

        // When mirror asks for 50 (page 1 has 20)
        let outcome = try await mirror(api, count: 50)

        // Then it saves the 20 there are, stops asking after the repeats, and says the source ran dry (exit 3)
        #expect(outcome.run.status == 3, "stderr: \(outcome.run.stderr)")
        #expect(outcome.int("saved") == 20)
        #expect(outcome.int("total") == 20)
        #expect(outcome.summary["exhausted"] as? Bool == true)
        #expect(outcome.images.count == 20)
        #expect(outcome.manifestLines == 20)
        #expect(api.imagesRequestedMoreThanOnce.isEmpty)
        #expect(api.totalImageRequests == 20)
        #expect(api.apiRequestCount(provider: .openverse) <= 4)
        #expect(outcome.run.stderr.contains("ran dry"))
    }

    @Test func anInvalidKeyExits4NamingTheVariableAndDownloadsNothing() async throws {
        let api = try emulator()
        defer { api.stop() }

        let outcome = try await mirror(api, count: 5, provider: "pexels", environment: ["PEXELS_API_KEY": "not-the-key-4711"])

        #expect(outcome.run.status == 4)
        #expect(outcome.run.stderr.split(separator: "\n").count == 1)
        #expect(outcome.run.stderr.contains("PEXELS_API_KEY"))
        #expect(!outcome.run.stderr.contains("not-the-key-4711"))
        #expect(!outcome.run.stdout.contains("not-the-key-4711"))
        // A rejected key is not retried
        #expect(api.apiRequestCount(provider: .pexels) == 1)
        #expect(api.totalImageRequests == 0)
        #expect(outcome.images.isEmpty)
    }
}
