/// A PDQ hash: Meta's 256-bit perceptual hash of what an image looks like, with PDQ's quality of it.
///
/// Two images the eye takes for one picture — resized, re-encoded, in another format, trimmed a little, brightened —
/// hash a few bits apart; two different pictures about 128 bits apart. ``distance(to:)`` counts the bits that differ
/// (always an even number: each hash sets half its bits). PDQ's quality (0–100) says how much the image varies: a
/// nearly flat image (a sky, a motion-blurred frame) hashes less steadily, and PDQ's authors advise against trusting a
/// match below 50 (``isReliable``); a flat one (quality 0: no step between neighbouring samples of even 1 % of the
/// range) hashes noise (``isFlat``).
///
/// The hex form is PDQ's own: 64 hex digits, the DCT's last row of 16 bits first. Hashes are made by one computation
/// or another (``version``); hashes of two versions are not comparable.
public struct PerceptualHash: Sendable, Hashable, CustomStringConvertible {
    /// The 256 bits, in hex order: `bits[0]` holds the first 16 hex digits.
    public let bits: SIMD4<UInt64>
    /// PDQ's quality, 0–100.
    public let quality: Int

    /// The quality under which a hash is not trusted to match as far: PDQ's authors' advice.
    public static let reliableQuality = 50

    /// The computation this mirror hashes with (`CCodecs`' `MIRROR_CODECS_PDQ_VERSION`): 2, PDQ of a canonical rendering
    /// (the picture's luma averaged onto a fixed grid, whatever size it was served at); 1, PDQ of the
    /// decoded pixels. A manifest record without `pdq_version` was hashed by version 1.
    public static let version = 2

    public init(bits: SIMD4<UInt64>, quality: Int) {
        self.bits = bits
        self.quality = quality
    }

    /// A hash from its 32 bytes (hex order) and quality, or nil when `bytes` are not 32.
    public init?<Bytes: Collection>(bytes: Bytes, quality: Int) where Bytes.Element == UInt8 {
        guard let bits = Self.bits(bytes: bytes) else { return nil }
        self.init(bits: bits, quality: quality)
    }

    /// A hash from PDQ's 64 hex digits, or nil when `hex` is not that.
    public init?(hex: some StringProtocol, quality: Int) {
        guard let bits = Self.bits(hex: hex) else { return nil }
        self.init(bits: bits, quality: quality)
    }

    /// 256 bits from their 32 bytes (hex order), or nil when `bytes` are not 32: a hash with no quality of its own (a
    /// trimmed centre's, compared at its image's quality).
    public static func bits<Bytes: Collection>(bytes: Bytes) -> SIMD4<UInt64>? where Bytes.Element == UInt8 {
        guard bytes.count == 32 else { return nil }
        var lanes = SIMD4<UInt64>()
        for (index, byte) in bytes.enumerated() {
            lanes[index / 8] |= UInt64(byte) << UInt64(56 - 8 * (index % 8))
        }
        return lanes
    }

    /// 256 bits from PDQ's 64 hex digits, or nil when `hex` is not that.
    public static func bits(hex: some StringProtocol) -> SIMD4<UInt64>? {
        let digits = Array(hex.utf8)
        guard digits.count == 64 else { return nil }
        var lanes = SIMD4<UInt64>()
        for (index, digit) in digits.enumerated() {
            let value: UInt8
            switch digit {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): value = digit - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): value = digit - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): value = digit - UInt8(ascii: "A") + 10
            default: return nil
            }
            lanes[index / 16] |= UInt64(value) << UInt64(60 - 4 * (index % 16))
        }
        return lanes
    }

    /// The 32 bytes, in hex order.
    public var bytes: [UInt8] {
        (0..<32).map { UInt8(truncatingIfNeeded: bits[$0 / 8] >> UInt64(56 - 8 * ($0 % 8))) }
    }

    /// PDQ's 64 hex digits, lowercase.
    public var hex: String { Self.hex(bits) }

    /// The 64 hex digits of 256 bits, lowercase, as PDQ writes a hash.
    public static func hex(_ bits: SIMD4<UInt64>) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var text = [UInt8]()
        text.reserveCapacity(64)
        for index in 0..<32 {
            let byte = UInt8(truncatingIfNeeded: bits[index / 8] >> UInt64(56 - 8 * (index % 8)))
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 15)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    public var description: String { hex }

    /// Bits that differ from `other` (0–256).
    @inlinable
    public func distance(to other: PerceptualHash) -> Int {
        Self.distance(bits, other.bits)
    }

    /// Bits that differ between two hashes' 256 bits (0–256).
    @inlinable
    public static func distance(_ a: SIMD4<UInt64>, _ b: SIMD4<UInt64>) -> Int {
        let difference = a ^ b
        return difference[0].nonzeroBitCount + difference[1].nonzeroBitCount + difference[2].nonzeroBitCount + difference[3].nonzeroBitCount
    }

    /// Whether PDQ trusts this hash to match: quality of at least ``reliableQuality``.
    public var isReliable: Bool { quality >= Self.reliableQuality }

    /// Whether the image is flat (quality 0): its hash is the rounding of nearly equal numbers, noise that two flat
    /// images of different colours may share.
    public var isFlat: Bool { quality <= 0 }
}

/// A picture's PDQ hashes, what `--dedup near` compares: the whole image's (with PDQ's quality, which the others share)
/// and those of its centre without 1.5, 3 and 4.5 % of each border — a copy trimmed at its edges hashes near one of
/// them.
public struct PictureHashes: Sendable, Hashable {
    /// The whole image's hash and its quality.
    public var whole: PerceptualHash
    /// The trimmed centres' hashes (none when they were not made).
    public var trimmed: [SIMD4<UInt64>]

    public init(whole: PerceptualHash, trimmed: [SIMD4<UInt64>] = []) {
        self.whole = whole
        self.trimmed = trimmed
    }

    /// Calls `body` with every hash, the whole image's first (no array made: a lookup does this for every image).
    @inlinable
    public func forEachHash(_ body: (SIMD4<UInt64>) -> Void) {
        body(whole.bits)
        for bits in trimmed { body(bits) }
    }

    /// PDQ's quality of the whole image (0–100).
    public var quality: Int { whole.quality }
}
