import Foundation
import MirrorTestSupport
import Testing

/// Crash-and-resume torture: `mirror <query>` SIGKILLed at random moments across a large job, then let finish.
///
/// Size: `MIRROR_TORTURE_IMAGES` (default 1,000) images and `MIRROR_TORTURE_KILLS` (default 20) kills;
/// `scripts/torture` runs a longer one. The kills are spread over the whole job: each one waits until the
/// manifest has reached a random point of the count (sorted, so they cover the start, middle and end), then
/// a further random 0–40 ms so that it lands anywhere in the download–verify–publish–record pipeline; one
/// in four kills instead lands during start-up (reconciliation, lock, first search page).
@Suite("Crash-and-resume torture", .serialized)
struct CrashResumeTortureTests {
    static func setting(_ name: String, default value: Int) -> Int {
        ProcessInfo.processInfo.environment[name].flatMap(Int.init).map { max(1, $0) } ?? value
    }

    struct Entry: Sendable {
        var file: String
        var path: String
        var provider: String
        var id: String
    }

    /// What one kill left behind, observed right after it.
    struct KillRound: Sendable {
        var run: MirrorBinary.Run
        var entries: [Entry]
        var files: Set<String>
        var requests: [String: Int]
    }

    static func manifest(_ folder: TemporaryFolder) -> [Entry] {
        let text = (try? String(contentsOf: folder.file("manifest.jsonl"), encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { line in
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                  let file = object["file_name"] as? String, let url = (object["url"] as? String).flatMap(URL.init(string:)),
                  let provider = object["provider"] as? String, let id = object["id"] as? String else { return nil }
            return Entry(file: file, path: url.path, provider: provider, id: id)
        }
    }

    /// Counts manifest lines without parsing them (polled every few milliseconds).
    static func manifestLineCount(_ folder: TemporaryFolder) -> Int {
        guard let data = try? Data(contentsOf: folder.file("manifest.jsonl")) else { return 0 }
        return data.reduce(0) { $0 + ($1 == 0x0A ? 1 : 0) }
    }

    static func temporaryFiles(_ folder: TemporaryFolder) -> [String] {
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? [])
            + ((try? FileManager.default.contentsOfDirectory(atPath: folder.file(".mirror").path)) ?? []).map { ".mirror/" + $0 }
        return names.filter { $0.hasSuffix(".part") }
    }

    @Test func killedAtRandomMomentsAcrossALargeJobItFinishesExactlyAndFetchesNothingTwice() async throws {
        let count = Self.setting("MIRROR_TORTURE_IMAGES", default: 1_000)
        let kills = Self.setting("MIRROR_TORTURE_KILLS", default: 20)
        let started = ContinuousClock.now

        // Given Openverse (400 reachable) and a Wikimedia with plenty more, serving small PNGs with a little latency
        var settings = APIEmulator.Settings()
        settings.imageBytes = 800...2_500
        settings.imageLatency = .milliseconds(5)
        settings.corpus[.wikimedia] = .init(count: count + 500)
        let api = try APIEmulator.start(settings: settings)
        defer { api.stop() }
        let environment = api.environment.merging(["MIRROR_API_INTERVAL_MS": "0"]) { _, new in new }
        let out = TemporaryFolder()
        let arguments = ["kittens", "--count", String(count), "--out", out.path, "--quiet", "--no-cache", "--concurrency", "16"]

        // When mirror is SIGKILLed `kills` times, at random moments: after a random number of saved images, or
        // during start-up (the loop runs on its own thread, so that the kills land when meant)
        let rounds = try await onDispatchThread { () throws -> [KillRound] in
            var generator = SystemRandomNumberGenerator()
            let targets = (0..<kills).map { _ in Int.random(in: 1..<count, using: &generator) }.sorted()
            var rounds: [KillRound] = []
            for target in targets {
                let running = try MirrorBinary.start(arguments, environment: environment)
                if Int.random(in: 0..<4, using: &generator) == 0 {
                    usleep(UInt32.random(in: 0...150_000, using: &generator))
                } else {
                    let deadline = ContinuousClock.now + .seconds(30)
                    while Self.manifestLineCount(out) < target, running.process.isRunning, ContinuousClock.now < deadline { usleep(2_000) }
                    usleep(UInt32.random(in: 0...40_000, using: &generator))
                }
                kill(running.process.processIdentifier, SIGKILL)
                let run = running.wait()
                // Right after the kill: the manifest, the files, and how often each saved image had been requested
                let entries = Self.manifest(out)
                let requests = Dictionary(entries.map { ($0.path, api.imageRequestCount(path: $0.path)) }) { first, _ in first }
                rounds.append(KillRound(run: run, entries: entries, files: Set(out.visibleFiles), requests: requests))
            }
            return rounds
        }
        // The request count of each saved image's path when it was first seen in the manifest after a kill.
        var countWhenSaved: [String: Int] = [:]
        var killedAt: [Int] = []
        for round in rounds {
            #expect(round.run.status == SIGKILL || round.run.status == 0, "exit \(round.run.status): \(round.run.stderr)")
            #expect(!round.run.stderr.contains("Fatal error"))
            killedAt.append(round.entries.count)
            // No manifest line without its whole file, right after the kill
            for entry in round.entries {
                #expect(round.files.contains(entry.file), "manifest lists \(entry.file) but the file is missing after a kill")
                if countWhenSaved[entry.path] == nil { countWhenSaved[entry.path] = round.requests[entry.path] }
            }
        }
        // and the kills did interrupt the job: at least half of them caught it unfinished (a round that starts
        // after a late kill may finish before the next one, so not all)
        #expect(rounds.filter { $0.run.status == SIGKILL && $0.entries.count < count }.count >= kills / 2, "kills at \(killedAt)")

        // Then a last run finishes the job
        let last = try await MirrorBinary.run(arguments, environment: environment)
        let elapsed = ContinuousClock.now - started
        print("torture: \(count) images, \(kills) kills at manifest sizes \(killedAt), \(api.totalImageRequests) image requests, \(elapsed)")
        #expect(last.status == 0, "stderr: \(last.stderr)")

        // with exactly `count` valid, distinct images: each file is byte for byte the image its manifest line names
        let entries = Self.manifest(out)
        let images = out.visibleFiles.filter { $0 != "manifest.jsonl" }
        #expect(entries.count == count)
        #expect(images.count == count)
        #expect(Set(entries.map(\.file)) == Set(images))
        #expect(Set(entries.map(\.file)).count == entries.count)
        #expect(Set(entries.map(\.path)).count == entries.count)
        var contents = Set<Data>()
        for entry in entries {
            let data = try Data(contentsOf: out.file(entry.file))
            let expected = APIEmulator.Provider(name: entry.provider).flatMap { api.image(provider: $0, id: entry.id) }?.data()
            #expect(data == expected, "\(entry.file) is not the image of \(entry.provider) \(entry.id)")
            contents.insert(data)
        }
        #expect(contents.count == count, "\(count - contents.count) images are byte-identical to another")
        // no temporary files anywhere
        #expect(Self.temporaryFiles(out).isEmpty, "left \(Self.temporaryFiles(out))")
        // and no image was downloaded again after it was saved
        var fetchedAgain: [String] = []
        for (path, atSave) in countWhenSaved where api.imageRequestCount(path: path) != atSave {
            fetchedAgain.append(path)
        }
        #expect(fetchedAgain.isEmpty, "fetched again after being saved: \(fetchedAgain.sorted())")
        // (A download cut short by a kill is legitimately fetched again by the next run; a saved one never.)
        #expect(api.totalImageRequests <= count + kills * 16 + 100)
    }
}
