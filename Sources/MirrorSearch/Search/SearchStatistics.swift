
/// What a ``SearchFeed`` has done so far: pages, requests, cache hits, and how each provider fared.
public struct SearchStatistics: Sendable, Hashable {
    /// Pages that arrived, from the network or a cache.
    public var pagesFetched = 0
    /// HTTP requests sent (token requests and retries included; cache hits excluded).
    public var requestsMade = 0
    /// Pages served from the page cache instead of the network.
    public var cacheHits = 0
    /// Results dropped as duplicates, within a provider's pages or across providers.
    public var duplicatesDropped = 0
    /// Download notifications (Unsplash's `download_location`) answered with a 2xx; see ``SearchFeed/notifySaved(_:)``.
    public var notificationsSent = 0
    /// Download notifications that failed for good (logged; they never fail an image).
    public var notificationsFailed = 0
    /// Per provider, keyed by registry name; a provider appears once the feed has started on it.
    public var perProvider: [String: ProviderStatistics] = [:]

    /// Empty statistics.
    public init() {}
}

/// How one provider of a ``SearchFeed`` fared.
public struct ProviderStatistics: Sendable, Hashable {
    /// Why a provider's walk ended.
    public enum End: Sendable, Hashable {
        /// The provider had no more results (or kept repeating the same page).
        case exhausted
        /// The provider's hard result cap was reached.
        case capped
        /// The `--pages` limit was reached.
        case pageLimit
        /// The provider failed; the message says why (never containing a key).
        case failed(String)
    }

    /// Pages that arrived, from the network or a cache.
    public var pages = 0
    /// Results handed out by the feed from this provider (new across all providers).
    public var results = 0
    /// Results of this provider dropped as duplicates (of its own earlier pages or of another provider).
    public var duplicates = 0
    /// HTTP requests sent to this provider, retries and token requests included.
    public var requests = 0
    /// Pages of this provider served from the page cache.
    public var cacheHits = 0
    /// Why the provider's walk ended, or `nil` while it goes on (or has not started).
    public var end: End?

    /// Empty statistics.
    public init() {}
}
