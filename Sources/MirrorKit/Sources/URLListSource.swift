import Foundation
import MirrorTransport

/// A URL list as a pipeline's ``CandidateSource``: its URLs in order, each named after its last path segment.
public final class URLListSource: CandidateSource {
    private let list: URLList
    private let position = Locked(0)

    /// Creates the source over a parsed list.
    public init(_ list: URLList) {
        self.list = list
    }

    /// A parsed list holds each normalised URL once.
    public var yieldsDistinctURLs: Bool { true }

    public func next() async throws -> Candidate? {
        let urls = list.urls
        let index = position.withLock { position -> Int? in
            guard position < urls.count else { return nil }
            defer { position += 1 }
            return urls.index(urls.startIndex, offsetBy: position)
        }
        guard let index else { return nil }
        let url = urls[index]
        return Candidate(url: url, stem: FileNaming.stem(of: url))
    }
}
