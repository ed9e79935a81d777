import MirrorImages

/// When two images are one picture to the eye (`--dedup near`): some hash of one at most ``distance`` bits from some
/// hash of the other when PDQ trusts both (quality 50 or more), at most ``lowQualityDistance`` when it doubts either
/// (quality 1-49); never when either is flat (quality 0: its hash is noise) or under ``minimumSide`` pixels on its
/// shorter side (a thumbnail's hash says too little).
///
/// How the numbers were chosen (scripts/check/near_truth.py's 621 files of 120 pictures, BENCHMARKS.md "Recognition across
/// sizes and contrast"): copies of a picture PDQ trusts lie within 24 bits of each other; copies of a low-quality one
/// within 24 bits of their original but up to 38 of each other (more of their coefficients sit near the median, so
/// more bits flip); the closest two different pictures are 80 bits apart, 84 when either is of low quality. PDQ's own
/// 31 stays for trusted hashes. For the others the ground truth shows no risk, but it cannot show what a nearly flat
/// picture shares with another (a hash is blind to colour and to overall brightness, and a nearly flat one keeps few
/// of its bits for structure): 26, one step (hashes differ by even numbers) past the farthest low-quality copy from
/// its original.
public struct NearDuplicatePolicy: Sendable, Hashable {
    /// The default largest distance between hashes PDQ trusts.
    public static let defaultDistance = 31
    /// The default largest distance when either hash is of low quality.
    public static let defaultLowQualityDistance = 26
    /// The default smallest shorter side, in pixels.
    public static let defaultMinimumSide = 64

    public var distance: Int
    public var lowQualityDistance: Int
    public var minimumSide: Int

    public init(
        distance: Int = Self.defaultDistance, lowQualityDistance: Int = Self.defaultLowQualityDistance, minimumSide: Int = Self.defaultMinimumSide
    ) {
        self.distance = distance
        self.lowQualityDistance = lowQualityDistance
        self.minimumSide = minimumSide
    }

    /// The largest distance at which hashes of qualities `a` and `b` are one picture, or nil when they never are.
    public func distance(between a: Int, _ b: Int) -> Int? {
        guard a > 0, b > 0 else { return nil }
        let reliable = PerceptualHash.reliableQuality
        return a >= reliable && b >= reliable ? distance : min(distance, lowQualityDistance)
    }

    /// Whether two pictures' hashes make one picture.
    public func matches(_ a: PictureHashes, _ b: PictureHashes) -> Bool {
        guard let limit = distance(between: a.quality, b.quality) else { return false }
        return Self.distance(a, b) <= limit
    }

    /// The hashes an image is compared by, or nil when it is never merged (no hash, a flat one, or too small).
    public func comparedHashes(of image: VerifiedImage) -> PictureHashes? {
        guard let hashes = image.pictureHashes, !hashes.whole.isFlat else { return nil }
        let width = image.originalWidth ?? image.info.width, height = image.originalHeight ?? image.info.height
        return min(width, height) >= minimumSide ? hashes : nil
    }

    /// The smallest distance between any hash of one picture and any of the other's.
    public static func distance(_ a: PictureHashes, _ b: PictureHashes) -> Int {
        var best = 256
        a.forEachHash { bits in
            b.forEachHash { other in best = min(best, PerceptualHash.distance(bits, other)) }
        }
        return best
    }
}

/// The closest of what is offered within a limit, the first of equals: the one search every near-duplicate lookup
/// makes (an index's hashes, its tiers, a folder's labels, a batch not yet saved).
package struct ClosestMatch<Payload> {
    /// The closest so far, and its distance.
    package private(set) var best: (payload: Payload, distance: Int)?
    private let limit: Int

    package init(within limit: Int = .max) {
        self.limit = limit
    }

    /// Keeps `payload` when it is within the limit and closer than the closest so far.
    package mutating func offer(_ payload: Payload, distance: Int) {
        guard distance <= limit, distance < best?.distance ?? .max else { return }
        best = (payload, distance)
    }

    /// Offers a match found elsewhere, if any.
    package mutating func offer(_ found: (payload: Payload, distance: Int)?) {
        if let found { offer(found.payload, distance: found.distance) }
    }
}

/// What a run takes for a duplicate of an image already saved (`--dedup`).
public enum Deduplication: Sendable, Hashable {
    /// The same bytes, or the same picture to the eye (``NearDuplicatePolicy``): the default of searches.
    case near(NearDuplicatePolicy)
    /// The same bytes: the default of URL tables (a row is a row).
    case exact
    /// Nothing: every image is kept, the same bytes twice too.
    case none

    /// `near`, `exact` or `none`, as `--dedup` names them (near with the default policy).
    public init?(name: String) {
        switch name {
        case "near": self = .near(NearDuplicatePolicy())
        case "exact": self = .exact
        case "none": self = .none
        default: return nil
        }
    }

    /// The policy near-duplicates are judged by, when they are.
    public var nearPolicy: NearDuplicatePolicy? {
        if case let .near(policy) = self { policy } else { nil }
    }

    /// Whether the same bytes twice are refused.
    public var refusesSameBytes: Bool { self != .none }
}
