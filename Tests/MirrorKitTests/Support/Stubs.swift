import Crypto
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
import Testing

// The stubs behind the seams, shared by every suite: a scripted source, a stub transport and an in-memory sink.

/// A scripted ``CandidateSource``: the candidates given (each with its position as its row key), then nil (or a thrown
/// error).
final class ScriptedSource: CandidateSource {
    private let candidates: Locked<[Candidate]>
    private let failure: (any Error & Sendable)?
    let asked = Locked(0)
    let notified = Locked<[URL]>([])

    /// Awaited before each candidate is given, with the candidate's index (to hold one back until something happened).
    private let gate: (@Sendable (Int) async -> Void)?

    init(_ urls: [URL], failingAtEndWith failure: (any Error & Sendable)? = nil, gate: (@Sendable (Int) async -> Void)? = nil) {
        candidates = Locked(urls.enumerated().map { row, url in
            var provenance = ImageProvenance()
            provenance.key = String(row)
            return Candidate(url: url, stem: url.deletingPathExtension().lastPathComponent, provenance: provenance)
        })
        self.failure = failure
        self.gate = gate
    }

    func next() async throws -> SourceItem? {
        let index = asked.withLock { count -> Int in
            defer { count += 1 }
            return count
        }
        await gate?(index)
        if let next = candidates.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) { return .candidate(next) }
        if let failure { throw failure }
        return nil
    }

    func saveNotification(for candidate: Candidate) -> (@Sendable () async -> String?)? {
        { [notified] in
            notified.withLock { $0.append(candidate.url) }
            return nil
        }
    }
}

/// A stub ``HTTPLoading``, the one of the unit tests: answers each request from a script on a background queue,
/// writing 2xx bodies to the request's sink as the real driver does; `.hang` answers only when cancelled. It records
/// every request (URLs, and whole for what a test checks of its headers and method).
final class StubLoader: HTTPLoading {
    enum Answer: Sendable {
        case body(Data)
        case status(Int)
        /// A whole response with its body in memory and an `ETag` (as object storage answers).
        case response(Int, body: String)
        case hang
    }

    private let script: @Sendable (URL) -> Answer
    let requests = Locked<[URL]>([])
    /// Every request, whole.
    let transfers = Locked<[TransferRequest]>([])

    /// The requests so far, whole.
    var recorded: [TransferRequest] { transfers.withLock { $0 } }

    /// Answers requests in order from `answers` (status, body), then 500 to any more.
    static func sequence(_ answers: [(Int, String)]) -> StubLoader {
        let queue = Locked(answers.map { Answer.response($0.0, body: $0.1) })
        return StubLoader { _ in queue.withLock { $0.isEmpty ? .response(500, body: "") : $0.removeFirst() } }
    }
    private let hanging = Locked<[Int: @Sendable (Result<HTTPResponse, TransportError>) -> Void]>([:])
    private let nextID = Locked(0)

    init(_ script: @escaping @Sendable (URL) -> Answer) {
        self.script = script
    }

    private struct Handle: Cancellable {
        let cancelBody: @Sendable () -> Void
        func cancel() { cancelBody() }
    }

    func load(_ request: TransferRequest, completion: @escaping @Sendable (Result<HTTPResponse, TransportError>) -> Void) -> any Cancellable {
        requests.withLock { $0.append(request.url) }
        transfers.withLock { $0.append(request) }
        let answer = script(request.url)
        let id = nextID.withLock { $0 += 1; return $0 }
        if case .hang = answer {
            hanging.withLock { $0[id] = completion }
        } else {
            DispatchQueue.global().async {
                switch answer {
                case let .body(data):
                    if case let .sink(sink) = request.destination {
                        do {
                            try data.withUnsafeBytes { try sink.write($0) }
                        } catch {
                            completion(.failure(.destinationFailed("stub")))
                            return
                        }
                    }
                    completion(.success(HTTPResponse(status: 200, effectiveURL: request.url, bytesReceived: Int64(data.count))))
                case let .status(status):
                    completion(.success(HTTPResponse(status: status, effectiveURL: request.url)))
                case let .response(status, body):
                    completion(.success(HTTPResponse(
                        status: status, headers: [("etag", "\"tag\"")], effectiveURL: request.url, redirectCount: 0,
                        bytesReceived: Int64(body.utf8.count), body: Data(body.utf8), timings: .zero, connectionsOpened: 0
                    )))
                case .hang:
                    break
                }
            }
        }
        return Handle { [hanging] in
            hanging.withLock { $0.removeValue(forKey: id) }?(.failure(.cancelled))
        }
    }
}

/// An in-memory ``ImageSink``: keeps published bytes in a dictionary, refuses repeated bytes, admits up to a limit,
/// and can be told to fail every publication (a full disk).
final class MemorySink: ImageSink {
    let stagingDirectory: URL
    private let limit: Int?
    private let failing: Bool
    let held = Locked<[String: Data]>([:])  // sha256 → bytes
    let urls = Locked<Set<String>>([])
    /// Rows (provenance keys) held before the run, for a sink that tells by row as shards do; `nil` tells by URL.
    private let heldRows: Set<String>?

    init(directory: URL, limit: Int? = nil, preloaded: [URL] = [], heldRows: Set<String>? = nil, failing: Bool = false) {
        stagingDirectory = directory
        self.limit = limit
        self.failing = failing
        self.heldRows = heldRows
        urls.withLock { $0 = Set(preloaded.map { CacheKey(url: $0).normalizedURL }) }
    }

    var containsTellsByRow: Bool { heldRows != nil }

    func contains(normalizedURL: String, provenance: ImageProvenance) -> Bool {
        if let heldRows { return provenance.key.map(heldRows.contains) ?? false }
        return urls.withLock { $0.contains(normalizedURL) }
    }

    func publish(_ image: VerifiedImage, stem: String, provenance: ImageProvenance, completion: @escaping @Sendable (Publication) -> Void) {
        completion(store(image, stem: stem, provenance: provenance))
    }

    private func store(_ image: VerifiedImage, stem: String, provenance: ImageProvenance) -> Publication {
        defer { AtomicFile.remove(image.temporaryFile) }
        if failing { return .failure(.unwritable(FileError(operation: "write", path: stagingDirectory.path, code: ENOSPC))) }
        let data = (try? Data(contentsOf: image.temporaryFile)) ?? Data()
        return held.withLock { held in
            if held[image.sha256] != nil { return .success(.duplicate(of: image.sha256)) }
            if let limit, held.count >= limit { return .failure(.notAdmitted) }
            held[image.sha256] = data
            urls.withLock { _ = $0.insert(CacheKey(url: image.url).normalizedURL) }
            return .success(.saved(ManifestRecord(file: stem, image: image, provenance: provenance), source: image.source))
        }
    }

    /// How each candidate that published nothing ended, by URL (a bad row by `row KEY`).
    let settled = Locked<[String: RowOutcome]>([:])

    func settle(url: URL?, provenance: ImageProvenance, as outcome: RowOutcome) {
        settled.withLock { $0[url?.absoluteString ?? "row " + (provenance.key ?? "?")] = outcome }
    }

    var publishedCount: Int { held.withLock { $0.count } }

    func drain() async {}
}
