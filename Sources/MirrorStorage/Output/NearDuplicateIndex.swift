import MirrorImages
import MirrorModel

/// Finds, among many PDQ hashes, one within a Hamming distance of a new hash: the lookup behind `--dedup near`.
///
/// A multi-index (Norouzi, Punjani and Fleet, "Fast search in Hamming space with multi-index hashing", 2012): the 256
/// bits are cut into `segments` equal segments, and each segment's value indexes a table of the hashes that have it.
/// Two hashes at most `distance` bits apart differ in at most `distance / segments` bits of some segment (pigeonhole),
/// so probing each table with the new hash's segment and its variants of up to that many flipped bits finds every
/// candidate; each candidate's whole distance is then counted. Nothing is missed, and nothing is scanned but the
/// probed buckets: with `n` hashes a lookup costs its probes plus about `probes × n / 2^bits` candidate checks
/// (BENCHMARKS.md: at 1 and 10 million hashes).
///
/// Memory: the hashes (32 bytes each) and one 4-byte position per hash per table, in buckets made on first use.
/// Not thread-safe: its owner locks it.
public struct NearDuplicateIndex: Sendable {
    /// The hashes added, by position.
    public private(set) var hashes: [SIMD4<UInt64>] = []
    /// The largest distance a match may be.
    public let distance: Int
    private let segments: Int
    private let segmentBits: Int
    /// Bits flipped per segment when probing: `distance / segments`; past 2, every hash is compared instead.
    private let flips: Int
    /// Per segment, the positions of the hashes by the segment's value; empty (and every hash compared) until the index
    /// holds ``scanLimit`` hashes.
    private var tables: [[UInt32: [UInt32]]] = []
    /// Up to this many hashes, a lookup compares them all: a sequential scan of 32-byte values is cheaper than the
    /// probes (measured, mirror-bench-index: 272 bucket probes per hash cost about as much as 20,000 comparisons), and
    /// the tables' buckets would cost more memory than the hashes.
    public static let defaultScanLimit = 20_000
    private let scanLimit: Int

    /// An empty index for matches within `distance` bits (0–255), its hashes cut into `segments` (8 or 16; by default
    /// the count whose probes stay fewest for that distance).
    public init(distance: Int, segments: Int? = nil, scanLimit: Int = Self.defaultScanLimit) {
        self.scanLimit = scanLimit
        self.distance = max(0, min(255, distance))
        let count = (segments ?? Self.segments(for: self.distance)) == 8 ? 8 : 16
        self.segments = count
        segmentBits = 256 / count
        flips = self.distance / count
    }

    /// 8 segments of 32 bits while that takes at most 2 flipped bits a segment (distances up to 23: few probes into
    /// nearly empty buckets); 16 of 16 bits beyond (one flipped bit up to 31, then two).
    public static func segments(for distance: Int) -> Int { distance <= 23 ? 8 : 16 }

    public var count: Int { hashes.count }

    /// Adds a hash's 256 bits; returns its position.
    @discardableResult
    public mutating func insert(_ bits: SIMD4<UInt64>) -> Int {
        let position = UInt32(hashes.count)
        hashes.append(bits)
        if !tables.isEmpty {
            for segment in 0..<segments { tables[segment][value(of: bits, segment: segment), default: []].append(position) }
        } else if hashes.count > scanLimit, flips <= 2 {
            tables = Array(repeating: [:], count: segments)
            for (at, bits) in hashes.enumerated() {
                for segment in 0..<segments { tables[segment][value(of: bits, segment: segment), default: []].append(UInt32(at)) }
            }
        }
        return Int(position)
    }

    /// The position of the closest hash within ``distance`` of `bits` (the earliest of equals), with its distance; nil
    /// when none is.
    public func match(for bits: SIMD4<UInt64>) -> (position: Int, distance: Int)? {
        guard !tables.isEmpty else {
            var closest = ClosestMatch<Int>(within: distance)
            for (position, other) in hashes.enumerated() { closest.offer(position, distance: PerceptualHash.distance(other, bits)) }
            return closest.best.map { (position: $0.payload, distance: $0.distance) }
        }
        // The buckets are not in position order: equals go to the earliest position explicitly.
        var best: (position: Int, distance: Int)?
        for segment in 0..<segments {
            let key = value(of: bits, segment: segment)
            forEachVariant(of: key, flipping: flips) { probe in
                guard let bucket = tables[segment][probe] else { return }
                for position in bucket {
                    let found = PerceptualHash.distance(hashes[Int(position)], bits)
                    guard found <= distance else { continue }
                    if let current = best, current.distance < found || (current.distance == found && current.position <= Int(position)) { continue }
                    best = (Int(position), found)
                }
            }
        }
        return best
    }

    /// Bytes the index holds, roughly: its hashes, its positions, and its buckets' overhead.
    public var approximateBytes: Int {
        let buckets = tables.reduce(0) { $0 + $1.count }
        return hashes.capacity * 32 + hashes.count * segments * 4 + buckets * 48
    }

    /// Segment `segment` (0-based, `segmentBits` wide) of the 256 bits.
    private func value(of bits: SIMD4<UInt64>, segment: Int) -> UInt32 {
        let start = segment * segmentBits
        let lane = bits[start / 64]
        let shift = 64 - segmentBits - start % 64
        let mask: UInt64 = segmentBits == 64 ? .max : (1 << UInt64(segmentBits)) - 1
        return UInt32(truncatingIfNeeded: (lane >> UInt64(shift)) & mask)
    }

