import Crypto
@testable import MirrorModel
import MirrorSync
import Foundation
@testable import MirrorCore
@testable import MirrorFetch
import MirrorImages
@testable import MirrorKit
@testable import MirrorSearch
@testable import MirrorStorage
import MirrorTestSupport
import MirrorTransport
import Testing

@Suite("Pipeline: scripted source, stub loader, in-memory sink", .timeLimit(.minutes(5)))
struct PipelineTests {
    private static func url(_ index: Int) -> URL { URL(string: "http://stub.test/img/\(index).png")! }

    private static func configuration(target: Int?) -> Pipeline.Configuration {
        var configuration = Pipeline.Configuration(target: target)
        configuration.downloads.concurrency = 4
        configuration.downloads.retry = RetryPolicy(maximumRetries: 1, baseDelay: .milliseconds(1), maximumDelay: .milliseconds(2))
        return configuration
    }

    @Test func theCountIsExactUnderFailures() async throws {
        // Given 60 candidates, every third answering 404 and every fifth an HTML page
        let folder = TemporaryFolder()
        let loader = StubLoader { url in
            let index = Int(url.deletingPathExtension().lastPathComponent)!
            if index % 3 == 0 { return .status(404) }
            if index % 5 == 0 { return .body(TestImages.htmlErrorPage) }
            return .body(TestImages.png(width: 4, height: 4, seed: UInt64(index)))
        }
        let source = ScriptedSource((1...60).map(Self.url))
        let sink = MemorySink(directory: folder.url, limit: 20)

        // When the pipeline runs to a target of 20
        let report = await Pipeline(configuration: Self.configuration(target: 20), loader: loader).run(from: source, into: sink)

        // Then exactly 20 are published, every loss is counted, nothing half-done is left, and each saved image was notified
        #expect(sink.publishedCount == 20)
        #expect(report.tally.saved == 20)
        #expect(report.tally.failed > 0)
        #expect(report.tally.failures["http-404", default: 0] > 0)
        #expect(folder.temporaryFiles.isEmpty)
        #expect(source.notified.withLock { $0.count } == 20)
        #expect(report.fatal == nil && report.sourceError == nil && !report.interrupted)
    }

    @Test func duplicatesByURLAndByContentAreAdmittedOnce() async throws {
        // Given a list with a URL twice, one the sink already has, and two URLs serving the same bytes
        let folder = TemporaryFolder()
        let same = TestImages.png(width: 5, height: 5, seed: 99)
        let loader = StubLoader { url in
            url.lastPathComponent.hasPrefix("same") ? .body(same) : .body(TestImages.png(width: 3, height: 3, seed: UInt64(url.hashValue & 0xFFFF)))
        }
        let urls = [Self.url(1), Self.url(1), Self.url(2), URL(string: "http://stub.test/img/same-a.png")!, URL(string: "http://stub.test/img/same-b.png")!]
        let sink = MemorySink(directory: folder.url, preloaded: [Self.url(2)])

        // When every candidate is run
        let report = await Pipeline(configuration: Self.configuration(target: nil), loader: loader).run(from: ScriptedSource(urls), into: sink)

        // Then the repeated URL is never fetched twice, the held one never fetched, and the repeated bytes kept once
        #expect(report.tally.alreadySaved == 1)
        #expect(report.tally.duplicates == 2)
        #expect(report.tally.saved == 2)
        #expect(loader.requests.withLock { $0.filter { $0 == Self.url(1) }.count } == 1)
        #expect(!loader.requests.withLock { $0.contains(Self.url(2)) })
    }

