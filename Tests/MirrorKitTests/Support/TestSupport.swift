import Foundation
@testable import MirrorModel
import MirrorSync
@testable import MirrorCore
@testable import MirrorFetch
import MirrorImages
@testable import MirrorKit
@testable import MirrorSearch
@testable import MirrorStorage
import MirrorTestSupport
import MirrorTransport

extension TemporaryFolder {
    /// A verified image of `data` in a temporary file in `directory` (default: here), downloaded from `source`, as a
    /// download leaves one.
    func verifiedImage(
        _ data: Data, validator: ImageValidator = ImageValidator(), in directory: URL? = nil, from source: URL = URL(string: "http://h.test/a")!
    ) throws -> VerifiedImage {
        let temporary = try AtomicFile.makeTemporary(in: directory ?? url)
        try data.write(to: temporary.url)
        close(temporary.descriptor)
        return VerifiedImage(
            url: source, effectiveURL: source, temporaryFile: temporary.url,
            info: try validator.validate(data), bytes: Int64(data.count), sha256: sha256Hex(data), source: .none, attempts: 1,
            fetchedAt: Date()
        )
    }
}

/// A manager configured for fast tests: short backoff so retries do not slow the suite.
func makeManager(_ configure: (inout DownloadManager.Configuration) -> Void = { _ in }) -> DownloadManager {
    var configuration = DownloadManager.Configuration()
    configuration.retry = RetryPolicy(maximumRetries: 3, baseDelay: .milliseconds(10), maximumDelay: .milliseconds(50))
    configure(&configuration)
    return DownloadManager(configuration: configuration)
}

/// Collects outcomes from many threads, and when the last one arrived.
final class Outcomes: Sendable {
    private let results = Locked<(byURL: [URL: DownloadResult], last: ContinuousClock.Instant?)>(([:], nil))

    func record(_ url: URL, _ result: DownloadResult) {
        let now = ContinuousClock.now
        results.withLock { $0.byURL[url] = result; $0.last = now }
    }

    var all: [URL: DownloadResult] { results.withLock { $0.byURL } }

    /// When the latest outcome was recorded: the manager's own timing, which a test's `await` resuming late on a
    /// busy cooperative pool does not stretch.
    var lastRecorded: ContinuousClock.Instant? { results.withLock { $0.last } }
}


extension Result {
    var success: Success? { if case let .success(value) = self { value } else { nil } }
    var failure: Failure? { if case let .failure(error) = self { error } else { nil } }
}

extension DownloadResult {
    var success: VerifiedImage? { if case let .verified(image) = self { image } else { nil } }
    var failure: DownloadError? { if case let .failed(error) = self { error } else { nil } }
    var keptOut: RowOutcome? { if case let .keptOut(outcome) = self { outcome } else { nil } }
}

/// A text table of `lines` (one URL each), written to a temporary file and opened as a pipeline source.
func urlTable(_ lines: [String]) throws -> TableSource {
    let file = FileManager.default.temporaryDirectory.appendingPathComponent("mirror-table-\(UUID().uuidString).txt")
    try lines.joined(separator: "\n").write(to: file, atomically: true, encoding: .utf8)
    defer { try? FileManager.default.removeItem(at: file) }  // the reader keeps its descriptor open
    return TableSource(try TableReader(path: file.path))
}
