import Foundation
import MirrorSearch
import MirrorStorage

/// The search feed as a pipeline's ``CandidateSource``: each new result of the provider chain becomes a candidate
/// named `<provider>-<id>`, with its provenance for the manifest and its reported size and type for admission.
public struct SearchSource: CandidateSource {
    /// The feed the candidates come from.
    public let feed: SearchFeed
    /// The query, recorded in each image's provenance.
    public let query: String

    /// Creates the source.
    public init(feed: SearchFeed, query: String) {
        self.feed = feed
        self.query = query
    }

    /// The feed drops a URL any provider returned before.
    public var yieldsDistinctURLs: Bool { true }

    public func next() async throws -> SourceItem? {
        try await feed.next().map { .candidate(candidate(for: $0)) }
    }

    /// The candidate for a search result.
    public func candidate(for result: ImageResult) -> Candidate {
        Candidate(
            url: result.imageURL,
            stem: "\(result.provider)-\(result.id)",
            provenance: ImageProvenance(
                provider: result.provider, id: result.id, title: result.title, pageURL: result.pageURL?.absoluteString,
                creator: result.creator?.name,
                license: result.license.map { [$0.code, $0.version].compactMap { $0 }.joined(separator: " ") },
                licenseURL: result.license?.url?.absoluteString, query: query
            ),
            result: result,
            reportedWidth: result.width,
            reportedHeight: result.height,
            reportedMIMEType: result.mimeType
        )
    }

    /// The download notification the provider's terms ask for (Unsplash's `download_location`); a failure is a line
    /// for the log.
    public func saveNotification(for candidate: Candidate) -> (@Sendable () async -> String?)? {
        guard let result = candidate.result, result.downloadLocation != nil else { return nil }
        let feed = self.feed
        return {
            do throws(SearchError) {
                _ = try await feed.notifySaved(result)
                return nil
            } catch {
                if case .cancelled = error { return nil }
                return "\(result.provider): the download notification for \(result.id) failed (\(error.message)); the image is kept"
            }
        }
    }
}
