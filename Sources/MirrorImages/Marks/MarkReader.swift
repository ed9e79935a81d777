/// Reads the payloads a format parser noted (``MarkPayloads``) into ``ImageMarks``, inside the validation call.
///
/// XMP first (the main packets in the order met, then the extended XMP their `xmpNote:HasExtendedXMP` names), then
/// C2PA (JPEG APP11 segments reassembled per box instance, PNG `caBX`, WebP `C2PA`, GIF `C2PA_GIF` sub-blocks
/// joined). Nothing here throws: what cannot be read is a note. The result is nil when the image has no XMP packet and no C2PA store at all.
enum MarkReader {
    /// The most main XMP packets read from one image: the formats allow one; a few writers leave a stale second one
    /// beside it. Past this, one note.
    static let maxMainPackets = 8

    static func read(_ payloads: MarkPayloads, in bytes: ByteView) -> ImageMarks? {
        guard !payloads.payloads.isEmpty else { return nil }
        var collector = MarkCollector()
        let hasExtendedXMP = payloads.payloads.contains { $0.kind == .extendedXMP }
        var guid: String?
        var mainPackets = 0

        for payload in payloads.payloads {
            switch payload.kind {
            case .xmp(let container):
                collector.sawMarks = true
                mainPackets += 1
                guard mainPackets <= maxMainPackets else { continue }
                let named = XMPReader.read(
                    bytes, in: payload.range, origin: "XMP", container: container.rawValue,
                    wantsGUID: hasExtendedXMP && guid == nil, into: &collector)
                if guid == nil { guid = named }
            case .gifXMP:
                collector.sawMarks = true
                mainPackets += 1
                guard mainPackets <= maxMainPackets else { continue }
                guard let packet = GIFXMP.packet(bytes, in: payload.range) else {
                    collector.note("XMP packet in GIF application extension lacks its 258-byte magic trailer; not read")
                    continue
                }
                XMPReader.read(
                    bytes, in: packet, origin: "XMP", container: MarkPayloads.Container.gifApplication.rawValue,
                    wantsGUID: false, into: &collector)
            case .compressedXMP:
                collector.sawMarks = true
                collector.note("XMP packet in PNG iTXt is compressed; not read (MirrorImages has no zlib)")
            case .malformedITXt:
                collector.sawMarks = true
                collector.note("XMP iTXt chunk in PNG has a header cut short; not read")
            case .extendedXMP, .app11, .manifestStore, .gifC2PA:
                break
            }
        }
        if mainPackets > maxMainPackets {
            collector.note("\(mainPackets) XMP packets; only the first \(maxMainPackets) read")
        }
        if hasExtendedXMP {
            collector.sawMarks = true
            let chunks = payloads.payloads.filter { $0.kind == .extendedXMP }.map(\.range)
            ExtendedXMP.read(bytes, chunks: chunks, guid: guid, into: &collector)
        }

        let segments = payloads.payloads.filter { $0.kind == .app11 }.map(\.range)
        if !segments.isEmpty {
            APP11Store.read(bytes, segments: segments, into: &collector)
        }
        for payload in payloads.payloads {
            guard case .manifestStore(let container) = payload.kind else { continue }
            guard payload.range.count <= C2PAReader.maxStoreLength else {
                collector.sawMarks = true
                collector.note("C2PA manifest store in \(container.rawValue) of \(payload.range.count) bytes is over the "
                    + "\(C2PAReader.maxStoreLength)-byte bound; not read")
                continue
            }
            let store = ByteView(UnsafeRawBufferPointer(rebasing: bytes.buffer[payload.range]))
            C2PAReader.read(store, container: container.rawValue, otherJUMBFIsExpected: false, into: &collector)
        }

        for payload in payloads.payloads where payload.kind == .gifC2PA {
            GIFC2PA.read(bytes, subBlocks: payload.range, into: &collector)
        }

        if payloads.dropped > 0 {
            collector.sawMarks = true
            collector.note("\(payloads.dropped) metadata payloads past the first \(MarkPayloads.maxPayloads) not read")
        }
        return collector.finished()
    }
}

/// ``ImageMarks`` under construction, with the bounds on what one image may add.
struct MarkCollector {
    /// The most notes kept: one per kind of trouble is what a person reads; past this, one line counts the rest.
    static let maxNotes = 16
    /// The most values kept of each kind: a real image has one or two (an XMP value, a C2PA one); a hostile one could
    /// otherwise repeat a property thousands of times in a megabyte.
    static let maxValues = 64
    /// The longest value kept, in UTF-8 bytes: the longest vocabulary URI is under 80; a value of kilobytes is not
    /// one of them.
    static let maxValueLength = 2_048
    /// The longest note, in characters: a note quotes labels from the input.
    static let maxNoteLength = 200

    var marks = ImageMarks()
    /// Whether an XMP packet or a C2PA store (or something that claims to be one) was met.
    var sawMarks = false
    private var droppedNotes = 0
    private var droppedValues = 0

    /// Adds one line, its control characters made `?` and its length bounded, or counts it past ``maxNotes``.
    mutating func note(_ line: String) {
        guard marks.notes.count < Self.maxNotes else {
            droppedNotes += 1
            return
        }
        var clean = String(line.unicodeScalars.prefix(Self.maxNoteLength).map {
            $0.properties.generalCategory == .control ? "?" : Character($0)
        })
        if line.unicodeScalars.count > Self.maxNoteLength { clean += "…" }
        marks.notes.append(clean)
    }

