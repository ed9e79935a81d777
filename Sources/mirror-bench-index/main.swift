// Times `--dedup near`'s lookup at scale (BENCHMARKS.md, "Near-duplicates"): an index of N images' PDQ hashes (each
// image's whole hash and its three trimmed centres', as `mirror` keeps them), then lookups of new images (four hashes
// each) that match nothing and that match one image, with the resident memory before and after.
//
//     mirror-bench-index 1000000 [lookups]
//
// Hashes are uniformly random 256-bit values: PDQ's bits are each set for half of all images (a median threshold), but
// real hashes are not independent, so real buckets are less even than these (the index's cost per lookup grows with the
// fullest probed buckets).
import Foundation
import MirrorCore
import MirrorImages
import MirrorModel
import MirrorStorage

func residentBytes() -> Int {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
          let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
          let kilobytes = Int(line.split(separator: " ").dropFirst().first ?? "") else { return 0 }
    return kilobytes * 1024
}

func run() {
    let arguments = CommandLine.arguments
    let images = arguments.count > 1 ? Int(arguments[1]) ?? 1_000_000 : 1_000_000
    let lookups = arguments.count > 2 ? Int(arguments[2]) ?? 2_000 : 2_000
    var random = SeededRandom(seed: 42)
    func randomHash() -> SIMD4<UInt64> { SIMD4(random.next(), random.next(), random.next(), random.next()) }
    func flipped(_ bits: SIMD4<UInt64>, _ count: Int) -> SIMD4<UInt64> {
        var result = bits
        var flippedBits = Set<Int>()
        while flippedBits.count < count { flippedBits.insert(Int(random.next() % 256)) }
        for bit in flippedBits { result[bit / 64] ^= 1 << UInt64(bit % 64) }
        return result
    }

    /// A picture of quality 100 whose whole image hashes to `hashes[0]` and its trimmed centres to the rest.
    func picture(_ hashes: [SIMD4<UInt64>]) -> PictureHashes {
        PictureHashes(whole: PerceptualHash(bits: hashes[0], quality: 100), trimmed: Array(hashes.dropFirst()))
    }

    let before = residentBytes()
    var index = NearDuplicateSet<Int32>(policy: NearDuplicatePolicy())  // every hash of quality 100: the trusted tier
    var stored: [SIMD4<UInt64>] = []
    stored.reserveCapacity(min(images, 100_000))
    let clock = ContinuousClock()
    let built = clock.measure {
        for image in 0..<images {
            let hashes = (0..<4).map { _ in randomHash() }
            index.insert(picture(hashes), Int32(truncatingIfNeeded: image))
            if image % max(1, images / 100_000) == 0 { stored.append(hashes[0]) }
        }
    }
    let after = residentBytes()

    func time(_ queries: [[SIMD4<UInt64>]]) -> (median: Duration, p99: Duration, found: Int) {
        var times: [Duration] = []
        var found = 0
        for query in queries {
            var hit = false
            times.append(clock.measure {
                hit = index.match(for: picture(query)) != nil
            })
            if hit { found += 1 }
        }
        times.sort()
        return (times[times.count / 2], times[times.count * 99 / 100], found)
    }
    let misses = time((0..<lookups).map { _ in (0..<4).map { _ in randomHash() } })
    let hits = time((0..<lookups).map { at in [flipped(stored[at % stored.count], 24)] + (0..<3).map { _ in randomHash() } })

    func milliseconds(_ duration: Duration) -> String {
        String(format: "%.3f", Double(duration.components.seconds) * 1e3 + Double(duration.components.attoseconds) / 1e15)
    }
    print("images \(images) (hashes \(index.count * 4)); built in \(milliseconds(built)) ms; resident \(after / 1_048_576) MB (index \((after - before) / 1_048_576) MB, \(index.approximateBytes / 1_048_576) MB by its own count)")
    print("lookup of a new image (4 hashes), nothing near: median \(milliseconds(misses.median)) ms, p99 \(milliseconds(misses.p99)) ms; found \(misses.found)/\(lookups)")
    print("lookup of a copy (24 bits from one):          median \(milliseconds(hits.median)) ms, p99 \(milliseconds(hits.p99)) ms; found \(hits.found)/\(lookups)")
}

run()
