import Foundation
import MirrorSync
import MirrorCore
import MirrorStorage

/// The stream of search candidates a job consumes: providers in order, pages fetched lazily, duplicates dropped.
///
/// Each call to ``next()`` returns one ``ImageResult`` whose normalised image URL has not been returned before by any
/// provider, fetching the next page only when the results in hand are used up. Behind it, each provider is walked by
/// its own ``SearchPaginator`` (cursors, page limit, caps, repeated pages, retry decisions), and requests go through an
/// ``APIClient`` (pacing per provider, page cache, transport).
///
/// The chain:
/// - Providers are used in the order given. The feed moves to the next one when the current one is exhausted (or
///   keeps repeating the same page), capped, at its page limit, or failed with an error that is neither
///   authentication nor configuration.
/// - An authentication or configuration failure is thrown at once (``SearchError/authentication(provider:variable:message:)``,
///   ``SearchError/configuration(provider:message:)``): the user must fix a key or a setting, and silently falling back
///   to another provider would hide that.
/// - When every provider has ended, ``next()`` returns `nil` — unless at least one failed and the feed never produced a
///   single result, in which case it throws ``SearchError/unavailable(provider:message:)`` (exit 5 rather than
///   "exhausted", exit 3). Later calls repeat the same answer.
/// - A provider that ``ImageProvider/needsAuthentication`` (Openverse with `OPENVERSE_CLIENT_ID`/`OPENVERSE_CLIENT_SECRET`)
///   authenticates once, before its first page.
/// - Task cancellation ends the current wait or transfer promptly and throws ``SearchError/cancelled``; the feed can
///   be called again afterwards and resumes with the same page.
///
/// Thread safety: the feed is `Sendable` and its state is behind a lock, but ``next()`` is meant to be called from one
/// task at a time (concurrent calls are safe but may fetch the same page twice). ``statistics`` may be read anytime.
///
/// ```swift
/// let feed = SearchFeed(providers: providers, query: SearchQuery(text: "kittens"), client: client, configuration: .init())
/// while let candidate = try await feed.next() {
///     enqueue(candidate)
/// }
/// print(feed.statistics.pagesFetched)
/// ```
public final class SearchFeed: Sendable {
    /// Limits, retries and caching for a feed.
    public struct Configuration: Sendable {
        // MARK: Limits

        /// The most pages fetched from each provider (`--pages`), or `nil` (the default) for no limit.
        public var pageLimit: Int?

        /// Consecutive pages without a new result that end a provider as exhausted. Default: 2
        /// (see ``SearchPaginator/Configuration/repeatLimit`` for why).
        public var repeatLimit = 2

        // MARK: Retries and pacing

        /// How failed page requests are retried. Default: 3 retries, full-jitter backoff from 0.5 s up to 30 s.
        public var retry: RetryPolicy

        /// The longest rate-limit wait (`Retry-After`, Wikimedia `maxlag`) waited out; a provider asking for more
        /// fails instead. Default: 5 minutes. It caps ``retry``'s `maximumRetryAfter` too.
        public var maximumRateLimitWait: Duration = .seconds(300)

        /// The least time between two requests to one provider, for every provider, or `nil` (the default) to use each
        /// provider's ``ImageProvider/minimumRequestInterval``. For tests and self-hosted endpoints.
        public var requestInterval: Duration?

        /// Seeds the backoff jitter, for reproducible tests; `nil` (the default) seeds from the system generator.
        public var jitterSeed: UInt64?

        // MARK: Caching

        /// How long a search page stays in the page cache. Default: one hour.
        public var pageTTL: Duration = .seconds(3600)

        /// The defaults documented on each property.
        public init() {
            retry = RetryPolicy()
        }

        /// The defaults, changed by `configure`.
        public init(_ configure: (inout Configuration) -> Void) {
            self.init()
            configure(&self)
        }

        /// ``retry`` with its `maximumRetryAfter` capped by ``maximumRateLimitWait``.
        var effectiveRetry: RetryPolicy {
            var policy = retry
            policy.maximumRetryAfter = min(policy.maximumRetryAfter, maximumRateLimitWait)
            return policy
        }
    }

