import Foundation

/// One result of the emulated corpus: its id in the provider's format, where its image lives and what the
/// image is. Everything derives from (provider, query, index), so the same result always has the same id
/// and the same bytes, and the image route needs no memory of what the API listed.
public struct EmulatedImage: Sendable, Hashable {
    /// The provider that lists it.
    public var provider: APIEmulator.Provider
    /// Its 0-based rank in the query's results.
    public var index: Int
    /// The id the API reports (Openverse a UUID, Wikimedia a page id, Flickr/Pexels/Pixabay digits, …).
    public var id: String
    /// `/images/<provider>/<id>.png`.
    public var path: String
    /// The absolute image URL on the emulator's server.
    public var url: URL
    /// The PNG's real width and height, as the API reports them.
    public var width: Int
    public var height: Int
    /// The PNG's exact size in bytes.
    public var byteCount: Int
    /// The pixel seed; two results with the same seed (Wikimedia overlap) have identical bytes.
    public var contentSeed: UInt64
    /// With ``APIEmulator/Settings/pictureVariants``: the picture it shows and how it is encoded; nil for noise.
    public var picture: Picture? = nil

    /// One of a group's variants: the group's picture, encoded.
    public struct Picture: Sendable, Hashable {
        /// The seed of the group's picture.
        public var seed: UInt64
        /// Its group: results with the same group show the same picture.
        public var group: Int
        public var format: TestImages.PictureFormat
    }

    /// The image, generated (same bytes every time).
    public func data() -> Data {
        if let picture { return TestImages.picture(width: width, height: height, seed: picture.seed, format: picture.format) }
        return TestImages.png(width: width, height: height, seed: contentSeed)
    }
}

/// Ids, seeds and geometry of emulated results.
enum EmulatedIDs {
    /// Query keys are 5-digit numbers, so numeric ids are `queryKey * 10^7 + index`.
    static let indexLimit = 10_000_000

    static func queryKey(_ query: String) -> Int {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in APIEmulator.normalizedQuery(query).utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01b3
        }
        return Int(hash % 90_000) + 10_000
    }

    /// The provider-shaped id of result `index` of the query with key `key`.
    static func id(_ provider: APIEmulator.Provider, key: Int, index: Int) -> String {
        switch provider {
        case .openverse:
            return hex(UInt64(key), width: 8) + "-e1a0-4000-8000-" + hex(UInt64(index), width: 12)
        case .wikimedia:
            // XOR scrambles the low bits so the page-id order of a batch differs from its rank (`index`).
            return String(key * indexLimit + (index ^ 5))
        case .flickr, .pexels, .pixabay:
            return String(key * indexLimit + index)
        case .giphy:
            return "gIf\(key)Em\(index)"
        case .google:
            return "cse\(key)n\(index)"
        case .unsplash:
            return "uN\(key)-\(index)"
        }
    }

    /// The inverse of ``id(_:key:index:)``, or `nil` for an id the emulator never hands out.
    static func parse(_ provider: APIEmulator.Provider, id: String) -> (key: Int, index: Int)? {
        let parsed: (Int, Int)?
        switch provider {
        case .openverse:
            let parts = id.split(separator: "-")
            guard parts.count == 5, parts[0].count == 8, parts[4].count == 12,
                let key = Int(parts[0], radix: 16), let index = Int(parts[4], radix: 16)
            else { return nil }
            parsed = (key, index)
        case .wikimedia, .flickr, .pexels, .pixabay:
            guard id.allSatisfy(\.isASCII), let number = Int(id), number >= 0 else { return nil }
            let low = number % indexLimit
            parsed = (number / indexLimit, provider == .wikimedia ? low ^ 5 : low)
        case .giphy, .google, .unsplash:
            let numbers = id.split(whereSeparator: { !($0.isASCII && $0.isNumber) })
            guard numbers.count == 2, let key = Int(numbers[0]), let index = Int(numbers[1]) else { return nil }
            parsed = (key, index)
        }
        guard let (key, index) = parsed, (10_000..<100_000).contains(key), index >= 0, index < indexLimit,
            self.id(provider, key: key, index: index) == id
        else { return nil }
        return (key, index)
    }

    static func hex(_ value: UInt64, width: Int) -> String {
        let text = String(value, radix: 16)
        return String(repeating: "0", count: max(0, width - text.count)) + text
    }

    static func mix(_ values: UInt64...) -> UInt64 {
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        for value in values {
            state = splitmix(state ^ value)
        }
        return state
    }

    static func splitmix(_ value: UInt64) -> UInt64 {
        var z = value &+ 0x9E37_79B9_7F4A_7C15
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    static func tag(_ provider: APIEmulator.Provider) -> UInt64 {
        UInt64(APIEmulator.Provider.allCases.firstIndex(of: provider)! + 1)
    }

    /// A hash of `text` in 0..<1.
    static func unit(_ provider: APIEmulator.Provider, _ text: String) -> Double {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325 ^ tag(provider)
        for byte in text.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01b3
        }
        return Double(splitmix(hash) >> 11) / Double(1 << 53)
    }

    /// Width and height of a generated PNG of about `target` bytes (never more), with an aspect ratio from
    /// 0.6 to 1.6 picked by `seed`.
    static func geometry(seed: UInt64, bytes: ClosedRange<Int>) -> (width: Int, height: Int) {
        let span = UInt64(max(1, bytes.count))
        let target = bytes.lowerBound + Int(splitmix(seed) % span)
        // Fixed overhead: signature 8, IHDR 25, IDAT framing 12 + zlib 6, IEND 12, 5 per 64 KiB stored block.
        let raw = max(4, target - 63 - 5 * (target / 65_535 + 1))
        let aspect = 0.6 + Double(splitmix(seed ^ 0xA5A5) % 1_000) / 1_000.0
        let pixels = Double(raw) / 3.0
        let width = max(1, Int((pixels * aspect).squareRoot()))
        var height = max(1, raw / (3 * width + 1))
        // Whole rows only: land inside the range (exactly possible whenever it spans at least one row).
        while pngSize(width: width, height: height) < bytes.lowerBound { height += 1 }
        if pngSize(width: width, height: height) > bytes.upperBound, height > 1 { height -= 1 }
        return (width, height)
    }

    /// The exact size of `TestImages.png(width:height:seed:)`.
    static func pngSize(width: Int, height: Int) -> Int {
        TestImages.pictureSize(width: width, height: height, format: .png)  // the same writer, TestImages.rgbPNG
    }
}