    @Test func aURLRepeatedAfterItsImageIsSavedIsADuplicateNotAlreadySaved() async throws {
        // Given a list with a URL twice, the second given only once the first one's image is published
        let folder = TemporaryFolder()
        let loader = StubLoader { url in .body(TestImages.png(width: 3, height: 3, seed: UInt64(url.hashValue & 0xFFFF))) }
        let sink = MemorySink(directory: folder.url)
        let source = ScriptedSource([Self.url(1), Self.url(1)]) { index in
            if index == 1 { _ = await eventually(within: .seconds(50)) { sink.publishedCount == 1 } }
        }

        // When every candidate is run
        let report = await Pipeline(configuration: Self.configuration(target: nil), loader: loader).run(from: source, into: sink)

        // Then the repeat counts as a duplicate of this run, as it does while the first is in flight, and is not fetched
        #expect(sink.publishedCount == 1)
        #expect(report.tally.saved == 1)
        #expect(report.tally.duplicates == 1)
        #expect(report.tally.alreadySaved == 0)
        #expect(loader.requests.withLock { $0.count } == 1)
    }

    @Test func aRowASinkHoldsByRowIsAlreadySavedThoughItsURLCameEarlierInTheRun() async throws {
        // Given a sink that tells by row (as shards do: a row of a shard completed before) holding row 1, whose URL
        // row 0 repeats
        let folder = TemporaryFolder()
        let loader = StubLoader { url in .body(TestImages.png(width: 3, height: 3, seed: UInt64(url.hashValue & 0xFFFF))) }
        let sink = MemorySink(directory: folder.url, heldRows: ["1"])

        // When both rows are run
        let report = await Pipeline(configuration: Self.configuration(target: nil), loader: loader)
            .run(from: ScriptedSource([Self.url(1), Self.url(1)]), into: sink)

        // Then row 1 is already saved, and the sink is not told of it (a shard completed before stays as it is)
        #expect(report.tally.saved == 1)
        #expect(report.tally.alreadySaved == 1)
        #expect(report.tally.duplicates == 0)
        #expect(sink.settled.withLock { $0.isEmpty })
    }

    @Test func cancellingTheTaskCancelsEveryDownload() async throws {
        // Given downloads that never answer
        let folder = TemporaryFolder()
        let loader = StubLoader { _ in .hang }
        let sink = MemorySink(directory: folder.url)
        let pipeline = Pipeline(configuration: Self.configuration(target: 10), loader: loader)

        // When the running task is cancelled once downloads are in flight
        let task = Task { await pipeline.run(from: ScriptedSource((1...50).map(Self.url)), into: sink) }
        // (at least one: under ThreadSanitizer on a loaded machine the queue's threads come slowly)
        #expect(await eventually(within: .seconds(50)) { loader.requests.withLock { $0.count } >= 1 })
        task.cancel()
        let report = await task.value

        // Then it ends promptly, interrupted, with nothing saved, no download counted as failed and no file left
        #expect(report.interrupted)
        #expect(report.tally.saved == 0)
        #expect(report.tally.failed == 0)
        #expect(folder.temporaryFiles.isEmpty)
    }

    @Test func aSinkThatFailsStopsTheRun() async throws {
        // Given a sink that cannot be written (a full disk)
        let folder = TemporaryFolder()
        let loader = StubLoader { url in .body(TestImages.png(width: 2, height: 2, seed: UInt64(url.hashValue & 0xFFFF))) }
        let source = ScriptedSource((1...500).map(Self.url))
        let sink = MemorySink(directory: folder.url, failing: true)

        // When the pipeline runs
        let report = await Pipeline(configuration: Self.configuration(target: nil), loader: loader).run(from: source, into: sink)

        // Then the first failure ends the run: reported as fatal, and the source is not drained
        #expect(report.fatal?.isOutOfSpace == true)
        #expect(report.tally.saved == 0)
        #expect(source.asked.withLock { $0 } < 500)
        #expect(folder.temporaryFiles.isEmpty)
    }

    @Test func aSourceThatFailsIsReportedAfterWhatItGaveIsDone() async throws {
        struct Broken: Error {}
        // Given a source that yields 5 and then throws
        let folder = TemporaryFolder()
        let loader = StubLoader { url in .body(TestImages.png(width: 2, height: 3, seed: UInt64(url.hashValue & 0xFFFF))) }
        let sink = MemorySink(directory: folder.url)

        let report = await Pipeline(configuration: Self.configuration(target: 10), loader: loader)
            .run(from: ScriptedSource((1...5).map(Self.url), failingAtEndWith: Broken()), into: sink)

        // Then the five are saved and the error is the report's
        #expect(report.tally.saved == 5)
        #expect(report.sourceError is Broken)
        #expect(!report.sourceExhausted)
    }

