import Foundation

/// An in-memory cache of small `Data` values (API pages, small bodies) keyed by ``CacheKey``, with byte
/// costs, a count limit and optional expiry.
///
/// It wraps Foundation's `NSCache`, charging each value its byte count as cost. Values larger than
/// ``Configuration/entryCostLimit`` are not kept at all.
///
/// - Important: On Linux, swift-corelibs-foundation's `NSCache` is **not** Apple's. It keeps entries in a
///   list sorted by cost and, when a limit is exceeded, evicts the **cheapest entries first**, not the
///   least recently used; reading a value does not change what is evicted next. Among entries of equal
///   cost the newest goes first, so a store can evict the very value it just stored when that value is
///   the cheapest one present. Each insert walks that list, so it is O(n) in the number of entries
///   (quadratic for bulk loads), and nothing is purged on memory pressure. What that means here:
///   - keep this cache for small values that are cheap to fetch again, such as API pages; image bodies
///     belong in ``DiskCache``;
///   - a miss is always possible right after a store, so callers treat this cache as a hint;
///   - ``Configuration/entryCostLimit`` (1 MiB) stops one large value from flushing dozens of small ones,
///     and ``Configuration/countLimit`` keeps the O(n) insert list short.
///
/// Thread safety: every method may be called from any thread at once. The type is `@unchecked Sendable`
/// because `NSCache` is explicitly non-`Sendable` on Linux, but corelibs' `NSCache` serializes every
/// call with its internal `NSLock` (`_lock`), and this class holds no other mutable state.
///
/// ```swift
/// let cache = MemoryCache()
/// cache.store(pageData, for: key, expiresAt: Date().addingTimeInterval(600))
/// if let data = cache.value(for: key) { … }
/// ```
public final class MemoryCache: @unchecked Sendable {
    /// Limits of a ``MemoryCache``.
    public struct Configuration: Sendable, Hashable {
        /// The total cost, in bytes, above which entries are evicted (cheapest first, see ``MemoryCache``).
        /// Default: 64 MiB. Zero means no limit.
        public var totalCostLimit: Int

        /// The number of entries above which entries are evicted. Default: 1,000. Zero means no limit.
        public var countLimit: Int

        /// The largest value, in bytes, that is stored at all; larger values are refused. Default: 1 MiB.
        public var entryCostLimit: Int

        /// Creates limits; every parameter defaults to the value documented on its property.
        public init(totalCostLimit: Int = 64 << 20, countLimit: Int = 1_000, entryCostLimit: Int = 1 << 20) {
            self.totalCostLimit = totalCostLimit
            self.countLimit = countLimit
            self.entryCostLimit = entryCostLimit
        }
    }

    /// The limits this cache was created with.
    public let configuration: Configuration

    // Thread safety: NSCache locks every call with its own internal NSLock; `now` is a Sendable closure.
    private let cache = NSCache<NSString, Box>()
    private let now: @Sendable () -> Date

    /// Creates an empty cache.
    ///
    /// - Parameters:
    ///   - configuration: The limits; see ``Configuration`` for the defaults.
    ///   - now: The clock that expiry dates are compared with. Tests inject a fixed one.
    public init(configuration: Configuration = .init(), now: @escaping @Sendable () -> Date = { Date() }) {
        self.configuration = configuration
        self.now = now
        cache.totalCostLimit = configuration.totalCostLimit
        cache.countLimit = configuration.countLimit
    }

    /// Stores `data` for `key`, replacing any earlier value.
    ///
    /// - Parameters:
    ///   - data: The value. Its byte count is its cost.
    ///   - key: The key.
    ///   - expiresAt: When the value stops being returned, or `nil` to keep it until evicted.
    /// - Returns: `false` if the value is larger than ``Configuration/entryCostLimit`` and was not
    ///   stored (any earlier value for the key is removed). `true` does not promise that the value is
    ///   still there: a store can evict the cheapest entry, which may be this one.
    @discardableResult
    public func store(_ data: Data, for key: CacheKey, expiresAt: Date? = nil) -> Bool {
        guard data.count <= configuration.entryCostLimit else {
            remove(key)
            return false
        }
        cache.setObject(Box(data: data, expiresAt: expiresAt), forKey: key.cacheKey, cost: data.count)
        return true
    }

    /// Stores `data` for `key` until `ttl` has passed on this cache's clock; see ``store(_:for:expiresAt:)``.
    @discardableResult
    public func store(_ data: Data, for key: CacheKey, ttl: Duration) -> Bool {
        let expiresAt = now().addingTimeInterval(ttl.seconds)
        return store(data, for: key, expiresAt: expiresAt)
    }

    /// The value stored for `key`, or `nil` if there is none or it has expired (an expired value is
    /// removed).
    public func value(for key: CacheKey) -> Data? {
        let cacheKey = key.cacheKey
        guard let box = cache.object(forKey: cacheKey) else {
            return nil
        }
        if let expiresAt = box.expiresAt, now() >= expiresAt {
            cache.removeObject(forKey: cacheKey)
            return nil
        }
        return box.data
    }

    /// Whether an unexpired value is stored for `key`.
    public func contains(_ key: CacheKey) -> Bool {
        value(for: key) != nil
    }

    /// Removes the value for `key`, if any.
    public func remove(_ key: CacheKey) {
        cache.removeObject(forKey: key.cacheKey)
    }

    /// Removes every value.
    public func removeAll() {
        cache.removeAllObjects()
    }

    /// A stored value with its expiry date; immutable, so sharing it across threads is safe.
    private final class Box: Sendable {
        let data: Data
        let expiresAt: Date?

        init(data: Data, expiresAt: Date?) {
            self.data = data
            self.expiresAt = expiresAt
        }
    }
}

extension CacheKey {
    /// The key as `NSCache` wants it: an `NSString`, which it compares by value.
    fileprivate var cacheKey: NSString {
        NSString(string: normalizedURL)
    }
}
