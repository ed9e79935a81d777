import Foundation
import MirrorSearch

/// How one provider of a search chain fared in a run: what the summary line and `--json` say about it.
///
/// A run reports every provider of the chain, in chain order, whether or not it was reached, so a cron mail
/// never leaves a reader guessing whether the second provider was tried.
public struct ProviderReport: Sendable, Hashable, Codable {
    /// Where a provider's walk stood when the run ended.
    public enum Status: String, Sendable, Hashable, Codable {
        /// The run ended (count reached, interrupted) while this provider still had results.
        case inUse = "in_use"
        /// The provider had no more results.
        case exhausted
        /// The provider's hard result cap was reached (Openverse's 20 pages, Google's 100 results, …).
        case capped
        /// `--pages` pages were fetched.
        case pageLimit = "page_limit"
        /// The provider failed and retries could not overcome it; ``ProviderReport/reason`` says why.
        case failed
        /// The run ended before the chain reached this provider.
        case notReached = "not_reached"
    }

    /// The provider's registry name, as `--provider` takes it.
    public var provider: String
    /// Where its walk stood at the end.
    public var status: Status
    /// Why it failed (never containing a key), or `nil` unless ``status`` is ``Status/failed``.
    public var reason: String?
    /// Results it handed out that no earlier provider had.
    public var results: Int
    /// Search pages that arrived from it (network or page cache).
    public var pages: Int
    /// HTTP requests sent to it (search pages, retries, tokens).
    public var requests: Int

    /// Creates a report.
    public init(provider: String, status: Status, reason: String? = nil, results: Int = 0, pages: Int = 0, requests: Int = 0) {
        self.provider = provider
        self.status = status
        self.reason = reason
        self.results = results
        self.pages = pages
        self.requests = requests
    }

    /// The report of `provider` from a feed's statistics (``Status/notReached`` when the feed never started on it).
    init(provider: String, statistics: ProviderStatistics?) {
        guard let statistics else {
            self.init(provider: provider, status: .notReached)
            return
        }
        let status: Status
        var reason: String?
        switch statistics.end {
        case nil: status = .inUse
        case .exhausted?: status = .exhausted
        case .capped?: status = .capped
        case .pageLimit?: status = .pageLimit
        case .failed(let message)?:
            status = .failed
            reason = message
        }
        self.init(
            provider: provider, status: status, reason: reason, results: statistics.results, pages: statistics.pages,
            requests: statistics.requests
        )
    }

    /// `"openverse failed (HTTP 503: Backend Error)"`, `"wikimedia had no more results"`, … for one-line messages.
    public var phrase: String {
        switch status {
        case .inUse: "\(provider) was in use"
        case .exhausted: results == 0 ? "\(provider) had no results" : "\(provider) had no more results"
        case .capped: "\(provider) reached its result cap"
        case .pageLimit: "\(provider) reached the --pages limit"
        case .failed: "\(provider) failed (\(reason ?? "no reason given"))"
        case .notReached: "\(provider) was not reached"
        }
    }
}
