import Foundation
import MirrorTestSupport
import Testing

/// The provider chain end to end: moving on when a provider fails, reporting every provider when all do, the
/// providers' own obligations (Unsplash's download notifications, Google's 100th result), and the manifest schema.
@Suite("Provider chain and obligations, end to end", .serialized)
struct ProviderChainTests: EmulatedSearch {
    /// An endpoint on a loopback port nothing listens on: connections are refused.
    private func refusingEndpoint(_ path: String) throws -> String {
        "http://127.0.0.1:\(try FaultMatrixTests.freeLoopbackPort())\(path)"
    }

    private func manifestLines(_ folder: TemporaryFolder) -> [String] {
        ((try? String(contentsOf: folder.file("manifest.jsonl"), encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
    }

    private func json(_ text: String) -> [String: Any]? {
        (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any]
    }

    // MARK: Failures

    @Test func openverseRefusingConnectionsTheChainSavesTheCountFromWikimedia() async throws {
        // Given Openverse refusing connections and Wikimedia up
        let api = try emulator()
        defer { api.stop() }
        let env = environment(api, ["MIRROR_OPENVERSE_ENDPOINT": try refusingEndpoint("/v1/images/")])
        let out = TemporaryFolder()

        // When the default chain asks for 30
        let run = try await MirrorBinary.run(["kittens", "--count", "30", "--out", out.path, "--api-retries", "1", "--json"], environment: env)

        // Then Wikimedia provides all 30, exit 0, and both the summary line and --json name Openverse as failed
        #expect(run.status == 0, "stderr: \(run.stderr)")
        let lines = manifestLines(out)
        #expect(lines.count == 30)
        #expect(lines.allSatisfy { json($0)?["provider"] as? String == "wikimedia" })
        let summaryLine = try #require(run.stderr.split(separator: "\n").last.map(String.init))
        #expect(summaryLine.contains("openverse failed ("), "stderr: \(run.stderr)")
        #expect(summaryLine.contains("could not connect") || summaryLine.contains("onnection refused"), "stderr: \(run.stderr)")
        let status = try #require(json(run.stdout)?["providerStatus"] as? [[String: Any]])
        #expect(status.map { $0["provider"] as? String } == ["openverse", "wikimedia"])
        #expect(status.map { $0["status"] as? String } == ["failed", "in_use"])
        #expect((status[0]["reason"] as? String)?.isEmpty == false)
    }

    @Test func everyProviderFailingExits5WithOneLineNamingEach() async throws {
        // Given both providers of the default chain down: Openverse refusing connections, Wikimedia answering 503
        let api = try emulator()
        defer { api.stop() }
        api.failNext(50, provider: .wikimedia, status: 503)
        let env = environment(api, ["MIRROR_OPENVERSE_ENDPOINT": try refusingEndpoint("/v1/images/")])
        let out = TemporaryFolder()

        // When mirror runs with --json
        let run = try await MirrorBinary.run(["kittens", "--count", "5", "--out", out.path, "--api-retries", "1", "--json"], environment: env)

        // Then exit 5 and one line that names each provider, in chain order, with its reason
        #expect(run.status == 5, "stderr: \(run.stderr)")
        let lines = run.stderr.split(separator: "\n")
        #expect(lines.count == 1, "stderr: \(run.stderr)")
        let line = String(lines.first ?? "")
        let openverse = try #require(line.range(of: "openverse failed ("))
        let wikimedia = try #require(line.range(of: "wikimedia failed (HTTP 503: Wikimedia Error Our servers"))
        #expect(openverse.lowerBound < wikimedia.lowerBound)
        #expect(line.contains("try again later"))
        // And --json still prints the summary: each provider's status and reason
        let summary = try #require(json(run.stdout), "stdout: \(run.stdout)")
        #expect(summary["saved"] as? Int == 0)
        let status = try #require(summary["providerStatus"] as? [[String: Any]])
        #expect(status.map { $0["provider"] as? String } == ["openverse", "wikimedia"])
        #expect(status.map { $0["status"] as? String } == ["failed", "failed"])
        #expect((status[1]["reason"] as? String)?.contains("HTTP 503") == true)
        // Each was tried twice: --api-retries 1, and --retries (images) left alone
        #expect(api.apiRequestCount(provider: .wikimedia) == 2)
        print("all-down run:\nstderr: \(run.stderr)stdout: \(run.stdout)")
    }

    @Test func aBadKeyInTheSecondProviderExits4NamingItsVariable() async throws {
        // Given Openverse refusing connections, then Flickr with a key the API rejects
        let api = try emulator()
        defer { api.stop() }
        let env = environment(api, ["MIRROR_OPENVERSE_ENDPOINT": try refusingEndpoint("/v1/images/"), "FLICKR_API_KEY": "not-the-key"])
        let out = TemporaryFolder()

        let run = try await MirrorBinary.run(["kittens", "--count", "5", "--out", out.path, "--provider", "openverse,flickr", "--api-retries", "0"], environment: env)

        // Then exit 4 naming FLICKR_API_KEY (never its value)
        #expect(run.status == 4, "stderr: \(run.stderr)")
        #expect(run.stderr.contains("FLICKR_API_KEY"))
        #expect(!run.stderr.contains("not-the-key"))
        #expect(run.stderr.split(separator: "\n").count == 1)
    }

    // MARK: Obligations

    @Test func unsplashDownloadLocationIsCalledOncePerSavedImageOnly() async throws {
        // Given Unsplash, a tenth of whose images are missing (404)
        let api = try emulator { $0.imageFaults[.unsplash] = .init(notFound: 0.1) }
        defer { api.stop() }
        let out = TemporaryFolder()

        // When a first run saves 12, and a second run tops the folder up to 40 (the first 12 come back as duplicates)
        let first = try await MirrorBinary.run(["kittens", "--count", "12", "--out", out.path, "--provider", "unsplash", "--quiet"], environment: environment(api))
        #expect(first.status == 0, "stderr: \(first.stderr)")
        let afterFirst = api.unsplashDownloadNotifications
        let second = try await MirrorBinary.run(["kittens", "--count", "40", "--out", out.path, "--provider", "unsplash", "--json", "--quiet"], environment: environment(api))
        #expect(second.status == 0, "stderr: \(second.stderr)")

        // Then each saved photo was notified exactly once; no duplicate and no failed one was
        let saved = manifestLines(out).compactMap { json($0)?["id"] as? String }
        #expect(saved.count == 40)
        #expect(afterFirst.count == 12)
        let notified = api.unsplashDownloadNotifications
        #expect(notified.count == 40)
        #expect(notified.sorted() == saved.sorted())
        let summary = json(second.stdout)
        #expect((summary?["alreadySaved"] as? Int ?? 0) >= 12)
        #expect((summary?["failed"] as? Int ?? 0) > 0)
        #expect(summary?["downloadNotifications"] as? Int == 28)
    }

    @Test func aFailedDownloadNotificationIsLoggedAndNeverFailsTheRun() async throws {
        // Given Unsplash whose download_location answers 500
        let api = try emulator { $0.unsplashDownloadStatus = 500 }
        defer { api.stop() }
        let out = TemporaryFolder()

        let run = try await MirrorBinary.run(["kittens", "--count", "6", "--out", out.path, "--provider", "unsplash", "--api-retries", "0", "--json"], environment: environment(api))

        // Then every image is saved, exit 0, and each failed notification is a line of the log
        #expect(run.status == 0, "stderr: \(run.stderr)")
        #expect(manifestLines(out).count == 6)
        let summary = json(run.stdout)
        #expect(summary?["downloadNotificationsFailed"] as? Int == 6)
        #expect(run.stderr.components(separatedBy: "the download notification for").count - 1 == 6, "stderr: \(run.stderr)")
    }

    @Test func googleYieldsItsHundredResultsInTenRequests() async throws {
        // Given Google with plenty of results
        let api = try emulator { $0.corpus[.google] = .init(count: 1_000) }
        defer { api.stop() }
        let out = TemporaryFolder()

        // When 150 are asked for
        let run = try await MirrorBinary.run(["kittens", "--count", "150", "--out", out.path, "--provider", "google", "--json", "--quiet"], environment: environment(api))

        // Then the 100 the API serves are saved (exit 3: the source ran dry), in 10 requests
        #expect(run.status == 3, "stderr: \(run.stderr)")
        #expect(manifestLines(out).count == 100)
        #expect(api.apiRequestCount(provider: .google) == 10)
        #expect(json(run.stdout)?["apiRequests"] as? Int == 10)
        let status = json(run.stdout)?["providerStatus"] as? [[String: Any]]
        #expect(status?.first?["status"] as? String == "capped")
    }

    // MARK: Manifest schema

    /// The documented manifest fields, in order, and each one's JSON type (`null` allowed where noted).
    private static let schema: [(key: String, type: String, nullable: Bool)] = [
        ("file_name", "string", false), ("url", "string", false), ("page_url", "string", true), ("provider", "string", true),
        ("id", "string", true), ("title", "string", true), ("creator", "string", true), ("license", "string", true),
        ("license_url", "string", true), ("width", "integer", false), ("height", "integer", false), ("bytes", "integer", false),
        ("sha256", "string", false), ("format", "string", false), ("query", "string", true), ("fetched_at", "string", false),
        ("key", "string", true), ("caption", "string", true), ("label", "string", true), ("original_width", "integer", false),
        ("original_height", "integer", false), ("original_format", "string", false), ("original_bytes", "integer", false), ("blurred_boxes", "integer", true),
        ("pdq", "string", true), ("pdq_quality", "integer", true), ("pdq_trimmed", "array of strings", true),
        ("pdq_version", "integer", true), ("purpose", "string", true), ("generated", "boolean", false), ("source_type", "string", true),
        ("source_type_from", "string", true), ("c2pa", "boolean", false), ("opt_outs_ignored", "array of strings", true),
    ]

    /// The JSON type of a parsed value: "null", "boolean", "integer", "string", or something else.
    private func type(of value: Any) -> String {
        if value is NSNull { return "null" }
        if value is String { return "string" }
        if let number = value as? NSNumber, String(cString: number.objCType) == "c" { return "boolean" }  // JSON's true and false
        if let array = value as? [Any] { return array.allSatisfy { $0 is String } ? "array of strings" : "array" }
        if let number = value as? NSNumber { return number.stringValue.allSatisfy(\.isNumber) ? "integer" : "number" }
        return "other"
    }

    @Test func everyManifestLineHoldsTheDocumentedKeysInOrderWithOneTypeEach() async throws {
        // Given a mixed-provider run (Openverse runs dry after 15, Wikimedia — whose results may lack a licence or a
        // creator — fills up) and a URL-list run (no provider, id, title, … at all) into the same folder
        let api = try emulator { $0.corpus[.openverse] = .init(count: 15) }
        defer { api.stop() }
        let out = TemporaryFolder()
        let search = try await MirrorBinary.run(["kittens", "--count", "40", "--out", out.path, "--quiet"], environment: environment(api))
        #expect(search.status == 0, "stderr: \(search.stderr)")
        let extra = api.image(provider: .pexels, query: "unrelated", index: 0).url.absoluteString
        let urls = try await MirrorBinary.run(["urls", "-", "--out", out.path, "--quiet"], stdin: extra + "\n", environment: environment(api))
        #expect(urls.status == 0, "stderr: \(urls.stderr)")

        // Then every line has exactly the documented keys, in order, each of one JSON type (or null where allowed)
        let lines = manifestLines(out)
        #expect(lines.count == 41)
        var typesSeen: [String: Set<String>] = [:]
        for line in lines {
            var position = line.startIndex
            for field in Self.schema {
                let found = line.range(of: "\"\(field.key)\":", range: position..<line.endIndex)
                #expect(found != nil, "\(field.key) missing or out of order in \(line)")
                if let found { position = found.upperBound }
            }
            let object = try #require(json(line))
            #expect(Set(object.keys) == Set(Self.schema.map(\.key)), "extra keys in \(line)")
            for field in Self.schema {
                let seen = object[field.key].map(type(of:)) ?? "missing"
                typesSeen[field.key, default: []].insert(seen)
                #expect(seen == field.type || (field.nullable && seen == "null"), "\(field.key) is \(seen) in \(line)")
            }
        }
        // And the run really mixed what is known with what is not
        #expect(Set(lines.compactMap { json($0)?["provider"] as? String }) == ["openverse", "wikimedia"])
        #expect(typesSeen["provider"] == ["string", "null"])
        #expect(typesSeen["query"] == ["string", "null"])
    }
}
