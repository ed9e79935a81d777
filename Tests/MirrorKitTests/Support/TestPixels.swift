import CImageLibraries
import Foundation
import MirrorImages
import MirrorTestSupport

/// Pixels in and out of the codecs, for checking what a transform wrote.
enum TestPixels {
    struct Pixels {
        var width: Int, height: Int, channels: Int
        var data: [UInt8]
        func pixel(_ x: Int, _ y: Int) -> [UInt8] { Array(data[(y * width + x) * channels..<(y * width + x + 1) * channels]) }
        func rgb(_ x: Int, _ y: Int) -> [UInt8] { Array(pixel(x, y).prefix(3)) }
    }

    /// A PNG of RGB or RGBA pixels from `color(x, y)` (RGBA; alpha dropped for 3 channels).
    static func png(width: Int, height: Int, channels: Int, color: (Int, Int) -> [UInt8]) -> Data {
        var pixels = [UInt8]()
        for y in 0..<height { for x in 0..<width { pixels += color(x, y).prefix(channels) } }
        var image = png_image()
        image.version = UInt32(PNG_IMAGE_VERSION)
        image.width = UInt32(width)
        image.height = UInt32(height)
        image.format = UInt32(channels == 4 ? PNG_FORMAT_FLAG_COLOR | PNG_FORMAT_FLAG_ALPHA : PNG_FORMAT_FLAG_COLOR)
        var size = 0
        _ = png_image_write_to_memory(&image, nil, &size, 0, pixels, 0, nil)
        var data = Data(count: size)
        data.withUnsafeMutableBytes { _ = png_image_write_to_memory(&image, $0.baseAddress, &size, 0, pixels, 0, nil) }
        png_image_free(&image)
        return data.prefix(size)
    }

    /// A JPEG (quality 95) of RGB pixels from `color(x, y)`.
    static func jpeg(width: Int, height: Int, subsampling: TJSAMP = TJSAMP_444, color: (Int, Int) -> [UInt8]) -> Data? {
        var pixels = [UInt8]()
        for y in 0..<height { for x in 0..<width { pixels += color(x, y) } }
        guard let handle = tjInitCompress() else { return nil }
        defer { tjDestroy(handle) }
        var buffer: UnsafeMutablePointer<UInt8>?
        var size: UInt = 0
        guard tjCompress2(handle, pixels, Int32(width), 0, Int32(height), Int32(TJPF_RGB.rawValue), &buffer, &size, Int32(subsampling.rawValue), 95, 0) == 0,
              let buffer else { return nil }
        defer { tjFree(buffer) }
        return Data(bytes: buffer, count: Int(size))
    }

    static func decodeJPEG(_ data: Data) -> Pixels? {
        HostileImages.decodeJPEG(data).map { Pixels(width: $0.width, height: $0.height, channels: 3, data: $0.rgb) }
    }

    static func decodePNG(_ data: Data) -> Pixels? {
        HostileImages.decodePNG(data).map { Pixels(width: $0.width, height: $0.height, channels: $0.channels, data: $0.pixels) }
    }
}
