import CBrotli
import CLZ4
import CSnappy
import CZlib
import CZstd

/// parquet.thrift's CompressionCodec, and the one call that turns a compressed page into exactly the bytes its header
/// says (Compression.md: the page is fed as-is to the library, no framing but the deprecated LZ4's).
///
/// Every library is given an output buffer of the declared size and refuses to write past it; the result must fill it
/// exactly. The declared size was bounded before (`maxPageSize`, and `maximumRatio` times the compressed size, what the
/// format can reach), and the buffer is reserved without being touched, so a false size costs no memory the data does
/// not fill. Snappy, zstd and gzip state their size in their own headers, checked against the page's before anything
/// is reserved.
enum Codec: Int32, Sendable {
    case uncompressed = 0, snappy = 1, gzip = 2, lzo = 3, brotli = 4, lz4 = 5, zstd = 6, lz4Raw = 7

    var name: String {
        switch self {
        case .uncompressed: "UNCOMPRESSED"
        case .snappy: "SNAPPY"
        case .gzip: "GZIP"
        case .lzo: "LZO"
        case .brotli: "BROTLI"
        case .lz4: "LZ4"
        case .zstd: "ZSTD"
        case .lz4Raw: "LZ4_RAW"
        }
    }

    /// The most a byte of input can become. Snappy: a 3-byte copy makes at most 64 bytes. Deflate: 1032:1 (258 bytes
    /// per 2 bits at best), gzip's header aside. LZ4: a 255 length byte adds 255 bytes. Zstandard and Brotli: a
    /// run-length block of a few bytes makes 128 KB (zstd) or more; 1 << 16 admits a megabyte page of one value
    /// (measured: pyarrow's zstd makes 1 MiB of one repeated string 46 bytes, 22,795:1) while keeping a hostile
    /// 4 KB page under 256 MB.
    var maximumRatio: Int {
        switch self {
        case .uncompressed: 1
        case .snappy: 32
        case .gzip: 1100
        case .lz4, .lz4Raw: 256
        case .zstd, .brotli, .lzo: 1 << 16
        }
    }

    /// `count` bytes from `start` of `input` decompressed to exactly `size` bytes.
    func decompress(_ input: [UInt8], start: Int, count: Int, size: Int) throws(ParquetError) -> [UInt8] {
        guard start >= 0, count >= 0, start <= input.count - count, size >= 0 else {
            throw .corrupt("a compressed page outside its buffer")
        }
        if self == .uncompressed {
            guard count == size else {
                throw .corrupt("an uncompressed page of \(count) bytes says it holds \(size)")
            }
            return Array(input[start..<(start + count)])
        }
        guard size <= count.multipliedReportingOverflow(by: maximumRatio).partialValue + 64 || count > Int.max / maximumRatio else {
            throw .corrupt("a \(name) page of \(count) bytes says it holds \(size), more than \(name) can make of it")
        }
        return try input.withUnsafeBufferPointer { (buffer: UnsafeBufferPointer<UInt8>) throws(ParquetError) -> [UInt8] in
            let source = UnsafeBufferPointer(rebasing: buffer[start..<(start + count)])
            switch self {
            case .snappy: return try Self.snappy(source, size: size)
            case .gzip: return try Self.gzip(source, size: size)
            case .zstd: return try Self.zstd(source, size: size)
            case .lz4Raw: return try Self.lz4Block(source, size: size)
            case .lz4: return try Self.hadoopLZ4(source, size: size)
            case .brotli: return try Self.brotli(source, size: size)
            case .lzo: throw .unsupported("pages compressed with LZO are not read (no LZO decoder here)")
            case .uncompressed: return Array(source)
            }
        }
    }

    /// A buffer of `size` bytes filled by `fill`, which returns how many it wrote (or nil on an error).
    private static func filled(
        _ size: Int, _ codec: String, _ fill: (UnsafeMutableBufferPointer<UInt8>) -> Int?
    ) throws(ParquetError) -> [UInt8] {
        guard size > 0 else { return [] }
        var written: Int?
        let output = [UInt8](unsafeUninitializedCapacity: size) { buffer, initialized in
            written = fill(buffer)
            // What the library did not write is zeroed, so that the array is never uninitialised, whatever happened.
            let done = min(max(written ?? 0, 0), size)
            if done < size, let base = buffer.baseAddress { (base + done).initialize(repeating: 0, count: size - done) }
            initialized = size
        }
        guard let written else { throw .corrupt("a \(codec) page does not decompress") }
        guard written == size else {
            throw .corrupt("a \(codec) page decompresses to \(written) bytes, its header says \(size)")
        }
        return output
    }

