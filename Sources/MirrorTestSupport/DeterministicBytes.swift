import Foundation
import NIOCore

/// The byte pattern every generated body of ``TestServer`` uses.
///
/// The byte at offset `i` of a body is `UInt8(i % 251)`: 0, 1, …, 250, 0, 1, …. The modulus is a prime, so
/// a chunk that lands at the wrong offset (a dropped, repeated or reordered 64 KiB block) changes the bytes
/// and a test comparing against ``data(count:offset:)`` notices. `/bytes/{n}`, `/huge`, `/drip`, `/stall`,
/// `/truncated`, `/truncated-chunked` and `/reset` all serve prefixes of this same pattern, so the same `n`
/// always yields the same bytes.
///
/// ```swift
/// let expected = DeterministicBytes.data(count: 1000)   // what GET /bytes/1000 returns
/// ```
public enum DeterministicBytes {
    /// The period of the pattern.
    public static let period = 251

    /// The byte at `offset` in every generated body.
    public static func byte(at offset: Int) -> UInt8 {
        UInt8(truncatingIfNeeded: offset % period)
    }

    /// `count` bytes of the pattern starting at `offset`.
    public static func data(count: Int, offset: Int = 0) -> Data {
        var data = Data(count: max(0, count))
        data.withUnsafeMutableBytes { raw in
            var value = offset % period
            for index in raw.indices {
                raw[index] = UInt8(truncatingIfNeeded: value)
                value += 1
                if value == period { value = 0 }
            }
        }
        return data
    }

    /// The largest slice ``slice(offset:length:)`` hands out.
    static let maximumSliceLength = 64 * 1024

    /// One period-aligned copy of the pattern long enough to cut any slice from, shared by every server.
    private static let table: ByteBuffer = ByteBuffer(bytes: data(count: maximumSliceLength + period))

    /// `length` (at most 64 KiB) bytes of the pattern starting at `offset`, without copying: the slice shares
    /// storage with one static table, so streaming gigabytes allocates nothing per chunk.
    static func slice(offset: Int, length: Int) -> ByteBuffer {
        precondition(length >= 0 && length <= maximumSliceLength, "slice length out of range")
        return table.getSlice(at: offset % period, length: length)!
    }
}
