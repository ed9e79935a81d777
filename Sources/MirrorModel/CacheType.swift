
/// Where a cache lookup found its value — or where a downloaded image came from — so the CLI can report hits.
public enum CacheType: String, Sendable, Hashable, Codable, CaseIterable, CustomStringConvertible {
    /// Not cached, or caching is off: the value came from the network.
    case none
    /// Found in the ``MemoryCache``.
    case memory
    /// Found in the ``DiskCache``.
    case disk

    /// Whether the value came from a cache.
    public var isCached: Bool { self != .none }

    public var description: String { rawValue }
}

/// The outcome of a cache lookup: the value and where it was found, or ``none``.
public enum CacheResult<Value: Sendable>: Sendable {
    /// Found in the ``MemoryCache``.
    case memory(Value)
    /// Found in the ``DiskCache``.
    case disk(Value)
    /// Not found.
    case none

    /// The value, if one was found.
    public var value: Value? {
        switch self {
        case .memory(let value), .disk(let value): value
        case .none: nil
        }
    }

    /// Where the value was found.
    public var cacheType: CacheType {
        switch self {
        case .memory: .memory
        case .disk: .disk
        case .none: .none
        }
    }
}
