import CZlib
import Foundation

/// A file (or standard input) read in chunks of at most 256 KiB, gunzipped on the way when its first bytes are gzip's
/// magic number (whatever its name): a table of any size costs the same memory.
///
/// Decompression is zlib's (already linked by libcurl and libpng), which checks each member's CRC-32 and length: a
/// table whose bytes changed is an error, not rows of other bytes. A file of several gzip members (`cat a.gz b.gz`)
/// reads as one. (libarchive's gzip filter, the other library at hand, does not check the CRC: a corrupt table read
/// as garbage rows.)
final class ByteChunks {
    private static let chunkSize = 256 * 1024
    private let handle: FileHandle
    private let closesHandle: Bool
    /// The inflater, when the bytes are gzip.
    private var stream: UnsafeMutablePointer<z_stream>?
    /// Compressed bytes not inflated yet (`stream.next_in` points into it).
    private var compressed: [UInt8] = []
    private var endOfInput = false
    /// The first chunk, read to tell gzip from plain bytes.
    private var first: [UInt8]?
    /// Bytes of ``compressed`` inflated already.
    private var consumed = 0
    /// Whether the last gzip member ended where the bytes read so far do (at the end of input, anything else is a
    /// cut-off file).
    private var atMemberBoundary = false

    /// Opens `path` (`-` for standard input).
    /// - Throws: ``TableError/unreadable(_:)`` when the file cannot be opened or read.
    init(path: String) throws(TableError) {
        if path == "-" {
            handle = .standardInput
            closesHandle = false
        } else {
            do {
                handle = try FileHandle(forReadingFrom: URL(fileURLWithPath: path))
            } catch {
                throw .unreadable(Self.reason(error, path: path))
            }
            closesHandle = true
        }
        first = try read()
        if let first, first.count >= 2, first[0] == 0x1F, first[1] == 0x8B {
            let stream = UnsafeMutablePointer<z_stream>.allocate(capacity: 1)
            stream.initialize(to: z_stream())
            guard mirror_inflate_init_gzip(stream) == Z_OK else {
                stream.deallocate()
                throw .unreadable("cannot start gzip: out of memory")
            }
            self.stream = stream
        }
    }

    /// Whether the bytes are gzip-compressed.
    var isGzip: Bool { stream != nil }

    deinit {
        if let stream {
            inflateEnd(stream)
            stream.deallocate()
        }
        if closesHandle { try? handle.close() }
    }

    /// The next bytes, or `nil` at the end.
    /// - Throws: ``TableError/unreadable(_:)`` when reading fails or the gzip stream is corrupt.
    func next() throws(TableError) -> [UInt8]? {
        guard let stream else { return try read() }
        var output = [UInt8](repeating: 0, count: Self.chunkSize)
        var produced = 0
        while produced < output.count {
            if consumed >= compressed.count {
                guard let more = try read() else {
                    guard atMemberBoundary else {
                        throw .unreadable("the gzip data ends too soon (a cut-off file); check the file with gzip -t")
                    }
                    break
                }
                (compressed, consumed) = (more, 0)
            }
            let (status, taken, made) = compressed.withUnsafeMutableBufferPointer { input in
                output.withUnsafeMutableBufferPointer { out in
                    stream.pointee.next_in = input.baseAddress! + consumed
                    stream.pointee.avail_in = UInt32(input.count - consumed)
                    stream.pointee.next_out = out.baseAddress! + produced
                    stream.pointee.avail_out = UInt32(out.count - produced)
                    let status = inflate(stream, Z_NO_FLUSH)
                    return (status, input.count - consumed - Int(stream.pointee.avail_in), out.count - produced - Int(stream.pointee.avail_out))
                }
            }
            consumed += taken
            produced += made
            switch status {
            case Z_OK, Z_BUF_ERROR:
                atMemberBoundary = false
            case Z_STREAM_END:
                // A member ended (its CRC-32 and length checked); another may follow.
                inflateReset(stream)
                atMemberBoundary = true
            default:
                let message = stream.pointee.msg.map { String(cString: $0) } ?? "zlib error \(status)"
                throw .unreadable("the gzip data is corrupt (\(message)); check the file with gzip -t")
            }
        }
        guard produced > 0 else { return nil }
        output.removeSubrange(produced...)
        return output
    }

    private func read() throws(TableError) -> [UInt8]? {
        if let chunk = first {
            first = nil
            return chunk
        }
        guard !endOfInput else { return nil }
        do {
            guard let data = try handle.read(upToCount: Self.chunkSize), !data.isEmpty else {
                endOfInput = true
                return nil
            }
            return [UInt8](data)
        } catch {
            throw .unreadable(error.localizedDescription)
        }
    }

    private static func reason(_ error: any Error, path: String) -> String {
        let nsError = error as NSError
        if let posix = nsError.userInfo[NSUnderlyingErrorKey] as? NSError, posix.domain == NSPOSIXErrorDomain,
           let code = POSIXErrorCode(rawValue: Int32(posix.code)) {
            return "\(path): \(String(cString: strerror(code.rawValue)))"
        }
        if nsError.domain == NSCocoaErrorDomain, nsError.code == NSFileReadNoSuchFileError || nsError.code == 4 {
            return "\(path): No such file or directory"
        }
        return "\(path): \(nsError.localizedDescription)"
    }
}
