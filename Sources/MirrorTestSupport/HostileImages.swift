import CImageLibraries
import Foundation

/// Image files crafted as a hostile host would serve them, made in code: to crash a decoder, to make it allocate a
/// gigabyte from a few hundred bytes, or to be saved wrong. Beside them, ordinary images made with the same codecs.
///
/// Every one is built from a real file the codec itself wrote, then altered where the attack is: a frame header's
/// dimensions, an EXIF offset, a chunk cut short with its sizes and checksums made consistent again (so that the
/// structure still verifies and only the decoder can tell).
public enum HostileImages {
    /// One crafted file, and what mirror must make of it in each kind of run.
    public struct Sample: Sendable {
        /// The file's name (its URL's last component): what it is, in a few words.
        public var name: String
        public var data: Data
        public var contentType: String
        /// The record's reason when a run that resizes it fails it; `nil` when it is saved.
        public var whenResized: String?
        /// The reason in a run without a resize that writes JPEG (WebDataset's default: a JPEG is stored as served,
        /// anything else re-encoded at its size); `nil` when it is saved.
        public var whenNotResized: String?
        /// For an image saved after a resize: the mean grey level Pillow shows of the file as served, which the
        /// resized image must keep within a few levels.
        public var meanGrey: Double?
    }

    /// The crafted files: EXIF offsets that once wrapped a 32-bit check, the tiny JPEGs whose resample once aborted,
    /// decompression bombs of each format, a GIF frame without data, a 16-bit PNG without colour information, and files
    /// of each format cut short (plainly, and inside with the structure intact).
    public static func samples() -> [Sample] {
        var samples: [Sample] = []
        func add(_ name: String, _ data: Data, _ type: String, resized: String?, notResized: String?, grey: Double? = nil) {
            samples.append(Sample(name: name, data: data, contentType: type, whenResized: resized, whenNotResized: notResized, meanGrey: grey))
        }
        add("exif-ifd-fffffffe.jpg", exifJPEG(ifdOffset: 0xFFFF_FFFE), "image/jpeg", resized: nil, notResized: nil)
        add("exif-ifd-ffffffff.jpg", exifJPEG(ifdOffset: 0xFFFF_FFFF), "image/jpeg", resized: nil, notResized: nil)
        for (width, height, subsampling) in [(3, 10, TJSAMP_420), (3, 9, TJSAMP_444), (3, 22, TJSAMP_422), (18, 16, TJSAMP_444)] {
            add("tiny-\(width)x\(height)-\(name(subsampling)).jpg", jpeg(width: width, height: height, subsampling: subsampling), "image/jpeg", resized: nil, notResized: nil)
        }
        // Past --max-pixels (Pillow's 178,956,970): refused before any decoder, with or without a resize.
        add("progressive-14000x14000.jpg", jpegBomb(width: 14_000, height: 14_000, subsampling: TJSAMP_420), "image/jpeg",
            resized: "too-many-pixels", notResized: "too-many-pixels")
        // Under it, but libjpeg's coefficients would take 1.01 GB: refused by the estimate before libjpeg starts.
        add("progressive-13000x13000-444.jpg", jpegBomb(width: 13_000, height: 13_000, subsampling: TJSAMP_444), "image/jpeg",
            resized: "too-large-to-decode", notResized: nil)
        // Under both (432 MB): decoded, and refused because its data does not cover it (it came out flat grey).
        add("progressive-12000x12000.jpg", jpegBomb(width: 12_000, height: 12_000, subsampling: TJSAMP_420), "image/jpeg",
            resized: "malformed", notResized: nil)
        add("cmyk-progressive-13000x13000.jpg", jpegBomb(width: 13_000, height: 13_000, subsampling: TJSAMP_444, cmyk: true), "image/jpeg",
            resized: "too-large-to-decode", notResized: nil)
        add("lossless-16383x10900.webp", losslessWebPBomb(width: 16_383, height: 10_900), "image/webp",
            resized: "too-large-to-decode", notResized: "too-large-to-decode")
        add("gif-screen-13000x13000.gif", gifBomb(screen: 13_000), "image/gif", resized: nil, notResized: "too-large-to-decode", grey: 255)
        add("gif-frame-without-data.gif", gifFrameWithoutData(), "image/gif", resized: "malformed", notResized: "malformed")
        let (png16, grey) = png16WithoutGamma(width: 64, height: 64)
        add("png-16-bit-without-gama.png", png16, "image/png", resized: nil, notResized: nil, grey: grey)
        // Cut short: plainly (the validator sees the missing end), and inside (the structure verifies; the decoder fails).
        let photo = jpeg(width: 64, height: 64, subsampling: TJSAMP_420)
        add("cut.jpg", photo.prefix(photo.count / 2), "image/jpeg", resized: "truncated", notResized: "truncated")
        add("cut-scan.jpg", jpegWithScanCut(photo), "image/jpeg", resized: "malformed", notResized: nil)
        let png = TestImages.png(width: 64, height: 64, seed: 7)
        add("cut.png", png.prefix(png.count / 2), "image/png", resized: "truncated", notResized: "truncated")
        add("cut-idat.png", pngWithDataCut(width: 64, height: 64), "image/png", resized: "malformed", notResized: "malformed")
        let webp = lossyWebP(width: 64, height: 64)
        add("cut.webp", webp.prefix(webp.count / 2), "image/webp", resized: "truncated", notResized: "truncated")
        add("cut-vp8.webp", webPWithDataCut(webp), "image/webp", resized: "malformed", notResized: "malformed")
        let gif = self.gif(width: 64, height: 64)
        add("cut.gif", gif.prefix(gif.count / 2), "image/gif", resized: "truncated", notResized: "truncated")
        add("cut-lzw.gif", gifWithDataCut(gif), "image/gif", resized: "malformed", notResized: "malformed")
        return samples
    }

