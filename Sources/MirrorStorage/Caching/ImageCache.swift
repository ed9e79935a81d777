import Foundation
import MirrorModel

/// The two cache layers behind one façade: a ``MemoryCache`` for API pages and a ``DiskCache`` for image
/// bodies and pages, with lookups that say where a hit came from.
///
/// Image bodies go to disk only: they can be large, and what a caller wants from a hit is a file to
/// ``materialize(_:at:)`` into the output folder. Pages go to both layers; a disk hit is copied into
/// memory. With ``Configuration/isEnabled`` off (`--no-cache`) there are no layers: every lookup is
/// ``CacheResult/none`` and every store does nothing.
///
/// Thread safety: as safe as its layers, which may both be used from any thread at once.
///
/// ```swift
/// let cache = ImageCache(configuration: .init { $0.directory = cacheDirectory })
/// switch cache.entry(for: key) {
/// case .disk(let entry): try cache.materialize(entry, at: destination) // report a disk hit
/// default: break // download it, then `try cache.store(fileAt:sha256:for:format:)`
/// }
/// ```
public final class ImageCache: Sendable {
    /// How to build an ``ImageCache``.
    public struct Configuration: Sendable {
        // MARK: Switch

        /// Whether to cache at all. Default: `true`; `--no-cache` turns both layers off.
        public var isEnabled = true

        // MARK: Disk

        /// The disk cache's root. Default: ``DiskCache/defaultDirectory(environment:)``
        /// (`$XDG_CACHE_HOME/mirror` or `~/.cache/mirror`).
        public var directory = DiskCache.defaultDirectory()

        /// The disk cache's size limit in bytes, enforced by ``ImageCache/sweep()``. Default: 1 GiB.
        public var sizeLimit: Int64 = 1 << 30

        /// Whether to add and materialize files by hard link where possible. Default: `true`.
        public var prefersHardLinks = true

        // MARK: Memory

        /// The memory cache's limits. Default: 64 MiB, 1,000 entries, 1 MiB per entry.
        public var memory = MemoryCache.Configuration()

        /// Both layers on, with the defaults above.
        public init() {}

        /// The defaults above, changed by `configure`.
        public init(_ configure: (inout Configuration) -> Void) {
            configure(&self)
        }

        /// Caching off.
        public static var disabled: Configuration {
            Configuration { $0.isEnabled = false }
        }
    }

    /// The memory layer, or `nil` when caching is off.
    public let memory: MemoryCache?

    /// The disk layer, or `nil` when caching is off.
    public let disk: DiskCache?

    /// Whether any layer is present.
    public var isEnabled: Bool { memory != nil || disk != nil }

    /// Builds both layers from `configuration`, or none when it is disabled.
    public convenience init(configuration: Configuration = .init()) {
        guard configuration.isEnabled else {
            self.init(memory: nil, disk: nil)
            return
        }
        self.init(
            memory: MemoryCache(configuration: configuration.memory),
            disk: DiskCache(
                directory: configuration.directory,
                sizeLimit: configuration.sizeLimit,
                prefersHardLinks: configuration.prefersHardLinks
            )
        )
    }

    /// Uses the given layers; either may be `nil`. Tests pass layers with injected clocks.
    public init(memory: MemoryCache?, disk: DiskCache?) {
        self.memory = memory
        self.disk = disk
    }

    // MARK: Images

    /// Adds a validated image body to the disk layer; see ``DiskCache/store(fileAt:sha256:for:format:)``.
    /// Does nothing when there is no disk layer.
    public func store(
        fileAt source: URL,
        sha256: String,
        for key: CacheKey,
        format: String? = nil
    ) throws(DiskCacheError) {
        try disk?.store(fileAt: source, sha256: sha256, for: key, format: format)
    }

    /// The cached body for `key`: ``CacheResult/disk(_:)`` or ``CacheResult/none``.
    public func entry(for key: CacheKey) -> CacheResult<DiskCache.Entry> {
        disk?.entry(for: key).map { .disk($0) } ?? .none
    }

    /// Puts a cached body at `destination`; see ``DiskCache/materialize(_:at:)``.
    public func materialize(_ entry: DiskCache.Entry, at destination: URL) throws(DiskCacheError) {
        guard let disk else {
            throw .objectMissing(sha256: entry.sha256)
        }
        try disk.materialize(entry, at: destination)
    }

    // MARK: Pages

    /// Stores an API page in both layers until `ttl` has passed. The memory layer may refuse a large page
    /// (see ``MemoryCache/Configuration/entryCostLimit``); the disk layer keeps it.
    ///
    /// - Throws: The disk layer's ``DiskCacheError``; the memory layer has already stored the page by then.
    public func storePage(_ data: Data, for key: CacheKey, ttl: Duration) throws(DiskCacheError) {
        memory?.store(data, for: key, ttl: ttl)
        try disk?.storePage(data, for: key, ttl: ttl)
    }

    /// The unexpired page for `key`, from memory first, then disk (copied into memory on a hit).
    public func page(for key: CacheKey) -> CacheResult<Data> {
        if let data = memory?.value(for: key) {
            return .memory(data)
        }
        guard let (data, expiresAt) = disk?.pageWithExpiry(for: key) else {
            return .none
        }
        memory?.store(data, for: key, expiresAt: expiresAt)
        return .disk(data)
    }

    // MARK: Both

    /// Removes what both layers hold for `key` (the disk object stays until a sweep).
    public func remove(_ key: CacheKey) {
        memory?.remove(key)
        disk?.remove(key)
    }

    /// Empties both layers.
    public func removeAll() throws(DiskCacheError) {
        memory?.removeAll()
        try disk?.removeAll()
    }

    /// Sweeps the disk layer (see ``DiskCache/sweep()``); `nil` when there is none.
    @discardableResult
    public func sweep() -> DiskCache.SweepResult? {
        disk?.sweep()
    }
}
