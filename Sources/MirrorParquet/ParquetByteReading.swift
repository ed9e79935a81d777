import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Random access to a Parquet file's bytes: the footer first, then one column chunk at a time.
///
/// Implementations must be safe to call from several threads at once (two row iterators over one file read
/// concurrently). `ParquetFileBytes` reads a file with positioned reads, `ParquetMemoryBytes` bytes in memory; a test or
/// another store (object storage's range requests) can supply its own.
public protocol ParquetByteReading: Sendable {
    /// The size of the file, in bytes.
    var size: Int { get }
    /// Exactly `count` bytes from `offset`. The reader asks only within `0..<size`.
    /// - Throws: `ParquetError.unreadable` when the bytes cannot be read.
    func bytes(at offset: Int, count: Int) throws(ParquetError) -> [UInt8]
}

/// A Parquet file's bytes in memory.
public struct ParquetMemoryBytes: ParquetByteReading {
    public let storage: [UInt8]

    public init(_ storage: [UInt8]) {
        self.storage = storage
    }

    public var size: Int { storage.count }

    public func bytes(at offset: Int, count: Int) throws(ParquetError) -> [UInt8] {
        guard offset >= 0, count >= 0, offset <= storage.count - count else {
            throw .unreadable("\(count) bytes at offset \(offset) are outside the \(storage.count) bytes")
        }
        return Array(storage[offset..<(offset + count)])
    }
}

/// A Parquet file on disk, read with positioned reads (`pread`: a seek and a read in one call, which shares no file
/// position between threads). The file stays open while this value lives.
public final class ParquetFileBytes: ParquetByteReading {
    private let handle: FileHandle
    private let path: String
    public let size: Int

    /// Opens the file at `url` for reading.
    /// - Throws: `ParquetError.unreadable` when it cannot be opened or sized.
    public init(url: URL) throws(ParquetError) {
        path = url.path
        do {
            handle = try FileHandle(forReadingFrom: url)
            let end = try handle.seekToEnd()
            guard end <= UInt64(Int.max) else { throw ParquetError.unreadable("\(url.path) is too large") }
            size = Int(end)
        } catch let error as ParquetError {
            throw error
        } catch {
            throw .unreadable("cannot open \(url.path): \(error.localizedDescription)")
        }
    }

    public func bytes(at offset: Int, count: Int) throws(ParquetError) -> [UInt8] {
        guard offset >= 0, count >= 0, offset <= size - count else {
            throw .unreadable("\(count) bytes at offset \(offset) are outside the \(size) bytes of \(path)")
        }
        let descriptor = handle.fileDescriptor
        var done = 0
        var failure: Int32 = 0
        let bytes = [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            guard let base = buffer.baseAddress else { return }
            while done < count {
                let result = pread(descriptor, base + done, count - done, off_t(offset + done))
                if result > 0 {
                    done += result
                } else if result < 0, errno == EINTR {
                    continue
                } else {
                    failure = result < 0 ? errno : 0
                    break
                }
            }
            (base + done).initialize(repeating: 0, count: count - done)
            initialized = count
        }
        guard done == count else {
            let reason = failure == 0 ? "the file ended" : String(cString: strerror(failure))
            throw .unreadable("read \(done) of \(count) bytes at offset \(offset) of \(path): \(reason)")
        }
        return bytes
    }
}
