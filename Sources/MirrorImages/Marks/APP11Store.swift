/// Reassembles JUMBF boxes from JPEG APP11 segments (ISO/IEC 19566-5 over JPEG XT, ISO/IEC 18477-3) and reads the
/// C2PA manifest store among them.
///
/// Each segment is `JP` (the common identifier), a 2-byte box instance number (En), a 4-byte sequence number (Z,
/// from 1), then box data. The segments of one instance, in sequence order, carry one superbox; every segment after
/// the first repeats the superbox's `LBox`/`TBox` (8 bytes, or 16 with `XLBox`), which is skipped. Seen in
/// c2pa-python 0.38's output (c2pa-rs): instance `0x0211`, 64,000 bytes of box data a segment, and the continuations
/// starting with the same 8 header bytes as the first. Segments of an instance may come in any order in the file
/// (the sequence number orders them); a duplicated or missing sequence number, or a continuation whose repeated
/// header differs, refuses that instance.
///
/// Bounds: ``C2PAReader/maxStoreLength`` (16 MiB), and ``maxSegments`` (4,096 per instance), which stops a store of
/// tiny segments before it is sorted (16 MiB takes at least 257 full ones). A store in one segment is read where it
/// lies; a longer one is copied once, after its length is known to be within the bound.
enum APP11Store {
    static let maxSegments = 4_096
    /// `JP`, En, Z.
    static let segmentHeaderLength = 8

    private struct Segment {
        var sequence: UInt32
        var data: Range<Int>
    }

    /// Reads the segments (each the range after the marker's length field, starting `JP`) into `collector`.
    static func read(_ bytes: ByteView, segments ranges: [Range<Int>], into collector: inout MarkCollector) {
        var instances: [UInt16] = []
        var segments: [UInt16: [Segment]] = [:]
        for range in ranges {
            guard range.count >= segmentHeaderLength, let instance = bytes.u16be(range.lowerBound + 2),
                  let sequence = bytes.u32be(range.lowerBound + 4)
            else {
                collector.sawMarks = true
                collector.note("JUMBF in JPEG APP11: a segment too short for its header; not read")
                continue
            }
            if segments[instance] == nil { instances.append(instance) }
            segments[instance, default: []].append(
                Segment(sequence: sequence, data: range.lowerBound + segmentHeaderLength..<range.upperBound))
        }
        for instance in instances {
            readInstance(bytes, segments[instance] ?? [], into: &collector)
        }
    }

    private static func readInstance(_ bytes: ByteView, _ unsorted: [Segment], into collector: inout MarkCollector) {
        let what = "JUMBF in JPEG APP11"
        func refuse(_ why: String) {
            collector.sawMarks = true
            collector.note("\(what): \(why); not read")
        }
        guard unsorted.count <= maxSegments else { return refuse("more than \(maxSegments) segments") }
        let segments = unsorted.sorted { $0.sequence < $1.sequence }
        for (index, segment) in segments.enumerated() where segment.sequence != UInt32(index + 1) {
            if index > 0, segments[index - 1].sequence == segment.sequence {
                return refuse("sequence number \(segment.sequence) repeated")
            }
            return refuse("sequence number \(index + 1) missing")
        }
        guard let first = segments.first, let length32 = bytes.u32be(first.data.lowerBound), first.data.count >= 8 else {
            return refuse("the first segment is too short for a box header")
        }
        let headerLength = length32 == 1 ? 16 : 8
        guard first.data.count >= headerLength else { return refuse("the first segment is too short for a box header") }

        var total = first.data.count
        for segment in segments.dropFirst() {
            guard segment.data.count >= headerLength,
                  bytes.bytesEqual(first.data.lowerBound, segment.data.lowerBound, count: headerLength)
            else {
                return refuse("a continuation segment does not repeat the box header")
            }
            total += segment.data.count - headerLength
            guard total <= C2PAReader.maxStoreLength else {
                return refuse("over the \(C2PAReader.maxStoreLength)-byte bound")
            }
        }

        if segments.count == 1 {
            let store = ByteView(UnsafeRawBufferPointer(rebasing: bytes.buffer[first.data]))
            C2PAReader.read(store, container: "JPEG APP11", otherJUMBFIsExpected: true, into: &collector)
            return
        }
        var store: [UInt8] = []
        store.reserveCapacity(total)
        store.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes.buffer[first.data]))
        for segment in segments.dropFirst() {
            let data = segment.data.lowerBound + headerLength..<segment.data.upperBound
            store.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes.buffer[data]))
        }
        store.withUnsafeBytes { buffer in
            C2PAReader.read(ByteView(buffer), container: "JPEG APP11", otherJUMBFIsExpected: true, into: &collector)
        }
    }
}
