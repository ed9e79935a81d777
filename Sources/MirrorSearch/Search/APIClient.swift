import Foundation
import MirrorSync
import MirrorCore
import MirrorStorage
import MirrorTransport

/// Sends providers' ``APIRequest``s: paced per provider, through the page cache, with retries.
///
/// Three jobs sit here so that providers stay pure and the paginator stays free of I/O:
/// - **Pacing.** Two requests to the same provider (by registry name) start at least `pacing` apart, measured from
///   the *end* of the previous request, so even the arrival times the server sees are spaced. Slots are reserved under
///   a lock, so concurrent callers sharing one client queue up instead of bursting. Cache hits are not paced.
/// - **Caching.** With a cache and a TTL, a page is looked up under `CacheKey(namespace: "page", string:
///   request.cacheKey)` (memory, then disk) before any request; providers build `cacheKey` without secrets. Only a 2xx
///   body that `decode` accepted is stored (the raw body; a hit is decoded again), so an error inside a 200 body (a
///   Wikimedia `maxlag`, a Flickr `stat: fail`) is never replayed. `POST` requests are never cached.
/// - **Retries.** ``fetch(_:provider:pacing:retry:cacheTTL:decode:)`` retries what ``ProviderError/isRetryable``
///   (network errors, 408, 5xx, malformed bodies, rate limits) with ``RetryPolicy``: full-jitter backoff, never
///   sooner than the server's `Retry-After`, and giving up at once when that is beyond ``RetryPolicy/maximumRetryAfter``.
///   Authentication, configuration and permanent errors fail at once. ``attempt(_:provider:pacing:cacheTTL:decode:)``
///   makes exactly one try, for callers (``SearchFeed`` through ``SearchPaginator``) that own the retry decision.
///
/// Every request carries ``userAgent``: by default `mirror/<version> libcurl/<version>` (``MirrorVersion/userAgent``);
/// the Wikimedia User-Agent policy asks for one that also says who runs the client and how to reach them
/// (`--user-agent`). Thread safety: every method may be called from any task at once.
///
/// ```swift
/// let client = APIClient(loader: CurlMultiDriver(), cache: ImageCache())
/// let request = try provider.request(for: provider.initialCursor, query: SearchQuery(text: "kittens"))
/// let (page, fromCache) = try await client.fetch(request, provider: provider.name, pacing: provider.minimumRequestInterval) {
///     response throws(ProviderError) in try provider.parse(response, cursor: provider.initialCursor)
/// }
/// ```
public final class APIClient: Sendable {
    /// The clock and the sleep used for pacing and retry delays (the library's one ``MirrorCore/Sleeper``).
    public typealias Sleeper = MirrorCore.Sleeper

    /// Why a single ``attempt(_:provider:pacing:cacheTTL:decode:)`` failed.
    public enum AttemptError: Error, Sendable, Hashable {
        /// The request failed; transport failures arrive as ``ProviderError/transient(message:)`` (network trouble)
        /// or ``ProviderError/permanent(message:)`` (TLS, a body over the limit, a refused redirect).
        case provider(ProviderError)
        /// The calling task was cancelled.
        case cancelled
    }

    /// The transport (in production a ``CurlMultiDriver``).
    public let loader: any HTTPLoading
    /// The page cache, or `nil` for none.
    public let cache: ImageCache?
    /// The retry policy ``fetch(_:provider:pacing:retry:cacheTTL:decode:)`` uses when given none. Default: 3 retries.
    public let retry: RetryPolicy
    /// The clock and sleep for pacing and retry delays. Default: ``Sleeper/real``.
    public let sleeper: Sleeper
    /// The limit on one whole request. Default: 60 s.
    public let timeout: Duration
    /// The `User-Agent` of every request. Default: ``MirrorVersion/userAgent``.
    public let userAgent: String

    /// The largest API response accepted: 32 MiB (a Wikimedia batch of 500 with metadata is a few MiB).
    package static let maximumBodyBytes: Int64 = 32 << 20

    private let pacingSlots = Locked<[String: ContinuousClock.Instant]>([:])
    private let requestCounts = Locked<[String: Int]>([:])