/// SHA-1, for Wikimedia's `sha1` field (Foundation on Linux has none and the support target has no crypto
/// dependency). Not for security.
enum SHA1 {
    static func hex(_ data: Data) -> String {
        var h: (UInt32, UInt32, UInt32, UInt32, UInt32) = (0x6745_2301, 0xEFCD_AB89, 0x98BA_DCFE, 0x1032_5476, 0xC3D2_E1F0)
        var message = [UInt8](data)
        let bitLength = UInt64(message.count) * 8
        message.append(0x80)
        while message.count % 64 != 56 { message.append(0) }
        for shift in stride(from: 56, through: 0, by: -8) { message.append(UInt8(truncatingIfNeeded: bitLength >> UInt64(shift))) }
        var w = [UInt32](repeating: 0, count: 80)
        for chunk in stride(from: 0, to: message.count, by: 64) {
            for i in 0..<16 {
                let j = chunk + i * 4
                w[i] = UInt32(message[j]) << 24 | UInt32(message[j + 1]) << 16 | UInt32(message[j + 2]) << 8 | UInt32(message[j + 3])
            }
            for i in 16..<80 {
                let x = w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16]
                w[i] = (x << 1) | (x >> 31)
            }
            var (a, b, c, d, e) = h
            for i in 0..<80 {
                let f: UInt32
                let k: UInt32
                switch i {
                case 0..<20: (f, k) = ((b & c) | (~b & d), 0x5A82_7999)
                case 20..<40: (f, k) = (b ^ c ^ d, 0x6ED9_EBA1)
                case 40..<60: (f, k) = ((b & c) | (b & d) | (c & d), 0x8F1B_BCDC)
                default: (f, k) = (b ^ c ^ d, 0xCA62_C1D6)
                }
                let temp = ((a << 5) | (a >> 27)) &+ f &+ e &+ k &+ w[i]
                e = d
                d = c
                c = (b << 30) | (b >> 2)
                b = a
                a = temp
            }
            h = (h.0 &+ a, h.1 &+ b, h.2 &+ c, h.3 &+ d, h.4 &+ e)
        }
        return [h.0, h.1, h.2, h.3, h.4].map { EmulatedIDs.hex(UInt64($0), width: 8) }.joined()
    }
}
