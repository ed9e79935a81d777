import Foundation
import MirrorModel
import MirrorSearch
import MirrorStorage
import MirrorTransport

/// The search side of a job: its providers, its query, its feed, and the dry run.
extension MirrorJob {
    /// Builds the providers of the chain, reading keys and endpoint overrides from the environment.
    public func makeProviders() throws -> [any ImageProvider] {
        if configuration.endpoint != nil && configuration.providers.count != 1 { throw Failure.ambiguousEndpoint }
        return try configuration.providers.map { name in
            guard ProviderRegistry.names.contains(name) else { throw Failure.unknownProvider(name) }
            do throws(ProviderError) {
                return try ProviderRegistry.make(named: name, environment: configuration.environment, endpointOverride: configuration.endpoint)
            } catch {
                throw Self.failure(building: name, error)
            }
        }
    }

    /// The query as providers receive it.
    var searchQuery: SearchQuery {
        var query = SearchQuery(text: configuration.query)
        if let filter = configuration.filter {
            query.minWidth = filter.minimumWidth > 0 ? filter.minimumWidth : nil
            query.minHeight = filter.minimumHeight > 0 ? filter.minimumHeight : nil
            query.formats = filter.formats.map { $0.map(\.rawValue).sorted() } ?? []
        }
        query.licenses = configuration.licenses
        return query
    }

    // MARK: Dry run

    /// The candidate URLs a run would fetch (up to the missing count), without downloading or writing anything.
    public func candidates(loader: (any HTTPLoading)? = nil) async throws -> [ImageResult] {
        let providers = try makeProviders()
        let manifest = ManifestRecord.read(from: configuration.directory.appendingPathComponent("manifest.jsonl"))
        let have = Set(manifest.compactMap { URL(string: $0.url).map { CacheKey(url: $0).normalizedURL } })
        let missing = max(0, configuration.count - manifest.count)
        let driver = loader == nil ? CurlMultiDriver() : nil
        defer { driver?.shutdown() }
        let feed = makeFeed(providers: providers, loader: loader ?? driver!)
        let source = SearchSource(feed: feed, query: configuration.query)
        var results: [ImageResult] = []
        while results.count < missing {
            let next: SourceItem?
            do {
                next = try await source.next()
            } catch {
                throw Self.failure(from: error, summary: summary(of: feed.statistics, report: nil, folder: nil, started: .now))
            }
            guard case let .candidate(candidate)? = next, let result = candidate.result else { break }
            if have.contains(CacheKey(url: candidate.url).normalizedURL) || configuration.filter?.rejection(
                reportedWidth: candidate.reportedWidth, reportedHeight: candidate.reportedHeight, mimeType: candidate.reportedMIMEType
            ) != nil { continue }
            results.append(result)
        }
        return results
    }

    func makeFeed(providers: [any ImageProvider], loader: any HTTPLoading) -> SearchFeed {
        var feedConfiguration = SearchFeed.Configuration()
        feedConfiguration.pageLimit = configuration.pageLimit
        feedConfiguration.retry = configuration.apiRetry
        // For tests, emulators and self-hosted endpoints only: the real APIs get their own pacing.
        if let text = configuration.environment["MIRROR_API_INTERVAL_MS"], let milliseconds = Int(text), milliseconds >= 0 {
            feedConfiguration.requestInterval = .milliseconds(milliseconds)
        }
        // The API calls carry the images' User-Agent (`--user-agent`): one agent for every request of the run.
        let client = APIClient(
            loader: loader, cache: configuration.downloads.cache, retry: configuration.apiRetry, userAgent: configuration.downloads.userAgent
        )
        return SearchFeed(providers: providers, query: searchQuery, client: client, configuration: feedConfiguration)
    }
}