    /// Creates a client.
    /// - Parameters:
    ///   - loader: The transport (in production a ``CurlMultiDriver``).
    ///   - cache: The page cache, or `nil` for none.
    ///   - retry: The default retry policy. Default: 3 retries, 0.5 s base delay, 30 s ceiling, `Retry-After` up to 5 min.
    ///   - sleeper: The clock and sleep. Default: ``Sleeper/real``.
    ///   - timeout: The limit on one whole request. Default: 60 s.
    ///   - userAgent: The `User-Agent` of every request. Default: ``MirrorVersion/userAgent``.
    public init(
        loader: any HTTPLoading,
        cache: ImageCache?,
        retry: RetryPolicy = RetryPolicy(),
        sleeper: Sleeper = .real,
        timeout: Duration = .seconds(60),
        userAgent: String = MirrorVersion.userAgent
    ) {
        self.loader = loader
        self.cache = cache
        self.retry = retry
        self.sleeper = sleeper
        self.timeout = timeout
        self.userAgent = userAgent
    }

    /// HTTP requests sent to `provider` so far (cache hits excluded).
    public func requestsSent(to provider: String) -> Int {
        requestCounts.withLock { $0[provider, default: 0] }
    }

    /// The cache key of a request's page: `CacheKey(namespace: "page", string: request.cacheKey)`.
    public static func pageKey(for request: APIRequest) -> CacheKey {
        CacheKey(namespace: "page", string: request.cacheKey)
    }

    // MARK: - With retries

    /// Sends `request` and decodes the answer, retrying what can be retried.
    ///
    /// - Parameters:
    ///   - request: The request.
    ///   - provider: The provider's registry name, for pacing and messages.
    ///   - pacing: The least time between the end of one request to this provider and the start of the next.
    ///   - retry: The policy; `nil` (the default) uses ``retry``.
    ///   - cacheTTL: How long a decoded 2xx page stays cached; `nil` (the default) bypasses the cache.
    ///   - decode: Turns a response into a value or classifies it as a ``ProviderError`` (usually a provider's `parse`).
    /// - Returns: The decoded value and whether it came from the cache.
    /// - Throws: ``SearchError/authentication(provider:variable:message:)`` and ``SearchError/configuration(provider:message:)``
    ///   at once; ``SearchError/unavailable(provider:message:)`` for other errors once retries are spent;
    ///   ``SearchError/cancelled`` when the task is cancelled.
    public func fetch<Value>(
        _ request: APIRequest,
        provider: String,
        pacing: Duration,
        retry: RetryPolicy? = nil,
        cacheTTL: Duration? = nil,
        decode: (APIResponse) throws(ProviderError) -> Value
    ) async throws(SearchError) -> (value: Value, fromCache: Bool) {
        do {
            return try await (retry ?? self.retry).run(using: sleeper) { () async throws(AttemptError) in
                try await attempt(request, provider: provider, pacing: pacing, cacheTTL: cacheTTL, decode: decode)
            } isRetryable: { error in
                if case let .provider(failure) = error { failure.isRetryable } else { false }
            } retryAfter: { error in
                if case let .provider(.rateLimited(hint, _)) = error { hint } else { nil }
            } interrupted: { _ in
                .cancelled
            }
        } catch {
            switch error {
            case .cancelled: throw .cancelled
            case let .provider(failure): throw SearchError(failure, provider: provider)
            }
        }
    }

    /// Sends `request` with retries and returns the final response whatever its status (no decoding).
    ///
    /// Network errors, 408, 429 and 5xx are retried as in ``fetch(_:provider:pacing:retry:cacheTTL:decode:)``; any other
    /// answer is returned. With a `cacheTTL`, a 2xx body is cached and a later identical request is answered from it.
    /// - Throws: ``SearchError/unavailable(provider:message:)`` once retries are spent, ``SearchError/cancelled``.
    public func fetch(
        _ request: APIRequest,
        provider: String,
        pacing: Duration,
        cacheTTL: Duration? = nil
    ) async throws(SearchError) -> (response: APIResponse, fromCache: Bool) {
        let failure = ProviderFailure(context: nil, authVariable: nil, secrets: [])
        let (response, fromCache) = try await fetch(request, provider: provider, pacing: pacing, cacheTTL: cacheTTL) {
            response throws(ProviderError) -> APIResponse in
            if ProviderFailure.isSuccess(response.status) { return response }
            let error = failure.classify(response)
            if error.isRetryable { throw error }
            return response
        }
        return (response, fromCache)
    }

    // MARK: - One attempt