    private static func snappy(_ source: UnsafeBufferPointer<UInt8>, size: Int) throws(ParquetError) -> [UInt8] {
        let input = UnsafeRawPointer(source.baseAddress).map { $0.assumingMemoryBound(to: CChar.self) }
        var stated = 0
        guard let input, snappy_uncompressed_length(input, source.count, &stated) == SNAPPY_OK else {
            throw .corrupt("a SNAPPY page does not decompress")
        }
        guard stated == size else { throw .corrupt("a SNAPPY page holds \(stated) bytes, its header says \(size)") }
        return try filled(size, "SNAPPY") { output in
            var length = output.count
            guard let base = output.baseAddress else { return 0 }
            let status = base.withMemoryRebound(to: CChar.self, capacity: output.count) {
                snappy_uncompress(input, source.count, $0, &length)
            }
            return status == SNAPPY_OK ? length : nil
        }
    }

    private static func zstd(_ source: UnsafeBufferPointer<UInt8>, size: Int) throws(ParquetError) -> [UInt8] {
        guard let input = source.baseAddress, !source.isEmpty else { throw .corrupt("an empty ZSTD page") }
        let stated = ZSTD_getFrameContentSize(input, source.count)
        // A frame may leave its size out (streaming writers); then only the decompression itself can tell.
        if stated != ZSTD_CONTENTSIZE_UNKNOWN {
            guard stated != ZSTD_CONTENTSIZE_ERROR else { throw .corrupt("a ZSTD page does not decompress") }
            guard stated <= UInt64(size) else { throw .corrupt("a ZSTD page holds \(stated) bytes, its header says \(size)") }
        }
        return try filled(size, "ZSTD") { output in
            let result = ZSTD_decompress(output.baseAddress, output.count, input, source.count)
            return ZSTD_isError(result) != 0 ? nil : result
        }
    }

    private static func lz4Block(_ source: UnsafeBufferPointer<UInt8>, size: Int) throws(ParquetError) -> [UInt8] {
        guard source.count <= Int(Int32.max), size <= Int(Int32.max) else { throw .corrupt("an LZ4 page over 2 GB") }
        return try filled(size, "LZ4_RAW") { output in
            guard let input = UnsafeRawPointer(source.baseAddress), let base = UnsafeMutableRawPointer(output.baseAddress) else {
                return source.isEmpty && output.isEmpty ? 0 : nil
            }
            let result = LZ4_decompress_safe(input.assumingMemoryBound(to: CChar.self),
                                             base.assumingMemoryBound(to: CChar.self), Int32(source.count), Int32(output.count))
            return result < 0 ? nil : Int(result)
        }
    }

    /// The deprecated LZ4 codec: Hadoop's frames (a big-endian uncompressed size, a big-endian compressed size, an LZ4
    /// block), one or more; some writers wrote plain LZ4 blocks under the same codec, read when the frames do not fit.
    private static func hadoopLZ4(_ source: UnsafeBufferPointer<UInt8>, size: Int) throws(ParquetError) -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(size)
        var offset = 0
        func bigEndian(_ at: Int) -> Int {
            Int(source[at]) << 24 | Int(source[at + 1]) << 16 | Int(source[at + 2]) << 8 | Int(source[at + 3])
        }
        var framed = true
        while offset < source.count {
            guard source.count - offset >= 8 else { framed = false; break }
            let frameSize = bigEndian(offset)
            let blockSize = bigEndian(offset + 4)
            guard blockSize <= source.count - offset - 8, frameSize <= size - output.count,
                  let block = try? lz4Block(UnsafeBufferPointer(rebasing: source[(offset + 8)..<(offset + 8 + blockSize)]), size: frameSize)
            else { framed = false; break }
            output += block
            offset += 8 + blockSize
        }
        if framed, output.count == size { return output }
        return try lz4Block(source, size: size)
    }

    private static func brotli(_ source: UnsafeBufferPointer<UInt8>, size: Int) throws(ParquetError) -> [UInt8] {
        try filled(size, "BROTLI") { output in
            var length = output.count
            let result = BrotliDecoderDecompress(source.count, source.baseAddress, &length, output.baseAddress)
            return result == BROTLI_DECODER_RESULT_SUCCESS ? length : nil
        }
    }

    /// GZIP: one member or several, one after the other (Compression.md asks readers to take several).
    private static func gzip(_ source: UnsafeBufferPointer<UInt8>, size: Int) throws(ParquetError) -> [UInt8] {
        try filled(size, "GZIP") { output in
            guard let input = source.baseAddress, !source.isEmpty, source.count <= Int(UInt32.max),
                  output.count <= Int(UInt32.max) else { return nil }
            var stream = z_stream()
            guard mirror_inflate_init_gzip(&stream) == Z_OK else { return nil }
            defer { inflateEnd(&stream) }
            stream.next_in = UnsafeMutablePointer(mutating: input)
            stream.avail_in = UInt32(clamping: source.count)
            stream.next_out = output.baseAddress
            stream.avail_out = UInt32(clamping: output.count)
            while true {
                let status = inflate(&stream, Z_FINISH)
                if status == Z_STREAM_END {
                    // Another member may follow.
                    if stream.avail_in == 0 { break }
                    guard inflateReset(&stream) == Z_OK else { return nil }
                    continue
                }
                // Z_BUF_ERROR with no room left: more output than declared; anything else: corrupt input.
                return nil
            }
            return output.count - Int(stream.avail_out)
        }
    }
}