    /// Ordinary files of each format, to be saved beside the crafted ones.
    public static func ordinary() -> [(name: String, data: Data, contentType: String)] {
        [
            ("photo.jpg", jpeg(width: 120, height: 80, subsampling: TJSAMP_420), "image/jpeg"),
            ("photo-444.jpg", jpeg(width: 90, height: 130, subsampling: TJSAMP_444), "image/jpeg"),
            ("photo-progressive.jpg", jpeg(width: 100, height: 75, subsampling: TJSAMP_420, progressive: true), "image/jpeg"),
            ("picture.png", TestImages.png(width: 70, height: 50, seed: 3), "image/png"),
            ("picture.webp", lossyWebP(width: 80, height: 60), "image/webp"),
            ("picture.gif", gif(width: 40, height: 30), "image/gif"),
        ]
    }

    /// A JPEG decoded to RGB by TurboJPEG (width, height, 3 bytes a pixel), or `nil` when it does not decode.
    public static func decodeJPEG(_ data: Data) -> (width: Int, height: Int, rgb: [UInt8])? {
        guard let handle = tjInitDecompress() else { return nil }
        defer { tjDestroy(handle) }
        return data.withUnsafeBytes { bytes -> (width: Int, height: Int, rgb: [UInt8])? in
            let input = bytes.bindMemory(to: UInt8.self).baseAddress
            var width: Int32 = 0, height: Int32 = 0, subsampling: Int32 = 0, colorspace: Int32 = 0
            guard tjDecompressHeader3(handle, input, UInt(bytes.count), &width, &height, &subsampling, &colorspace) == 0 else { return nil }
            var pixels = [UInt8](repeating: 0, count: Int(width * height * 3))
            guard tjDecompress2(handle, input, UInt(bytes.count), &pixels, width, 0, height, Int32(TJPF_RGB.rawValue), 0) == 0 else { return nil }
            return (Int(width), Int(height), pixels)
        }
    }

    /// A PNG decoded by libpng's simplified API: RGB, or RGBA when it has alpha; `nil` when it does not decode.
    public static func decodePNG(_ data: Data) -> (width: Int, height: Int, channels: Int, pixels: [UInt8])? {
        var image = png_image()
        image.version = UInt32(PNG_IMAGE_VERSION)
        let begun = data.withUnsafeBytes { png_image_begin_read_from_memory(&image, $0.baseAddress, $0.count) }
        guard begun != 0 else { return nil }
        let channels = image.format & UInt32(PNG_FORMAT_FLAG_ALPHA) != 0 ? 4 : 3
        image.format = UInt32(channels == 4 ? PNG_FORMAT_FLAG_COLOR | PNG_FORMAT_FLAG_ALPHA : PNG_FORMAT_FLAG_COLOR)
        var pixels = [UInt8](repeating: 0, count: Int(image.width * image.height) * channels)
        guard png_image_finish_read(&image, nil, &pixels, 0, nil) != 0 else { return nil }
        return (Int(image.width), Int(image.height), channels, pixels)
    }

