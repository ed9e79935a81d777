/// Reassembles JPEG extended XMP (XMP Specification Part 3, 1.1.3.1) and reads it.
///
/// A main packet too big for one APP1 segment keeps its small properties and names, in `xmpNote:HasExtendedXMP`, the
/// GUID of the rest: a second serialisation split into APP1 segments that each start
/// `http://ns.adobe.com/xmp/extension/\0`, then the 32-character GUID, the full length (4 bytes, big-endian), this
/// chunk's offset in it (4 bytes), then the chunk. exiftool 12.57 splits at 65,458 bytes a chunk and writes the
/// extended packet as a bare `x:xmpmeta` (no `<?xpacket`); which properties move there is its choice (the largest).
///
/// Only the chunks of the GUID the main packet names are read (others are stale copies, which Adobe's own readers
/// ignore too); the GUID is not checked against the content's MD5. Bounds, each refusing the whole extended packet:
/// - ``maxLength`` (8 MiB): extended XMP carries Photoshop's document ancestors and large descriptions, usually
///   well under a megabyte; the assembled copy is the one allocation here and is made only after the chunks are
///   known to fill exactly the full length (so it is never larger than the bytes the file holds);
/// - ``maxChunks`` (256): a full length of 8 MiB takes 129 full chunks; more means chunks too small to be real;
/// - every chunk agrees on the full length, and the chunks sorted by offset tile it exactly: no gap, no overlap,
///   no duplicate, none past the end.
enum ExtendedXMP {
    static let maxLength = 8 << 20
    static let maxChunks = 256
    /// GUID, full length, offset: what a chunk holds before its data (after the 35-byte signature).
    static let chunkHeaderLength = 32 + 4 + 4

    private struct Chunk {
        var fullLength: UInt32
        var offset: UInt32
        var data: Range<Int>
    }

    /// Reads the chunks (each the range after the signature) that `guid` names into `collector`.
    static func read(_ bytes: ByteView, chunks ranges: [Range<Int>], guid: String?, into collector: inout MarkCollector) {
        let what = "extended XMP in JPEG APP1"
        guard let guid else {
            collector.note("\(what) without an xmpNote:HasExtendedXMP in the main packet; not read")
            return
        }
        let wanted = Array(guid.utf8)
        var chunks: [Chunk] = []
        for range in ranges {
            guard range.count >= chunkHeaderLength,
                  let fullLength = bytes.u32be(range.lowerBound + 32), let offset = bytes.u32be(range.lowerBound + 36)
            else {
                collector.note("\(what): a segment too short for its header; not read")
                return
            }
            guard wanted.count == 32, bytes.matchesIgnoringCase(wanted, at: range.lowerBound) else { continue }
            guard chunks.count < maxChunks else {
                collector.note("\(what) in more than \(maxChunks) chunks; not read")
                return
            }
            chunks.append(Chunk(fullLength: fullLength, offset: offset, data: range.lowerBound + chunkHeaderLength..<range.upperBound))
        }
        guard let first = chunks.first else {
            collector.note("\(what): no chunk of the GUID the main packet names; not read")
            return
        }
        let fullLength = first.fullLength
        guard chunks.allSatisfy({ $0.fullLength == fullLength }) else {
            collector.note("\(what): chunks disagree on the full length; not read")
            return
        }
        guard fullLength <= maxLength else {
            collector.note("\(what) of \(fullLength) bytes is over the \(maxLength)-byte bound; not read")
            return
        }
        chunks.sort { $0.offset < $1.offset }
        var covered = 0
        for chunk in chunks {
            guard Int(chunk.offset) == covered else {
                collector.note("\(what): chunks " + (Int(chunk.offset) < covered ? "overlap" : "leave a gap") + "; not read")
                return
            }
            covered += chunk.data.count
            guard covered <= Int(fullLength) else {
                collector.note("\(what): chunks run past the full length of \(fullLength); not read")
                return
            }
        }
        guard covered == Int(fullLength) else {
            collector.note("\(what): chunks hold \(covered) of \(fullLength) bytes; not read")
            return
        }

        var packet: [UInt8] = []
        packet.reserveCapacity(covered)
        for chunk in chunks {
            packet.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes.buffer[chunk.data]))
        }
        packet.withUnsafeBytes { buffer in
            let view = ByteView(buffer)
            XMPReader.read(view, in: 0..<view.count, origin: "extended XMP", container: "JPEG APP1",
                           wantsGUID: false, into: &collector)
        }
    }
}
