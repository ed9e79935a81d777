import Foundation

/// Valid image files made on the fly, for servers that must serve thousands of distinct images.
///
/// `png(width:height:seed:)` writes a real PNG: signature, IHDR, one IDAT of stored (uncompressed)
/// deflate blocks with a correct Adler-32, IEND, and correct CRCs throughout. Pixels come from the
/// seed, so different seeds give different bytes (and different SHA-256s) and the same seed gives the
/// same file. `jpegLike` and friends give the broken bodies that fault tests need.
public enum TestImages {
    /// A valid 8-bit RGB PNG of the given size whose pixels derive from `seed`.
    public static func png(width: Int, height: Int, seed: UInt64 = 0) -> Data {
        var raw = Data(capacity: (width * 3 + 1) * height)
        var state = seed &* 0x9E37_79B9_7F4A_7C15 &+ 1
        for _ in 0..<height {
            raw.append(0) // filter: none
            for _ in 0..<(width * 3) {
                state ^= state << 13
                state ^= state >> 7
                state ^= state << 17
                raw.append(UInt8(truncatingIfNeeded: state))
            }
        }
        return rgbPNG(width: width, height: height, idat: zlibStored(raw))
    }

    /// A PNG of `width` × `height` 8-bit RGB pixels whose one IDAT chunk holds `idat` (a zlib stream of filtered rows,
    /// or part of one).
    static func rgbPNG(width: Int, height: Int, idat: Data) -> Data {
        var png = Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A])
        var header = Data()
        header.appendBigEndian(UInt32(width))
        header.appendBigEndian(UInt32(height))
        header.append(contentsOf: [8, 2, 0, 0, 0]) // 8-bit, truecolour, deflate, no filter, no interlace
        png.appendChunk("IHDR", header)
        png.appendChunk("IDAT", idat)
        png.appendChunk("IEND", Data())
        return png
    }

    /// `png` with an XMP packet in an `iTXt` chunk (keyword `XML:com.adobe.xmp`, uncompressed) right after `IHDR`, as
    /// exiftool places it. The emulator's way to mark generated PNGs; what the readers make of files exiftool itself
    /// wrote is tested on those (`Tests/MirrorImagesTests/Samples/Consent`).
    public static func withXMP(_ png: Data, _ packet: String) -> Data {
        guard png.count > 33 else { return png }
        var chunk = Data()
        chunk.appendChunk("iTXt", Data("XML:com.adobe.xmp".utf8) + Data([0, 0, 0, 0, 0]) + Data(packet.utf8))
        return png.prefix(33) + chunk + png.dropFirst(33)
    }

    /// An XMP packet whose `plus:DataMining` prohibits AI/ML training (the element form exiftool writes).
    public static let dataMiningXMP = """
        <?xpacket begin='\u{FEFF}' id='W5M0MpCehiHzreSzNTczkc9d'?>
        <x:xmpmeta xmlns:x='adobe:ns:meta/'>
        <rdf:RDF xmlns:rdf='http://www.w3.org/1999/02/22-rdf-syntax-ns#'>
         <rdf:Description rdf:about='' xmlns:plus='http://ns.useplus.org/ldf/xmp/1.0/'>
          <plus:DataMining>http://ns.useplus.org/ldf/vocab/DMI-PROHIBITED-AIMLTRAINING</plus:DataMining>
         </rdf:Description>
        </rdf:RDF>
        </x:xmpmeta>
        <?xpacket end='w'?>
        """

    /// A PNG of roughly `bytes` bytes (at least a 1×1 image), square-ish, distinct per seed.
    public static func png(approximateBytes bytes: Int, seed: UInt64) -> Data {
        let pixels = max(1, bytes / 3)
        let side = max(1, Int(Double(pixels).squareRoot()))
        return png(width: side, height: max(1, pixels / side), seed: seed)
    }

    /// A picture, as a photograph is to a perceptual hash: smooth shapes and a gentle texture over a gradient, all
    /// drawn from `seed` in coordinates relative to the image's size, so that the same seed at another size is the same
    /// picture resized, and another seed is another picture.
    public static func picture(width: Int, height: Int, seed: UInt64, format: PictureFormat = .png) -> Data {
        var state = seed &* 0x9E37_79B9_7F4A_7C15 &+ 0x632B_E59B_D9B4_E019
        func next() -> Double {
            state ^= state << 13
            state ^= state >> 7
            state ^= state << 17
            return Double(state % 1_000_000) / 1_000_000
        }
        let corners = (0..<4).map { _ in [next() * 255, next() * 255, next() * 255] }
        let blobs = (0..<6).map { _ in (x: next(), y: next(), radius: 0.08 + next() * 0.25, color: [next() * 255, next() * 255, next() * 255]) }
        let wave = (x: 2 + next() * 6, y: 2 + next() * 6, phase: next() * 6.283)
        var rgb = [UInt8](repeating: 0, count: width * height * 3)
        for y in 0..<height {
            let v = (Double(y) + 0.5) / Double(height)
            for x in 0..<width {
                let u = (Double(x) + 0.5) / Double(width)
                var pixel = (0..<3).map { c in
                    corners[0][c] * (1 - u) * (1 - v) + corners[1][c] * u * (1 - v) + corners[2][c] * (1 - u) * v + corners[3][c] * u * v
                }
                for blob in blobs {
                    let distance = ((u - blob.x) * (u - blob.x) + (v - blob.y) * (v - blob.y)).squareRoot()
                    let weight = max(0, min(1, (blob.radius - distance) / 0.02))
                    for c in 0..<3 { pixel[c] = pixel[c] * (1 - weight) + blob.color[c] * weight }
                }
                let texture = 18 * sin(6.283 * (wave.x * u + wave.y * v) + wave.phase)
                for c in 0..<3 { rgb[(y * width + x) * 3 + c] = UInt8(max(0, min(255, pixel[c] + texture))) }
            }
        }
        switch format {
        case .png: return png(width: width, height: height, rgb: rgb)
        case .bmp: return bmp(width: width, height: height, rgb: rgb)
        }
    }

    /// The encodings of ``picture(width:height:seed:format:)``.
    public enum PictureFormat: Sendable, CaseIterable {
        case png, bmp
    }

    /// The exact size of ``picture(width:height:seed:format:)``.
    public static func pictureSize(width: Int, height: Int, format: PictureFormat) -> Int {
        switch format {
        case .png:
            let raw = (3 * width + 1) * height
            return 8 + 25 + 12 + (2 + 5 * max(1, (raw + 65_534) / 65_535) + raw + 4) + 12
        case .bmp:
            return 54 + (width * 3 + 3) / 4 * 4 * height
        }
    }

    /// A PNG (stored deflate) of packed RGB pixels.
    static func png(width: Int, height: Int, rgb: [UInt8]) -> Data {
        var raw = Data(capacity: (width * 3 + 1) * height)
        for y in 0..<height {
            raw.append(0)
            raw.append(contentsOf: rgb[(y * width * 3)..<((y + 1) * width * 3)])
        }
        return rgbPNG(width: width, height: height, idat: zlibStored(raw))
    }

    /// A 24-bit bottom-up BMP of packed RGB pixels.
    static func bmp(width: Int, height: Int, rgb: [UInt8]) -> Data {
        let row = (width * 3 + 3) / 4 * 4
        var bmp = Data("BM".utf8)
        func little(_ value: Int, _ bytes: Int) { for i in 0..<bytes { bmp.append(UInt8(truncatingIfNeeded: value >> (8 * i))) } }
        little(54 + row * height, 4)
        little(0, 4)
        little(54, 4)
        little(40, 4)
        little(width, 4)
        little(height, 4)
        little(1, 2)
        little(24, 2)
        little(0, 4)
        little(row * height, 4)
        little(2835, 4)
        little(2835, 4)
        little(0, 4)
        little(0, 4)
        for y in (0..<height).reversed() {
            for x in 0..<width {
                let at = (y * width + x) * 3
                bmp.append(contentsOf: [rgb[at + 2], rgb[at + 1], rgb[at]])
            }
            bmp.append(contentsOf: [UInt8](repeating: 0, count: row - width * 3))
        }
        return bmp
    }

    /// An HTML error page, as misconfigured servers send with `Content-Type: image/jpeg`.
    public static let htmlErrorPage = Data("<!DOCTYPE html>\n<html><head><title>404 Not Found</title></head><body><h1>Not Found</h1><p>The requested image was not found on this server.</p></body></html>\n".utf8)

    /// A PNG whose header claims 100000×100000 pixels (a decompression bomb); the body is tiny.
    public static func pixelBomb() -> Data {
        var png = png(width: 1, height: 1)
        // IHDR data starts at 16: width then height, big-endian; fix the CRC after changing them.
        var header = Data()
        header.appendBigEndian(UInt32(100_000))
        header.appendBigEndian(UInt32(100_000))
        header.append(contentsOf: [8, 2, 0, 0, 0])
        png.replaceSubrange(16..<29, with: header)
        let crc = crc32(Data("IHDR".utf8) + header)
        png.replaceSubrange(29..<33, with: withUnsafeBytes(of: crc.bigEndian) { Data($0) })
        return png
    }

    // MARK: Encoding helpers

    static func zlibStored(_ data: Data) -> Data {
        var out = Data([0x78, 0x01])
        var offset = 0
        repeat {
            let count = min(65_535, data.count - offset)
            let final: UInt8 = offset + count >= data.count ? 1 : 0
            out.append(final)
            out.append(UInt8(count & 0xFF))
            out.append(UInt8(count >> 8))
            out.append(UInt8(~count & 0xFF))
            out.append(UInt8((~count >> 8) & 0xFF))
            out.append(data[data.startIndex + offset ..< data.startIndex + offset + count])
            offset += count
        } while offset < data.count
        out.appendBigEndian(adler32(data))
        return out
    }

    static func adler32(_ data: Data) -> UInt32 {
        var a: UInt32 = 1
        var b: UInt32 = 0
        for byte in data {
            a = (a + UInt32(byte)) % 65_521
            b = (b + a) % 65_521
        }
        return (b << 16) | a
    }

    private static let crcTable: [UInt32] = (0..<256).map { index -> UInt32 in
        var value = UInt32(index)
        for _ in 0..<8 { value = (value & 1) != 0 ? 0xEDB8_8320 ^ (value >> 1) : value >> 1 }
        return value
    }

    static func crc32(_ data: Data) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in data { crc = crcTable[Int((crc ^ UInt32(byte)) & 0xFF)] ^ (crc >> 8) }
        return crc ^ 0xFFFF_FFFF
    }
}

extension Data {
    mutating func appendBigEndian(_ value: UInt32) {
        Swift.withUnsafeBytes(of: value.bigEndian) { append(contentsOf: $0) }
    }

    mutating func appendChunk(_ type: String, _ payload: Data) {
        appendBigEndian(UInt32(payload.count))
        let typed = Data(type.utf8) + payload
        append(typed)
        appendBigEndian(TestImages.crc32(typed))
    }
}