    /// The mean of a JPEG's samples, decoded to RGB, or `nil` when it does not decode.
    public static func meanGrey(ofJPEG data: Data) -> Double? {
        guard let pixels = decodeJPEG(data)?.rgb else { return nil }
        return Double(pixels.reduce(0) { $0 + Int($1) }) / Double(max(1, pixels.count))
    }

    // MARK: JPEG

    private static func name(_ subsampling: TJSAMP) -> String {
        switch subsampling {
        case TJSAMP_420: "420"
        case TJSAMP_422: "422"
        case TJSAMP_444: "444"
        default: "gray"
        }
    }

    /// A JPEG of a smooth gradient, as TurboJPEG writes it.
    public static func jpeg(width: Int, height: Int, subsampling: TJSAMP, progressive: Bool = false, cmyk: Bool = false) -> Data {
        let channels = cmyk ? 4 : 3
        var pixels = [UInt8](repeating: 0, count: width * height * channels)
        for y in 0..<height {
            for x in 0..<width {
                let base = (y * width + x) * channels
                pixels[base] = UInt8(truncatingIfNeeded: 40 + x * 150 / max(1, width))
                pixels[base + 1] = UInt8(truncatingIfNeeded: 60 + y * 120 / max(1, height))
                pixels[base + 2] = UInt8(truncatingIfNeeded: 90 + (x + y) % 50)
                if cmyk { pixels[base + 3] = 30 }
            }
        }
        guard let handle = tjInitCompress() else { return Data() }
        defer { tjDestroy(handle) }
        var buffer: UnsafeMutablePointer<UInt8>?
        var size: UInt = 0
        let flags = progressive ? TJFLAG_PROGRESSIVE : 0
        let format = cmyk ? TJPF_CMYK : TJPF_RGB
        guard tjCompress2(handle, pixels, Int32(width), 0, Int32(height), Int32(format.rawValue), &buffer, &size,
                          Int32(subsampling.rawValue), 90, flags) == 0, let buffer else { return Data() }
        defer { tjFree(buffer) }
        return Data(bytes: buffer, count: Int(size))
    }

    /// The offset of the first marker `marker` (its 0xFF), walking the segments from the start.
    private static func segment(_ marker: UInt8, in data: Data) -> Int? {
        let bytes = [UInt8](data)
        var at = 2
        while at + 4 <= bytes.count, bytes[at] == 0xFF {
            if bytes[at + 1] == marker { return at }
            at += 2 + (Int(bytes[at + 2]) << 8 | Int(bytes[at + 3]))
        }
        return nil
    }

    /// A 16 × 16 progressive JPEG whose frame header claims `width` × `height`: a few hundred bytes that make libjpeg
    /// allocate the whole image's coefficients (2 bytes each, 64 a block) whatever the scale it decodes at.
    public static func jpegBomb(width: Int, height: Int, subsampling: TJSAMP, cmyk: Bool = false) -> Data {
        var data = jpeg(width: 16, height: 16, subsampling: subsampling, progressive: true, cmyk: cmyk)
        guard let frame = segment(0xC2, in: data) else { return data }
        data[frame + 5] = UInt8(height >> 8)
        data[frame + 6] = UInt8(height & 0xFF)
        data[frame + 7] = UInt8(width >> 8)
        data[frame + 8] = UInt8(width & 0xFF)
        return data
    }

    /// A 64 × 48 JPEG with an EXIF segment whose first IFD is at `ifdOffset`: near 2³², an offset plus 2 wraps in
    /// 32 bits, and a reader that adds before it compares reads 4 GB past the segment.
    public static func exifJPEG(ifdOffset: UInt32) -> Data {
        let photo = jpeg(width: 64, height: 48, subsampling: TJSAMP_420)
        var tiff = Data("II".utf8) + Data([0x2A, 0x00])
        withUnsafeBytes(of: ifdOffset.littleEndian) { tiff.append(contentsOf: $0) }
        tiff += Data([0x01, 0x00, 0x12, 0x01, 0x03, 0x00, 0x01, 0x00, 0x00, 0x00, 0x06, 0x00, 0x00, 0x00])  // an entry, after
        let body = Data("Exif".utf8) + Data([0, 0]) + tiff
        let length = body.count + 2
        let segment = Data([0xFF, 0xE1, UInt8(length >> 8), UInt8(length & 0xFF)]) + body
        return photo.prefix(2) + segment + photo.dropFirst(2)
    }