    /// The providers, in the order they are used.
    public let providers: [any ImageProvider]
    /// The query sent to every provider.
    public let query: SearchQuery
    /// The client that sends the requests.
    public let client: APIClient
    /// The configuration in force.
    public let configuration: Configuration

    private let state: Locked<State>

    /// Creates a feed; nothing is fetched until the first ``next()``.
    /// - Parameters:
    ///   - providers: The providers, in order (for example from ``ProviderRegistry/make(named:environment:endpointOverride:)``).
    ///   - query: What to search for.
    ///   - client: The client that sends requests (and holds the page cache).
    ///   - configuration: Limits, retries and caching. Default: see ``Configuration``.
    public init(providers: [any ImageProvider], query: SearchQuery, client: APIClient, configuration: Configuration = Configuration()) {
        self.providers = providers
        self.query = query
        self.client = client
        self.configuration = configuration
        let paginatorConfiguration = SearchPaginator.Configuration(
            pageLimit: configuration.pageLimit,
            retry: configuration.effectiveRetry,
            repeatLimit: configuration.repeatLimit
        )
        let slots = providers.enumerated().map { index, provider in
            Slot(
                provider: provider,
                paginator: SearchPaginator(
                    initialCursor: provider.initialCursor,
                    configuration: paginatorConfiguration,
                    seed: configuration.jitterSeed.map { $0 &+ UInt64(index) }
                ),
                needsToken: provider.needsAuthentication
            )
        }
        state = Locked(State(slots: slots))
    }

    /// What the feed has done so far.
    public var statistics: SearchStatistics {
        state.withLock { $0.statistics }
    }

    /// The next candidate not returned before (de-duplicated across providers by normalised image URL), fetching
    /// pages as needed.
    ///
    /// - Returns: The candidate, or `nil` when every provider is exhausted, capped, at its page limit or failed (with
    ///   at least one result produced before).
    /// - Throws: ``SearchError/authentication(provider:variable:message:)`` or ``SearchError/configuration(provider:message:)``
    ///   as soon as a provider reports one; ``SearchError/unavailable(provider:message:)`` when every provider has
    ///   ended, one failed and nothing was produced; ``SearchError/cancelled`` when the task is cancelled.
    public func next() async throws(SearchError) -> ImageResult? {
        while true {
            if Task.isCancelled { throw .cancelled }
            let now = client.sleeper.now()
            let step = state.withLock { $0.nextStep(now: now) }
            switch step {
            case .result(let result):
                return result
            case .finished(nil):
                return nil
            case .finished(let error?):
                throw error
            case .wait(let delay):
                do {
                    try await client.sleeper.sleep(delay)
                } catch {
                    throw .cancelled
                }
            case .fetchToken(let index, let provider):
                try await fetchToken(slot: index, provider: provider)
            case .fetchPage(let index, let provider, let cursor):
                try await fetchPage(slot: index, provider: provider, cursor: cursor)
            }
        }
    }

    /// Sends the request `result`'s provider asks for once the image is saved (Unsplash's `download_location`), paced
    /// with that provider's search requests and retried like them.
    ///
    /// - Returns: `true` when a request was sent and answered with a 2xx, `false` when the provider asks for none.
    /// - Throws: ``SearchError/unavailable(provider:message:)`` (or another case) when it failed for good;
    ///   ``SearchError/cancelled``. The caller logs a failure and never fails the image for it.
    public func notifySaved(_ result: ImageResult) async throws(SearchError) -> Bool {
        let provider = state.withLock { state in state.slots.first { $0.provider.name == result.provider }?.provider }
        guard let provider, let request = provider.downloadNotification(for: result) else { return false }
        let failure = ProviderFailure(context: nil, authVariable: nil, secrets: [])
        do throws(SearchError) {
            _ = try await client.fetch(request, provider: provider.name, pacing: pacing(for: provider), retry: configuration.effectiveRetry) {
                response throws(ProviderError) in
                guard ProviderFailure.isSuccess(response.status) else { throw failure.classify(response) }
            }
        } catch {
            if case .cancelled = error { throw error }
            state.withLock { $0.statistics.notificationsFailed += 1 }
            throw error
        }
        state.withLock { $0.statistics.notificationsSent += 1 }
        return true
    }