    mutating func addDataMining(_ mark: ImageMarks.Mark) {
        guard accepts(mark.value) else { return }
        keep(mark, in: \.dataMining)
    }

    mutating func addSourceType(_ type: ImageMarks.SourceType) {
        guard accepts(type.value) else { return }
        keep(type, in: \.digitalSourceTypes)
    }

    mutating func addTrainingMining(_ entry: ImageMarks.TrainingMiningEntry) {
        guard accepts(entry.entry), accepts(entry.use) else { return }
        var entry = entry
        if let info = entry.constraintInfo, info.utf8.count > Self.maxValueLength { entry.constraintInfo = nil }
        keep(entry, in: \.trainingMining)
    }

    /// Appends a value not already kept, up to ``maxValues`` of its kind (the rest are counted, for one note).
    private mutating func keep<Value: Equatable>(_ value: Value, in values: WritableKeyPath<ImageMarks, [Value]>) {
        guard !marks[keyPath: values].contains(value) else { return }
        guard marks[keyPath: values].count < Self.maxValues else {
            droppedValues += 1
            return
        }
        marks[keyPath: values].append(value)
    }

    /// Whether a value is worth keeping: not empty, not over ``maxValueLength`` (noted).
    private mutating func accepts(_ value: String) -> Bool {
        guard !value.isEmpty else { return false }
        guard value.utf8.count <= Self.maxValueLength else {
            note("a value of \(value.utf8.count) bytes is over the \(Self.maxValueLength)-byte bound; not kept")
            return false
        }
        return true
    }

    /// The marks, or nil when nothing was met.
    func finished() -> ImageMarks? {
        guard sawMarks else { return nil }
        var result = marks
        if droppedValues > 0 {
            result.notes.append("\(droppedValues) more values past \(Self.maxValues) of a kind not kept")
        }
        if droppedNotes > 0 {
            result.notes.append("\(droppedNotes) more notes not kept")
        }
        return result
    }
}

/// C2PA's GIF embedding (C2PA 2.1, "Embedding manifests into GIF"): an application extension identified `C2PA_GIF`
/// whose ordinary data sub-blocks carry the manifest store, joined here (one copy, after the sub-blocks are counted
/// within ``C2PAReader/maxStoreLength``). Seen in c2pa-python 0.38.1's output: the extension before the first
/// graphic control extension, authentication code `01 00 00`, 255-byte sub-blocks.
enum GIFC2PA {
    static func read(_ bytes: ByteView, subBlocks: Range<Int>, into collector: inout MarkCollector) {
        let container = MarkPayloads.Container.gifApplication.rawValue
        var total = 0
        var offset = subBlocks.lowerBound
        while offset < subBlocks.upperBound, let size = bytes.u8(offset), size > 0 {
            total += Int(size)
            offset += 1 + Int(size)
        }
        guard total <= C2PAReader.maxStoreLength else {
            collector.sawMarks = true
            collector.note("C2PA manifest store in \(container) of \(total) bytes is over the "
                + "\(C2PAReader.maxStoreLength)-byte bound; not read")
            return
        }
        var store: [UInt8] = []
        store.reserveCapacity(total)
        offset = subBlocks.lowerBound
        while offset < subBlocks.upperBound, let size = bytes.u8(offset), size > 0 {
            let data = offset + 1..<min(offset + 1 + Int(size), subBlocks.upperBound)
            store.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes.buffer[data]))
            offset += 1 + Int(size)
        }
        store.withUnsafeBytes { buffer in
            C2PAReader.read(ByteView(buffer), container: container, otherJUMBFIsExpected: false, into: &collector)
        }
    }
}

extension String {
    /// The string without leading and trailing XML whitespace (space, tab, CR, LF). Foundation's
    /// `trimmingCharacters(in:)` goes through NSString on Linux: it was a fifth of reading a small C2PA store.
    var trimmingXMLWhitespace: String {
        let utf8 = self.utf8
        let isSpace = { (byte: UInt8) in byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D }
        guard let first = utf8.firstIndex(where: { !isSpace($0) }), let last = utf8.lastIndex(where: { !isSpace($0) })
        else { return "" }
        if first == utf8.startIndex, last == utf8.index(before: utf8.endIndex) { return self }
        return String(self[first...last])
    }
}

/// GIF's XMP application extension (XMP Specification Part 3, 1.1.2): `21 FF 0B "XMP DataXMP"`, then the packet's
/// bytes raw — a UTF-8 packet has no NUL, so a decoder skipping sub-blocks by their "length" bytes hops through it —
/// then a 258-byte "magic trailer" (`01`, `FF FE … 01 00`, and the terminating `00`) that lands any such hop on the
/// terminator. Checked against exiftool 12.57's output.
enum GIFXMP {
    static let trailerLength = 258

    /// The packet's range within `data` (the extension's bytes after its 11-byte identifier, through its
    /// terminator), or nil when the trailer is not there.
    static func packet(_ bytes: ByteView, in data: Range<Int>) -> Range<Int>? {
        guard data.count >= trailerLength else { return nil }
        let trailer = data.upperBound - trailerLength
        guard bytes.u8(trailer) == 0x01, bytes.u8(data.upperBound - 1) == 0x00 else { return nil }
        for step in 0..<256 where bytes.u8(trailer + 1 + step) != UInt8(255 - step) {
            return nil
        }
        return data.lowerBound..<trailer
    }
}
