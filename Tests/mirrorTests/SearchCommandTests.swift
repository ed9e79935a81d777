import Foundation
import MirrorTestSupport
import Testing

/// `mirror <query>` end to end: the built binary against the emulated APIs on loopback.
@Suite("mirror <query>, end to end", .serialized)
struct SearchCommandTests: EmulatedSearch {
    private struct Manifest {
        var lines: [[String: Any]]
        var files: [String] { lines.compactMap { $0["file_name"] as? String } }
        var shas: [String] { lines.compactMap { $0["sha256"] as? String } }
        var urls: [String] { lines.compactMap { $0["url"] as? String } }
    }

    private func manifest(_ folder: TemporaryFolder) -> Manifest {
        let text = (try? String(contentsOf: folder.file("manifest.jsonl"), encoding: .utf8)) ?? ""
        return Manifest(lines: text.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        })
    }

    /// The manifest lists exactly the image files, each once, with distinct bytes, and nothing half-done remains.
    private func expectConsistent(_ folder: TemporaryFolder, count: Int, sourceLocation: SourceLocation = #_sourceLocation) {
        let manifest = manifest(folder)
        let images = folder.visibleFiles.filter { $0 != "manifest.jsonl" }
        #expect(manifest.files.count == count, sourceLocation: sourceLocation)
        #expect(Set(manifest.files) == Set(images), sourceLocation: sourceLocation)
        #expect(Set(manifest.shas).count == manifest.shas.count, sourceLocation: sourceLocation)
        #expect(folder.temporaryFiles.isEmpty, sourceLocation: sourceLocation)
    }

    @Test func theDefaultChainReaches500AcrossOpenverseAndWikimedia() async throws {
        // Given Openverse (capped at 20 pages of 20) and Wikimedia, 30 of whose images are byte-identical to Openverse ones
        let api = try emulator { $0.wikimediaOverlap = 30 }
        defer { api.stop() }
        let out = TemporaryFolder()

        // When mirror asks for 500
        let run = try await MirrorBinary.run(["kittens", "--count", "500", "--out", out.path, "--json", "--quiet", "--no-cache"], environment: environment(api))

        // Then it saves exactly 500, past the Openverse cap, with no content twice and no image fetched twice
        #expect(run.status == 0, "stderr: \(run.stderr)")
        expectConsistent(out, count: 500)
        let providers = Set(manifest(out).lines.compactMap { $0["provider"] as? String })
        #expect(providers == ["openverse", "wikimedia"])
        #expect(api.apiRequests(provider: .openverse).allSatisfy { ($0.query["page"].flatMap(Int.init) ?? 1) <= 20 })
        #expect(api.imagesRequestedMoreThanOnce.isEmpty)
        let summary = try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any]
        #expect(summary?["saved"] as? Int == 500)
        #expect((summary?["duplicates"] as? Int ?? 0) >= 30)
    }

    @Test func theCountIsExactUnderFaults() async throws {
        // Given 15% of images failing in four ways, and API hiccups
        let api = try emulator {
            $0.imageFaults[.openverse] = .init(notFound: 0.05, htmlAsImage: 0.04, truncated: 0.03, serverErrorOnce: 0.03)
        }
        defer { api.stop() }
        api.failNext(1, provider: .openverse)
        api.malformedJSONNext(1, provider: .openverse)
        let out = TemporaryFolder()

        let run = try await MirrorBinary.run(["kittens", "--count", "120", "--out", out.path, "--quiet", "--no-cache"], environment: environment(api))

        #expect(run.status == 0, "stderr: \(run.stderr)")
        expectConsistent(out, count: 120)
        #expect(run.stderr.isEmpty)
    }

    @Test func aRerunIsANoOpAndAHigherCountFetchesTheDifference() async throws {
        let api = try emulator()
        defer { api.stop() }
        let out = TemporaryFolder()
        let first = try await MirrorBinary.run(["cats", "--count", "40", "--out", out.path, "--no-cache"], environment: environment(api))
        #expect(first.status == 0, "stderr: \(first.stderr)")
        expectConsistent(out, count: 40)

        // Re-running the finished job makes no request at all
        api.resetCounters()
        let again = try await MirrorBinary.run(["cats", "--count", "40", "--out", out.path, "--no-cache"], environment: environment(api))
        #expect(again.status == 0)
        #expect(again.stderr.contains("up to date"))
        #expect(api.totalAPIRequests == 0)
        #expect(api.totalImageRequests == 0)

        // A higher count fetches only the difference
        let before = Set(manifest(out).urls)
        let more = try await MirrorBinary.run(["cats", "--count", "65", "--out", out.path, "--no-cache"], environment: environment(api))
        #expect(more.status == 0, "stderr: \(more.stderr)")
        expectConsistent(out, count: 65)
        #expect(api.totalImageRequests == 25)
        #expect(before.isSubset(of: Set(manifest(out).urls)))
        let history = try await MirrorBinary.run(["history", "--out", out.path, "--json"])
        let searches = try JSONSerialization.jsonObject(with: Data(history.stdout.utf8)) as? [[String: Any]]
        #expect(searches?.first?["query"] as? String == "cats")
        #expect(searches?.first?["runs"] as? Int == 3)
        #expect(searches?.first?["saved"] as? Int == 65)
    }

    @Test func killedAtRandomMomentsItResumesExactly() async throws {
        // Given slow images, so that kills land mid-transfer, mid-commit and mid-search
        let api = try emulator { $0.imageLatency = .milliseconds(30) }
        defer { api.stop() }
        let out = TemporaryFolder()
        let arguments = ["kittens", "--count", "150", "--out", out.path, "--quiet", "--no-cache", "--concurrency", "8"]
        var generator = SystemRandomNumberGenerator()

        // When the run is SIGKILLed at five random moments, each time checking the folder
        for _ in 0..<5 {
            let running = try MirrorBinary.start(arguments, environment: environment(api))
            try await Task.sleep(for: .microseconds(Int.random(in: 150_000...900_000, using: &generator)))
            kill(running.process.processIdentifier, SIGKILL)
            _ = await running.finish()
            // No manifest line without its file, even right after a kill (temporary files may remain until the next run).
            let files = Set(out.visibleFiles)
            #expect(manifest(out).files.allSatisfy { files.contains($0) })
        }
        let savedBeforeFinish = Set(manifest(out).urls.compactMap { URL(string: $0)?.path })
        let requestsBefore = Dictionary(uniqueKeysWithValues: savedBeforeFinish.map { ($0, api.imageRequestCount(path: $0)) })

        // Then a last run finishes the job exactly, and nothing already saved was fetched again
        let last = try await MirrorBinary.run(arguments, environment: environment(api))
        #expect(last.status == 0, "stderr: \(last.stderr)")
        expectConsistent(out, count: 150)
        for (path, count) in requestsBefore {
            #expect(api.imageRequestCount(path: path) == count, "\(path) was fetched again after it was saved")
        }
    }

    @Test func aSecondRunOnTheSameFolderExits75() async throws {
        // Given a first run held at its first image: it has the folder's lock (taken before any image is asked for),
        // and it cannot finish. (The test once waited at most 2 s for the state database to appear, then hoped.)
        let gate = Gate()
        defer { gate.open() }
        let api = try emulator { $0.imageGate = gate }
        defer { api.stop() }
        let out = TemporaryFolder()
        let first = try MirrorBinary.start(["kittens", "--count", "200", "--out", out.path, "--quiet", "--no-cache", "--concurrency", "2"], environment: environment(api))
        #expect(await gate.waitForArrivals(1))

        // When a second run starts on the same folder
        let second = try await MirrorBinary.run(["kittens", "--count", "200", "--out", out.path, "--no-cache"], environment: environment(api))
        kill(first.process.processIdentifier, SIGKILL)
        _ = await first.finish()

        // Then it is turned away with 75, naming the first
        #expect(second.status == 75)
        #expect(second.stderr.contains("process \(first.process.processIdentifier)"))
    }

    @Test func sigintStopsPromptlyAndKeepsWhatWasSaved() async throws {
        // Given a run whose first 5 images are served and every later one held: when the signal comes it has saved some
        // and is mid-way through others, whatever the machine's speed (the test once waited for the manifest to grow
        // while images came every 100 ms)
        let gate = Gate(letting: 5)
        defer { gate.open() }
        let api = try emulator { $0.imageGate = gate }
        defer { api.stop() }
        let out = TemporaryFolder()
        let running = try MirrorBinary.start(["kittens", "--count", "300", "--out", out.path, "--no-cache", "--concurrency", "4"], environment: environment(api))
        #expect(await gate.waitForArrivals(6))
        // (the five served images' lines appear in the manifest: a state that comes, and stays while the rest are held;
        // polled on a Dispatch thread so that a busy cooperative pool cannot make the signal late)
        let manifestPath = out.file("manifest.jsonl").path
        await onDispatchThread {
            let deadline = ContinuousClock.now + .seconds(300)
            while ContinuousClock.now < deadline, (try? String(contentsOfFile: manifestPath, encoding: .utf8))?.split(separator: "\n").count ?? 0 < 5 {
                usleep(20_000)
            }
        }

        // When it is interrupted
        let sent = ContinuousClock.now
        kill(running.process.processIdentifier, SIGINT)
        let run = await running.finish()
        let elapsed = run.ended - sent

        // Then it exits 130 at once (well under a second here), not when the held images' 215-s deadline ends them (the
        // bound, 30 s, is for a loaded machine, not a race), keeping the five it saved and nothing half-done
        print("SIGINT to exit: \(elapsed)")
        #expect(run.status == 130)
        #expect(elapsed < .seconds(30))
        #expect(run.stderr.contains("interrupted"))
        expectConsistent(out, count: 5)
        #expect(manifest(out).files.count == 5)
    }

    @Test func usageErrorsExit64() async throws {
        let unknown = try await MirrorBinary.run(["kittens", "--count", "5", "--out", "/tmp/x", "--provider", "bing"])
        #expect(unknown.status == 64)
        #expect(unknown.stderr.contains("Unknown provider 'bing'"))
        let zero = try await MirrorBinary.run(["kittens", "--count", "0", "--out", "/tmp/x"])
        #expect(zero.status == 64)
        let endpoint = try await MirrorBinary.run(["kittens", "--count", "5", "--out", "/tmp/x", "--endpoint", "http://127.0.0.1:1/"])
        #expect(endpoint.status == 64)
        #expect(!endpoint.stderr.contains("Fatal"))
    }

    @Test func aSubcommandsNameWithASearchsOptionsSaysHowToSearchForIt() async throws {
        // Given a search for a word that is also a subcommand's name, written without `search`
        for word in ["gallery", "urls", "status", "history", "cache", "providers", "config"] {
            // When it runs
            let run = try await MirrorBinary.run([word, "--count", "10", "--out", "/tmp/x y"])

            // Then it is a usage error whose one line says how to search for the word
            #expect(run.status == 64, "\(word): \(run.stderr)")
            #expect(run.stderr.contains("To search for the word \"\(word)\", run: mirror search \(word) --count 10 --out '/tmp/x y'"), "\(word): \(run.stderr)")
            #expect(run.stderr.split(separator: "\n").count == 1, "\(word): \(run.stderr)")
        }
        // And a subcommand used as itself gets no such hint
        let status = try await MirrorBinary.run(["status", "--bogus"])
        #expect(status.status == 64)
        #expect(!status.stderr.contains("To search for"))
    }

    @Test func aMissingOrRejectedKeyExits4NamingTheVariable() async throws {
        let api = try emulator()
        defer { api.stop() }
        let out = TemporaryFolder()
        var withoutKey = environment(api)
        withoutKey["FLICKR_API_KEY"] = nil
        let missing = try await MirrorBinary.run(["kittens", "--count", "5", "--out", out.path, "--provider", "flickr"], environment: withoutKey)
        #expect(missing.status == 4)
        #expect(missing.stderr.contains("FLICKR_API_KEY"))

        let rejected = try await MirrorBinary.run(["kittens", "--count", "5", "--out", out.path, "--provider", "flickr", "--no-cache"], environment: environment(api, ["FLICKR_API_KEY": "wrong-key-value"]))
        #expect(rejected.status == 4)
        #expect(rejected.stderr.contains("FLICKR_API_KEY"))
        #expect(!rejected.stderr.contains("wrong-key-value"))
    }

    @Test func aProviderThatKeepsFailingExits5() async throws {
        let api = try emulator()
        defer { api.stop() }
        api.failNext(50, provider: .openverse, status: 503)
        api.failNext(50, provider: .wikimedia, status: 503)
        let out = TemporaryFolder()
        let run = try await MirrorBinary.run(["kittens", "--count", "5", "--out", out.path, "--retries", "1", "--no-cache"], environment: environment(api))
        #expect(run.status == 5)
        #expect(run.stderr.split(separator: "\n").count == 1)
        #expect(run.stderr.contains("try again later"))
    }

    @Test func sourcesRunningDryExit3WithWhatExists() async throws {
        let api = try emulator {
            $0.corpus[.openverse] = .init(count: 30)
            $0.corpus[.wikimedia] = .init(count: 12)
        }
        defer { api.stop() }
        let out = TemporaryFolder()
        let run = try await MirrorBinary.run(["kittens", "--count", "100", "--out", out.path, "--no-cache"], environment: environment(api))
        #expect(run.status == 3, "stderr: \(run.stderr)")
        expectConsistent(out, count: 42)
        #expect(run.stderr.contains("ran dry"))
    }

    @Test func noKeyIsPrintedOrWrittenAnywhere() async throws {
        // Given every keyed provider with a recognisable key, on the emulator (which accepts it)
        let secret = "SECRET-KEY-7f3a9c"
        let cache = TemporaryFolder()
        for provider in ["flickr", "giphy", "google", "pexels", "unsplash", "pixabay"] {
            let api = try emulator { settings in
                settings.keys.flickr = secret
                settings.keys.giphy = secret
                settings.keys.google = secret
                settings.keys.googleEngineID = secret + "-cx"
                settings.keys.pexels = secret
                settings.keys.unsplash = secret
                settings.keys.pixabay = secret
            }
            defer { api.stop() }
            let out = TemporaryFolder()
            // When mirror runs with it (with the cache on, so cache files are checked too), and once more with a wrong key
            let ok = try await MirrorBinary.run(["kittens", "--count", "8", "--out", out.path, "--provider", provider, "--json", "--cache-dir", cache.path], environment: environment(api))
            #expect(ok.status == 0, "\(provider): \(ok.stderr)")
            var wrong = environment(api)
            for key in ["FLICKR_API_KEY", "GIPHY_API_KEY", "GOOGLE_API_KEY", "PEXELS_API_KEY", "UNSPLASH_ACCESS_KEY", "PIXABAY_API_KEY"] {
                wrong[key] = secret + "-wrong"
            }
            let elsewhere = TemporaryFolder()
            let failed = try await MirrorBinary.run(["dogs", "--count", "3", "--out", elsewhere.path, "--provider", provider, "--cache-dir", cache.path], environment: wrong)
            #expect(failed.status == 4, "\(provider): \(failed.stderr)")

            // Then the key appears in no output and no file mirror wrote
            for text in [ok.stdout, ok.stderr, failed.stdout, failed.stderr] {
                #expect(!text.contains(secret), "\(provider) printed the key")
            }
            for folder in [out.url, elsewhere.url, cache.url] {
                let enumerator = FileManager.default.enumerator(at: folder, includingPropertiesForKeys: nil)
                while let file = enumerator?.nextObject() as? URL {
                    #expect(!file.path.contains(secret))
                    if let data = try? Data(contentsOf: file) {
                        #expect(data.range(of: Data(secret.utf8)) == nil, "\(provider) wrote the key into \(file.lastPathComponent)")
                    }
                }
            }
        }
    }
}