    /// Answers `request` from the cache, or sends it once, paced, and decodes the answer; no retries.
    ///
    /// A cache hit that `decode` rejects is removed and the request is sent instead.
    /// - Parameters: as for ``fetch(_:provider:pacing:retry:cacheTTL:decode:)``.
    /// - Throws: ``AttemptError/provider(_:)`` with `decode`'s error or the transport failure, ``AttemptError/cancelled``.
    public func attempt<Value>(
        _ request: APIRequest,
        provider: String,
        pacing: Duration,
        cacheTTL: Duration? = nil,
        decode: (APIResponse) throws(ProviderError) -> Value
    ) async throws(AttemptError) -> (value: Value, fromCache: Bool) {
        let key = Self.pageKey(for: request)
        let cacheable = cacheTTL != nil && request.method == .get
        if cacheable, let cache, let body = cache.page(for: key).value {
            do {
                return (try decode(APIResponse(status: 200, headers: [:], body: body)), true)
            } catch {
                // A cached body the provider no longer accepts (written by an older parser, say): refetch.
                cache.remove(key)
            }
        }
        if Task.isCancelled { throw .cancelled }

        try await waitForTurn(provider: provider, pacing: pacing)
        requestCounts.withLock { $0[provider, default: 0] += 1 }
        let result: Result<HTTPResponse, TransportError>
        do {
            result = .success(try await loader.perform(transferRequest(for: request)))
        } catch {
            result = .failure(error)
        }
        finishedTurn(provider: provider, pacing: pacing)

        let response: HTTPResponse
        switch result {
        case .success(let value):
            response = value
        case .failure(.cancelled):
            throw .cancelled
        case .failure(let error):
            if Task.isCancelled { throw .cancelled }
            let message = error.description
            throw .provider(error.isTransient ? .transient(message: message) : .permanent(message: message))
        }

        var headers: [String: String] = [:]
        for (name, value) in response.headers { headers[name] = value }
        let apiResponse = APIResponse(status: response.status, headers: headers, body: response.body)
        let value: Value
        do {
            value = try decode(apiResponse)
        } catch {
            throw .provider(error)
        }
        if cacheable, let cacheTTL, let cache, ProviderFailure.isSuccess(response.status) {
            // Best effort: a page that cannot be cached is still a good page. Some APIs echo request
            // parameters (Google echoes `cx`), so credentials are scrubbed from the body before it is stored.
            try? cache.storePage(Self.scrubbingCredentials(of: request, from: response.body), for: key, ttl: cacheTTL)
        }
        return (value, false)
    }

    // MARK: - Internals

    private func transferRequest(for request: APIRequest) -> TransferRequest {
        var transfer = TransferRequest(url: request.url)
        transfer.method = request.method.rawValue
        transfer.headers = request.headers.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
        transfer.body = request.body
        transfer.userAgent = userAgent
        transfer.totalTimeout = timeout
        transfer.maximumBodyBytes = Self.maximumBodyBytes
        return transfer
    }

    /// Waits until `provider`'s next slot and reserves it: the slot after it is at least `pacing` later.
    private func waitForTurn(provider: String, pacing: Duration) async throws(AttemptError) {
        guard pacing > .zero else { return }
        let now = sleeper.now()
        let delay = pacingSlots.withLock { slots -> Duration in
            let slot = max(now, slots[provider] ?? now)
            slots[provider] = slot + pacing
            return slot - now
        }
        guard delay > .zero else { return }
        do {
            try await sleeper.sleep(delay)
        } catch {
            throw .cancelled
        }
    }

    /// Moves `provider`'s next slot to at least `pacing` after now, the end of the request just made.
    private func finishedTurn(provider: String, pacing: Duration) {
        guard pacing > .zero else { return }
        let earliest = sleeper.now() + pacing
        pacingSlots.withLock { slots in
            slots[provider] = max(slots[provider] ?? earliest, earliest)
        }
    }
}

extension APIClient {
    /// Query items whose values are credentials, beyond the secret names `CacheKey` drops.
    static let credentialQueryItems: Set<String> = ["cx"]

    /// The body with every credential the request carried (secret query values, `Authorization` header
    /// values) replaced, so that nothing written to the page cache holds a key.
    static func scrubbingCredentials(of request: APIRequest, from body: Data) -> Data {
        var secrets: [String] = []
        if let items = URLComponents(url: request.url, resolvingAgainstBaseURL: false)?.queryItems {
            for item in items {
                let name = item.name.lowercased()
                let isSecret = CacheKey.droppedQueryItemNames.contains(name) || credentialQueryItems.contains(name)
                if isSecret, let value = item.value, value.count >= 4 { secrets.append(value) }
            }
        }
        for (name, value) in request.headers where name.lowercased() == "authorization" {
            let token = value.split(separator: " ").last.map(String.init) ?? value
            if token.count >= 4 { secrets.append(token) }
        }
        guard !secrets.isEmpty else { return body }
        var scrubbed = body
        for secret in secrets {
            let needle = Data(secret.utf8)
            while let range = scrubbed.range(of: needle) {
                scrubbed.replaceSubrange(range, with: Data("REDACTED".utf8))
            }
        }
        return scrubbed
    }
}