    // MARK: - I/O steps

    private func pacing(for provider: any ImageProvider) -> Duration {
        configuration.requestInterval ?? provider.minimumRequestInterval
    }

    private func fetchPage(slot index: Int, provider: any ImageProvider, cursor: PageCursor) async throws(SearchError) {
        let name = provider.name
        let request: APIRequest
        do {
            request = try provider.request(for: cursor, query: query)
        } catch {
            let now = client.sleeper.now()
            state.withLock { $0.reportError(error, slot: index, now: now, requestMade: false) }
            return
        }
        do {
            let (page, fromCache) = try await client.attempt(
                request,
                provider: name,
                pacing: pacing(for: provider),
                cacheTTL: configuration.pageTTL
            ) { response throws(ProviderError) in
                try provider.parse(response, cursor: cursor)
            }
            state.withLock { $0.reportPage(page, slot: index, fromCache: fromCache) }
        } catch {
            switch error {
            case .cancelled:
                throw .cancelled
            case .provider(let error):
                let now = client.sleeper.now()
                state.withLock { $0.reportError(error, slot: index, now: now, requestMade: true) }
            }
        }
    }

    private func fetchToken(slot index: Int, provider: any ImageProvider) async throws(SearchError) {
        let name = provider.name
        let before = client.requestsSent(to: name)
        do throws(SearchError) {
            let request: APIRequest
            do {
                request = try provider.authenticationRequest()
            } catch {
                throw SearchError(error, provider: name)
            }
            let (authenticated, _) = try await client.fetch(
                request,
                provider: name,
                pacing: pacing(for: provider),
                retry: configuration.effectiveRetry,
                cacheTTL: nil
            ) { response throws(ProviderError) in
                try provider.authenticated(by: response)
            }
            let sent = client.requestsSent(to: name) - before
            state.withLock { $0.tokenArrived(authenticated, slot: index, requests: sent) }
        } catch {
            if case .cancelled = error { throw .cancelled }
            let sent = client.requestsSent(to: name) - before
            state.withLock { $0.tokenFailed(error, slot: index, requests: sent) }
        }
    }
}

// MARK: - State

extension SearchFeed {
    /// One provider's place in the chain.
    fileprivate struct Slot: Sendable {
        var provider: any ImageProvider
        var paginator: SearchPaginator
        var needsToken: Bool
        /// An action the paginator returned from a page or error report, to be carried out before asking it again.
        var pending: SearchPaginator.Action?
    }

    /// What ``SearchFeed/next()`` does after leaving the lock.
    fileprivate enum Step: Sendable {
        case result(ImageResult)
        case finished(SearchError?)
        case wait(Duration)
        case fetchToken(Int, any ImageProvider)
        case fetchPage(Int, any ImageProvider, PageCursor)
    }