    /// Calls `body` with `key` and every value that differs from it in 1 to `flips` of the segment's bits.
    private func forEachVariant(of key: UInt32, flipping flips: Int, _ body: (UInt32) -> Void) {
        body(key)
        guard flips > 0 else { return }
        func flip(from bit: Int, remaining: Int, value: UInt32) {
            for position in bit..<segmentBits {
                let flipped = value ^ (1 << UInt32(position))
                body(flipped)
                if remaining > 1 { flip(from: position + 1, remaining: remaining - 1, value: flipped) }
            }
        }
        flip(from: 0, remaining: flips, value: key)
    }
}

/// Saved images' hashes — each image's whole hash and its trimmed centres' (``PictureHashes``) — with what
/// each image is (a file name, a sample's key), and the lookup of a new image among them by a policy's rule.
///
/// A copy trimmed at its edges hashes near one of the original's trimmed centres, and the original's trimmed centres
/// hash near the trimmed copy; two copies trimmed differently meet at a trim of each. So every hash of a new image is
/// looked up among every hash of the saved ones: the closest pair decides. (Measured on scripts/check/near_truth.py's
/// photographs: leaving out the trim-against-trim pairs lost 3 of 82 pictures at 31 bits, in table order.)
///
/// Images PDQ trusts and the others are kept apart, each in indexes of their own distance (``NearDuplicatePolicy``: 31
/// and 26 bits): a lookup asks each for its closest hash, so that a saved image of low quality 28 bits away never hides
/// a trusted one 30 bits away.
public struct NearDuplicateSet<Payload: Sendable>: Sendable {
    /// One class of quality's hashes: whole images' and trimmed centres', with their images' payloads by position.
    private struct Tier: Sendable {
        var wholes: NearDuplicateIndex
        var trims: NearDuplicateIndex
        var wholePayloads: [Payload] = []
        var trimPayloads: [Payload] = []

        init(distance: Int) {
            wholes = NearDuplicateIndex(distance: distance)
            trims = NearDuplicateIndex(distance: distance)
        }

        mutating func insert(_ hashes: PictureHashes, _ payload: Payload) {
            wholes.insert(hashes.whole.bits)
            wholePayloads.append(payload)
            for trim in hashes.trimmed {
                trims.insert(trim)
                trimPayloads.append(payload)
            }
        }

        /// The closest image within `limit` (at most the indexes' distance: each answers with its closest hash, so a
        /// closest one past `limit` means none is within it).
        func match(for hashes: PictureHashes, within limit: Int) -> (payload: Payload, distance: Int)? {
            var closest = ClosestMatch<Payload>(within: limit)
            hashes.forEachHash { bits in
                if let found = wholes.match(for: bits) { closest.offer(wholePayloads[found.position], distance: found.distance) }
                if let found = trims.match(for: bits) { closest.offer(trimPayloads[found.position], distance: found.distance) }
            }
            return closest.best
        }

        var approximateBytes: Int { wholes.approximateBytes + trims.approximateBytes }
    }

    public let policy: NearDuplicatePolicy
    private var reliable: Tier
    private var unreliable: Tier
    private var images = 0

    public init(policy: NearDuplicatePolicy) {
        self.policy = policy
        reliable = Tier(distance: policy.distance)
        unreliable = Tier(distance: min(policy.distance, policy.lowQualityDistance))
    }

    /// Images added.
    public var count: Int { images }

    /// Bytes the indexes hold, roughly.
    public var approximateBytes: Int { reliable.approximateBytes + unreliable.approximateBytes }

    /// Adds an image's hashes; a flat one is never matched, and not kept.
    public mutating func insert(_ hashes: PictureHashes, _ payload: Payload) {
        guard !hashes.whole.isFlat else { return }
        images += 1
        if hashes.whole.isReliable {
            reliable.insert(hashes, payload)
        } else {
            unreliable.insert(hashes, payload)
        }
    }

    /// The saved image closest to a new one, within the distance the policy allows for their two qualities (a trusted
    /// one first among equals).
    public func match(for hashes: PictureHashes) -> (payload: Payload, distance: Int)? {
        guard let trusted = policy.distance(between: hashes.quality, PerceptualHash.reliableQuality),
              let doubted = policy.distance(between: hashes.quality, 1) else { return nil }
        var closest = ClosestMatch<Payload>()
        closest.offer(reliable.match(for: hashes, within: trusted))
        closest.offer(unreliable.match(for: hashes, within: doubted))
        return closest.best
    }
}

/// The saved images' hashes of one output, by label (`""` for none), with the files they belong to: what a folder
/// looks a new image up in. Empty, and adding nothing, until a run says how it compares them (``enable(_:)``): a run
/// with `--dedup exact` keeps no hash in memory, however many its manifest holds.
struct NearDuplicateFiles {
    private(set) var policy: NearDuplicatePolicy?
    /// Per label, every saved file's hashes.
    private var sets: [String: NearDuplicateSet<String>] = [:]

    /// Adds a saved file's hashes (its image `side` pixels on its shorter side as served).
    mutating func add(_ hashes: PictureHashes, side: Int, file: String, label: String) {
        guard let policy, !hashes.whole.isFlat, side >= policy.minimumSide else { return }
        sets[label, default: NearDuplicateSet(policy: policy)].insert(hashes, file)
    }

    /// Compares by `policy` from now on (the first call only; the caller then adds what is saved already).
    mutating func enable(_ policy: NearDuplicatePolicy) {
        if self.policy == nil { self.policy = policy }
    }

    /// The saved file whose picture is that of `hashes` (the closest, under `label` or under any label), with their
    /// distance.
    func match(for hashes: PictureHashes, label: String, anyLabel: Bool) -> (file: String, distance: Int)? {
        let candidates = anyLabel ? Array(sets.values) : sets[label].map { [$0] } ?? []
        var closest = ClosestMatch<String>()
        for set in candidates { closest.offer(set.match(for: hashes)) }
        return closest.best.map { (file: $0.payload, distance: $0.distance) }
    }
}
