import CompressNIO
import Foundation
import MirrorCore
import MirrorSearch
import MirrorStorage
import NIOCore

/// A file (or standard input) read in chunks of at most 256 KiB, gunzipped on the way when its first bytes are gzip's
/// magic number (whatever its name): a table of any size costs the same memory.
///
/// Decompression is compress-nio's zlib stream; a file of several gzip members (`cat a.gz b.gz`) reads as one.
final class ByteChunks {
    private static let chunkSize = 256 * 1024
    private let handle: FileHandle
    private let closesHandle: Bool
    private var decompressor: (any NIODecompressor)?
    private var compressed = ByteBuffer()
    private var endOfInput = false
    /// The first chunk, read to tell gzip from plain bytes.
    private var first: [UInt8]?

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
            let decompressor = CompressionAlgorithm.gzip().decompressor
            do { try decompressor.startStream() } catch { throw .unreadable("cannot start gzip: \(error)") }
            self.decompressor = decompressor
        }
    }

    /// Whether the bytes are gzip-compressed.
    var isGzip: Bool { decompressor != nil }

    deinit {
        if let decompressor { try? decompressor.finishStream() }
        if closesHandle { try? handle.close() }
    }

    /// The next bytes, or `nil` at the end.
    /// - Throws: ``TableError/unreadable(_:)`` when reading fails or the gzip stream is corrupt.
    func next() throws(TableError) -> [UInt8]? {
        guard let decompressor else { return try read() }
        var output = ByteBuffer()
        output.reserveCapacity(Self.chunkSize)
        while true {
            if compressed.readableBytes == 0 {
                guard let more = try read() else {
                    return output.readableBytes > 0 ? output.readBytes(length: output.readableBytes) : nil
                }
                compressed.clear()
                compressed.writeBytes(more)
            }
            do {
                try decompressor.streamInflate(from: &compressed, to: &output)
                // Returned without error: either all input was used, or a gzip member ended with more after it.
                if compressed.readableBytes > 0 { try decompressor.resetStream() }
            } catch let error as CompressNIOError where error == .bufferOverflow {
                return output.readBytes(length: output.readableBytes)
            } catch let error as CompressNIOError where error == .inputBufferOverflow {
                // All input used; read more.
            } catch {
                throw .unreadable("the gzip data is corrupt (\(error)); check the file with gzip -t")
            }
            if output.writableBytes == 0 { return output.readBytes(length: output.readableBytes) }
        }
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

/// ``ByteChunks`` as an `InputStream`, the input CSV.swift reads.
///
/// swift-corelibs-foundation's `InputStream` methods are open, so a subclass can feed it from any source.
final class ChunkInputStream: InputStream {
    private let chunks: ByteChunks
    private var pending: [UInt8] = []
    private var offset = 0
    private var status: Stream.Status = .notOpen
    private var failure: (any Error)?

    init(_ chunks: ByteChunks) {
        self.chunks = chunks
        super.init(data: Data())
    }

    override func open() { status = .open }
    override func close() { status = .closed }
    override var streamStatus: Stream.Status { status }
    override var streamError: (any Error)? { failure }
    override var hasBytesAvailable: Bool {
        if offset < pending.count { return true }
        return fill()
    }

    override func read(_ buffer: UnsafeMutablePointer<UInt8>, maxLength: Int) -> Int {
        guard offset < pending.count || fill() else { return failure == nil ? 0 : -1 }
        let count = min(maxLength, pending.count - offset)
        pending.withUnsafeBufferPointer { source in
            buffer.update(from: source.baseAddress! + offset, count: count)
        }
        offset += count
        return count
    }

    private func fill() -> Bool {
        guard status == .open else { return false }
        do {
            guard let next = try chunks.next() else {
                status = .atEnd
                return false
            }
            pending = next
            offset = 0
            return !next.isEmpty || fill()
        } catch {
            failure = error
            status = .error
            return false
        }
    }
}