    /// `photo` with its scan's data cut to a third and the end-of-image marker after it: every segment is whole, so
    /// only the decoder sees that the picture is not there.
    public static func jpegWithScanCut(_ photo: Data) -> Data {
        guard let scan = segment(0xDA, in: photo) else { return photo }
        let bytes = [UInt8](photo)
        let start = scan + 2 + (Int(bytes[scan + 2]) << 8 | Int(bytes[scan + 3]))
        let end = bytes.count - 2  // before EOI
        return photo.prefix(start + (end - start) / 3) + Data([0xFF, 0xD9])
    }

    // MARK: PNG

    /// A 16-bit RGB PNG without gAMA, sRGB, cHRM or iCCP, of a grey ramp; and the mean grey Pillow shows of it (the
    /// high byte of each sample: Pillow and browsers take such samples as sRGB-coded, not as linear light).
    public static func png16WithoutGamma(width: Int, height: Int) -> (Data, Double) {
        var raw = Data()
        var total = 0.0
        for y in 0..<height {
            raw.append(0)
            for x in 0..<width {
                let value = UInt16(60 * 257 + (x + y) * 124 * 257 / (width + height - 2))
                total += Double(value >> 8) * 3
                for _ in 0..<3 { raw.append(UInt8(value >> 8)); raw.append(UInt8(value & 0xFF)) }
            }
        }
        var png = Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A])
        var header = Data()
        header.appendBigEndian(UInt32(width))
        header.appendBigEndian(UInt32(height))
        header.append(contentsOf: [16, 2, 0, 0, 0])  // 16-bit, truecolour
        png.appendChunk("IHDR", header)
        png.appendChunk("IDAT", TestImages.zlibStored(raw))
        png.appendChunk("IEND", Data())
        return (png, total / Double(width * height * 3))
    }

    /// A PNG whose one IDAT holds only the first half of its compressed rows, with its length and CRC right and IEND
    /// after it.
    public static func pngWithDataCut(width: Int, height: Int) -> Data {
        var raw = Data()
        for y in 0..<height {
            raw.append(0)
            for x in 0..<width { raw.append(contentsOf: [UInt8(x * 3 & 0xFF), UInt8(y * 3 & 0xFF), 128]) }
        }
        let stream = TestImages.zlibStored(raw)
        return TestImages.rgbPNG(width: width, height: height, idat: stream.prefix(stream.count / 2))
    }

    // MARK: WebP

    /// A lossy WebP, as libwebp writes it.
    public static func lossyWebP(width: Int, height: Int) -> Data {
        var pixels = [UInt8](repeating: 0, count: width * height * 3)
        for index in 0..<(width * height) {
            pixels[index * 3] = UInt8(index % width * 200 / width)
            pixels[index * 3 + 1] = UInt8(index / width * 200 / height)
            pixels[index * 3 + 2] = 120
        }
        var output: UnsafeMutablePointer<UInt8>?
        let size = WebPEncodeRGB(pixels, Int32(width), Int32(height), Int32(width * 3), 80, &output)
        guard size > 0, let output else { return Data() }
        defer { WebPFree(output) }
        return Data(bytes: output, count: size)
    }

    /// A 1 × 1 lossless WebP whose VP8L header claims `width` × `height` (each at most 16384): 40-odd bytes that make
    /// libwebp allocate 4 bytes a pixel before it reads any.
    public static func losslessWebPBomb(width: Int, height: Int) -> Data {
        let pixel: [UInt8] = [200, 100, 50]
        var output: UnsafeMutablePointer<UInt8>?
        let size = WebPEncodeLosslessRGB(pixel, 1, 1, 3, &output)
        guard size > 0, let output else { return Data() }
        defer { WebPFree(output) }
        var data = Data(bytes: output, count: size)
        // RIFF, size, WEBP, VP8L, chunk size, then the signature 0x2F and 32 bits: 14 of width - 1, 14 of height - 1,
        // then alpha and version.
        guard data.count >= 25, data[20] == 0x2F else { return data }
        let old = UInt32(data[21]) | UInt32(data[22]) << 8 | UInt32(data[23]) << 16 | UInt32(data[24]) << 24
        let bits = UInt32(width - 1) | UInt32(height - 1) << 14 | (old & 0xF000_0000)
        for index in 0..<4 { data[21 + index] = UInt8(truncatingIfNeeded: bits >> (8 * UInt32(index))) }
        return data
    }

    /// `webp` (a simple lossy file: RIFF, VP8 and its data) with the VP8 chunk's data cut to half and every size
    /// made to agree.
    public static func webPWithDataCut(_ webp: Data) -> Data {
        guard webp.count > 20 else { return webp }
        let payload = webp.count - 20
        let kept = payload / 2 & ~1
        var data = webp.prefix(20 + kept)
        let chunk = UInt32(kept), riff = UInt32(12 + kept)
        for index in 0..<4 {
            data[16 + index] = UInt8(truncatingIfNeeded: chunk >> (8 * UInt32(index)))
            data[4 + index] = UInt8(truncatingIfNeeded: riff >> (8 * UInt32(index)))
        }
        return Data(data)
    }

    // MARK: GIF

    /// A GIF (giflib writes it) of `width` × `height` from a 4-colour palette.
    public static func gif(width: Int, height: Int) -> Data {
        final class Sink { var data = Data() }
        let sink = Sink()
        var error: Int32 = 0
        let write: OutputFunc = { file, bytes, count in
            guard let file, let bytes, let user = file.pointee.UserData else { return 0 }
            let sink = Unmanaged<Sink>.fromOpaque(user).takeUnretainedValue()
            sink.data.append(bytes, count: Int(count))
            return count
        }
        guard let file = EGifOpen(Unmanaged.passUnretained(sink).toOpaque(), write, &error) else { return Data() }
        var colors = [GifColorType(Red: 255, Green: 255, Blue: 255), GifColorType(Red: 200, Green: 40, Blue: 40),
                      GifColorType(Red: 40, Green: 160, Blue: 60), GifColorType(Red: 30, Green: 30, Blue: 140)]
        let map = GifMakeMapObject(4, &colors)
        defer { GifFreeMapObject(map) }
        EGifSetGifVersion(file, false)
        guard EGifPutScreenDesc(file, Int32(width), Int32(height), 2, 0, map) == GIF_OK,
              EGifPutImageDesc(file, 0, 0, Int32(width), Int32(height), false, nil) == GIF_OK else {
            EGifCloseFile(file, &error)
            return Data()
        }
        for y in 0..<height {
            var row = (0..<width).map { GifPixelType(($0 / 4 + y / 4) % 4) }
            EGifPutLine(file, &row, Int32(width))
        }
        EGifCloseFile(file, &error)
        return sink.data
    }

    /// A 35-byte GIF with a 1 × 1 frame on a `screen` × `screen` logical screen, which a decoder draws the frame on.
    public static func gifBomb(screen: Int) -> Data {
        var data = Data("GIF89a".utf8)
        data += Data([UInt8(screen & 0xFF), UInt8(screen >> 8), UInt8(screen & 0xFF), UInt8(screen >> 8), 0x80, 0, 0])
        data += Data([255, 255, 255, 255, 255, 255])  // two colours, both white
        data += Data([0x2C, 0, 0, 0, 0, 1, 0, 1, 0, 0])  // the frame: at 0,0, 1 x 1
        data += Data([2, 2, 0x44, 0x01, 0, 0x3B])  // LZW: clear, pixel 0, end; then the trailer
        return data
    }

    /// A GIF whose frame has no image data at all (its sub-blocks end at once).
    public static func gifFrameWithoutData() -> Data {
        var data = Data("GIF89a".utf8)
        data += Data([16, 0, 16, 0, 0x80, 0, 0, 0, 0, 0, 255, 255, 255])
        data += Data([0x2C, 0, 0, 0, 0, 16, 0, 16, 0, 0])
        data += Data([2, 0, 0x3B])  // LZW code size, no data, the trailer
        return data
    }

    /// `gif` (one frame) with its image data cut to the first sub-block: the block structure ends properly, the
    /// pixels do not.
    public static func gifWithDataCut(_ gif: Data) -> Data {
        let bytes = [UInt8](gif)
        var at = 13 + (bytes[10] & 0x80 != 0 ? 3 << (Int(bytes[10] & 7) + 1) : 0)
        while at < bytes.count, bytes[at] == 0x21 {  // extensions
            at += 2
            while at < bytes.count, bytes[at] != 0 { at += Int(bytes[at]) + 1 }
            at += 1
        }
        guard at + 11 < bytes.count, bytes[at] == 0x2C else { return gif }
        at += 10 + (bytes[at + 9] & 0x80 != 0 ? 3 << (Int(bytes[at + 9] & 7) + 1) : 0)
        let first = at + 1  // after the LZW code size: the first sub-block
        let keep = min(Int(bytes[first]), 8)
        return Data(bytes[..<first]) + Data([UInt8(keep)]) + Data(bytes[(first + 1)..<(first + 1 + keep)]) + Data([0, 0x3B])
    }
}