    @Test func theFilterTurnsAwayWhatTheSourceReportsBeforeAnyDownload() async throws {
        let folder = TemporaryFolder()
        let loader = StubLoader { _ in .body(TestImages.png(width: 2, height: 2)) }
        var configuration = Self.configuration(target: nil)
        configuration.filter = ImageFilter(minimumWidth: 100, minimumHeight: 100)
        let pipeline = Pipeline(configuration: configuration, loader: loader)
        let small = Candidate(url: Self.url(1), stem: "small", reportedWidth: 50, reportedHeight: 50)
        #expect(pipeline.earlyRejection(small) != nil)

        // And a candidate with no report is fetched, then filtered on its real size
        let report = await pipeline.run(from: ScriptedSource([Self.url(2)]), into: MemorySink(directory: folder.url))
        #expect(report.tally.filtered == 1)
        #expect(loader.requests.withLock { $0.count } == 1)
    }

    @Test func everyRowEndsInOneEventWhoseOutcomesAddUpToTheTally() async throws {
        // Given candidates that end every way a download can: saved, 404, not an image, a repeated URL, one the sink
        // holds, the same bytes twice, and images too large for the transform's memory (a failed resize)
        let folder = TemporaryFolder()
        let same = TestImages.png(width: 5, height: 5, seed: 99)
        let loader = StubLoader { url in
            let name = url.deletingPathExtension().lastPathComponent
            if name.hasPrefix("same") { return .body(same) }
            let index = Int(name)!
            if index % 7 == 0 { return .status(404) }
            if index % 5 == 0 { return .body(TestImages.htmlErrorPage) }
            if index % 4 == 0 { return .body(TestImages.png(width: 1500, height: 1500, seed: UInt64(index))) }
            return .body(TestImages.png(width: 4, height: 4, seed: UInt64(index)))
        }
        let urls = (1...30).map(Self.url) + [Self.url(1), Self.url(2)]
            + [URL(string: "http://stub.test/img/same-a.png")!, URL(string: "http://stub.test/img/same-b.png")!]
        let sink = MemorySink(directory: folder.url, preloaded: [Self.url(3)])
        var configuration = Self.configuration(target: nil)
        configuration.transform = ImageTransform(fit: .longerSide, size: 2, encoding: .png)
        configuration.transform?.memoryLimit = 5 << 20  // a 1,500 × 1,500 decode takes more, a 4 × 4 one less
        let events = Locked<[Pipeline.Event]>([])

        // When every candidate is run
        let report = await Pipeline(configuration: configuration, loader: loader).run(from: ScriptedSource(urls), into: sink) { event in
            events.withLock { $0.append(event) }
        }

        // Then each candidate ended in exactly one event, those outcomes count to the report's tally, and a failed
        // resize is one of them (a failure with its URL, not only a log line)
        var ended: [String: Int] = [:]
        var counted = Tally()
        var resizesFailed = 0
        for case let .ended(.candidate(candidate), outcome) in events.withLock({ $0 }) {
            ended[candidate.provenance.key ?? "?", default: 0] += 1
            counted.count(outcome)
            if case let .failed(reason, message, _) = outcome, message.hasPrefix("could not resize") {
                #expect(reason == "too-large-to-decode", "\(reason)")
                resizesFailed += 1
            }
        }
        #expect(ended.count == urls.count && ended.values.allSatisfy { $0 == 1 }, "\(ended)")
        #expect(counted == report.tally)
        #expect(resizesFailed == 5)  // 4, 8, 12, 16 and 24 are large (20 is HTML, 28 a 404)
        #expect(report.tally.saved > 0 && report.tally.alreadySaved == 1 && report.tally.duplicates == 3)
    }
}