    fileprivate struct State: Sendable {
        var slots: [Slot]
        var current = 0
        var buffer: [ImageResult] = []
        var bufferHead = 0
        var seen: Set<String> = []
        var statistics = SearchStatistics()
        var resultsProduced = 0
        /// The first provider that failed without needing user action, and why.
        var firstFailure: SearchError?
        /// Set once the feed is over: `nil` inside means "return nil", otherwise the error to throw.
        var outcome: SearchError??

        init(slots: [Slot]) {
            self.slots = slots
        }

        /// Runs the chain forward until it needs I/O or has a result.
        mutating func nextStep(now: ContinuousClock.Instant) -> Step {
            while true {
                if bufferHead < buffer.count {
                    let result = buffer[bufferHead]
                    bufferHead += 1
                    if bufferHead == buffer.count {
                        buffer.removeAll(keepingCapacity: true)
                        bufferHead = 0
                    }
                    return .result(result)
                }
                if let outcome {
                    return .finished(outcome)
                }
                guard current < slots.count else {
                    outcome = .some(resultsProduced == 0 ? firstFailure : nil)
                    continue
                }
                let name = slots[current].provider.name
                if statistics.perProvider[name] == nil {
                    statistics.perProvider[name] = ProviderStatistics()
                }
                if slots[current].needsToken {
                    return .fetchToken(current, slots[current].provider)
                }
                let action = slots[current].pending.take() ?? slots[current].paginator.wantMore(now: now)
                switch action {
                case .fetch(let cursor):
                    return .fetchPage(current, slots[current].provider, cursor)
                case .wait(let delay):
                    if delay > .zero { return .wait(delay) }
                case .yield(let results):
                    accept(results, provider: name)
                case .finish(let reason):
                    end(slot: current, reason: reason)
                }
            }
        }

        /// Adds results new across providers to the buffer.
        private mutating func accept(_ results: [ImageResult], provider name: String) {
            var fresh = 0
            for result in results where seen.insert(CacheKey(url: result.imageURL).normalizedURL).inserted {
                buffer.append(result)
                fresh += 1
            }
            let dropped = results.count - fresh
            resultsProduced += fresh
            statistics.perProvider[name, default: ProviderStatistics()].results += fresh
            statistics.perProvider[name, default: ProviderStatistics()].duplicates += dropped
            statistics.duplicatesDropped += dropped
        }

        /// Records why a provider ended and moves on, or stops the feed when the user must act.
        private mutating func end(slot index: Int, reason: SearchPaginator.EndReason) {
            let name = slots[index].provider.name
            let end: ProviderStatistics.End
            switch reason {
            case .exhausted, .repeatedPages: end = .exhausted
            case .capped: end = .capped
            case .pageLimit: end = .pageLimit
            case .failed(let error):
                let searchError = SearchError(error, provider: name)
                end = .failed(error.message)
                if searchError.needsUserAction {
                    outcome = .some(searchError)
                } else if firstFailure == nil {
                    firstFailure = searchError
                }
            }
            statistics.perProvider[name, default: ProviderStatistics()].end = end
            if index == current { current += 1 }
        }

        mutating func reportPage(_ page: SearchPage, slot index: Int, fromCache: Bool) {
            let name = slots[index].provider.name
            let duplicatesBefore = slots[index].paginator.duplicates
            slots[index].pending = slots[index].paginator.pageArrived(page)
            let duplicates = slots[index].paginator.duplicates - duplicatesBefore
            statistics.pagesFetched += 1
            statistics.duplicatesDropped += duplicates
            var provider = statistics.perProvider[name, default: ProviderStatistics()]
            provider.pages += 1
            provider.duplicates += duplicates
            if fromCache {
                statistics.cacheHits += 1
                provider.cacheHits += 1
            } else {
                statistics.requestsMade += 1
                provider.requests += 1
            }
            statistics.perProvider[name] = provider
        }

        mutating func reportError(_ error: ProviderError, slot index: Int, now: ContinuousClock.Instant, requestMade: Bool) {
            let name = slots[index].provider.name
            slots[index].pending = slots[index].paginator.errorArrived(error, now: now)
            if requestMade {
                statistics.requestsMade += 1
                statistics.perProvider[name, default: ProviderStatistics()].requests += 1
            }
        }

        mutating func tokenArrived(_ provider: any ImageProvider, slot index: Int, requests: Int) {
            slots[index].provider = provider
            slots[index].needsToken = false
            countRequests(requests, provider: provider.name)
        }

        mutating func tokenFailed(_ error: SearchError, slot index: Int, requests: Int) {
            let name = slots[index].provider.name
            countRequests(requests, provider: name)
            slots[index].needsToken = false
            let message: String
            switch error {
            case .authentication(_, _, let text), .configuration(_, let text), .unavailable(_, let text): message = text
            case .cancelled: message = "cancelled"
            }
            statistics.perProvider[name, default: ProviderStatistics()].end = .failed(message)
            if error.needsUserAction {
                outcome = .some(error)
            } else if firstFailure == nil {
                firstFailure = error
            }
            if index == current { current += 1 }
        }

        private mutating func countRequests(_ count: Int, provider name: String) {
            guard count > 0 else { return }
            statistics.requestsMade += count
            statistics.perProvider[name, default: ProviderStatistics()].requests += count
        }
    }
}
