/// Reads a TIFF's first IFD and checks that everything the IFD chain points at lies inside the file.
///
/// Both byte orders (`II` little-endian, `MM` big-endian) are read. The first IFD supplies `ImageWidth`
/// (256) and `ImageLength` (257), as SHORT or LONG. Completeness is checked for every IFD in the chain
/// (at most ``maximumIFDCount``, which also stops cycles): the IFD itself, every out-of-line tag value, and
/// every strip or tile — `StripOffsets`/`StripByteCounts` (273/279) or `TileOffsets`/`TileByteCounts`
/// (324/325) — must end within the body. Classic TIFF only; BigTIFF (`II+`) is not recognised.
///
/// Work is bounded by the body's size: a legitimate file stores every IFD entry and every strip or tile
/// table entry once, in at least 2 bytes, so the walk gives up as malformed once it has examined more
/// entries than the body has bytes — which stops IFD chains that share one huge table from multiplying
/// the work.
enum TIFFParser {
    /// IFDs followed before a chain is judged cyclic or hostile.
    static let maximumIFDCount = 256

    /// A tag entry's type, count and the offset of its 4-byte value field.
    private struct Entry {
        var type: UInt16
        var count: Int
        var valueField: Int
    }

    static func parse(_ bytes: ByteView, pixelLimit: Int) throws(ImageRejection) -> ImageInfo {
        let bigEndian = bytes.u8(0) == 0x4D  // "MM"
        guard let firstIFD = bytes.u32(4, bigEndian: bigEndian) else {
            throw .truncated(.tiff, "header cut off")
        }
        var width = 0
        var height = 0
        var ifdCount = 0
        var ifdOffset = Int(firstIFD)
        var budget = bytes.count + 1024  // entries we may still examine; see the type's documentation

        while ifdOffset != 0 {
            guard ifdCount < maximumIFDCount else {
                throw .malformed(.tiff, "more than \(maximumIFDCount) IFDs (a cycle?)")
            }
            guard ifdOffset >= 8 else { throw .malformed(.tiff, "IFD offset \(ifdOffset) overlaps the header") }
            guard let entryCount16 = bytes.u16(ifdOffset, bigEndian: bigEndian) else {
                throw .truncated(.tiff, "IFD at offset \(ifdOffset) lies past the end (\(bytes.count) bytes)")
            }
            let entryCount = Int(entryCount16)
            let entriesStart = ifdOffset + 2
            guard bytes.contains(entryCount * 12 + 4, at: entriesStart) else {
                throw .truncated(.tiff, "IFD at offset \(ifdOffset) cut off")
            }
            try spend(entryCount, from: &budget)

            var stripOffsets: Entry?
            var stripByteCounts: Entry?
            var tileOffsets: Entry?
            var tileByteCounts: Entry?
            for index in 0..<entryCount {
                let position = entriesStart + index * 12
                let tag = bytes.u16(position, bigEndian: bigEndian) ?? 0
                let type = bytes.u16(position + 2, bigEndian: bigEndian) ?? 0
                let count = Int(bytes.u32(position + 4, bigEndian: bigEndian) ?? 0)
                let entry = Entry(type: type, count: count, valueField: position + 8)
                try checkValueFits(bytes, entry, tag: tag, bigEndian: bigEndian)

                switch tag {
                case 256 where ifdCount == 0: width = try scalar(bytes, entry, tag: tag, bigEndian: bigEndian)
                case 257 where ifdCount == 0: height = try scalar(bytes, entry, tag: tag, bigEndian: bigEndian)
                case 273: stripOffsets = entry
                case 279: stripByteCounts = entry
                case 324: tileOffsets = entry
                case 325: tileByteCounts = entry
                default: break
                }
            }

            if ifdCount == 0 {
                try checkDimensions(.tiff, width: width, height: height, limit: pixelLimit)
            }
            if let offsets = stripOffsets {
                guard let counts = stripByteCounts else { throw .malformed(.tiff, "StripOffsets without StripByteCounts") }
                try spend(offsets.count, from: &budget)
                try checkSegments(bytes, offsets: offsets, counts: counts, kind: "strip", bigEndian: bigEndian)
            } else if let offsets = tileOffsets {
                guard let counts = tileByteCounts else { throw .malformed(.tiff, "TileOffsets without TileByteCounts") }
                try spend(offsets.count, from: &budget)
                try checkSegments(bytes, offsets: offsets, counts: counts, kind: "tile", bigEndian: bigEndian)
            } else if ifdCount == 0 {
                throw .malformed(.tiff, "first IFD has no strip or tile offsets")
            }

            ifdCount += 1
            let nextField = entriesStart + entryCount * 12
            ifdOffset = Int(bytes.u32(nextField, bigEndian: bigEndian) ?? 0)  // in bounds: checked above
        }

        guard ifdCount > 0 else { throw .malformed(.tiff, "no IFD") }
        return ImageInfo(format: .tiff, width: width, height: height, frameCount: ifdCount)
    }

    private static func spend(_ entries: Int, from budget: inout Int) throws(ImageRejection) {
        budget -= entries
        guard budget >= 0 else { throw .malformed(.tiff, "IFDs reference more entries than the file can hold") }
    }

    /// Bytes per value of each TIFF 6.0 field type; 0 for unknown types, which readers must skip.
    private static func size(ofType type: UInt16) -> Int {
        switch type {
        case 1, 2, 6, 7: 1  // BYTE, ASCII, SBYTE, UNDEFINED
        case 3, 8: 2  // SHORT, SSHORT
        case 4, 9, 11, 13: 4  // LONG, SLONG, FLOAT, IFD
        case 5, 10, 12: 8  // RATIONAL, SRATIONAL, DOUBLE
        default: 0
        }
    }

    /// Values longer than 4 bytes live at an offset; that range must lie inside the file.
    private static func checkValueFits(
        _ bytes: ByteView, _ entry: Entry, tag: UInt16, bigEndian: Bool
    ) throws(ImageRejection) {
        let length = entry.count * size(ofType: entry.type)  // count < 2^32, size ≤ 8: fits in a 64-bit Int
        guard length > 4 else { return }
        let offset = Int(bytes.u32(entry.valueField, bigEndian: bigEndian) ?? 0)
        guard bytes.contains(length, at: offset) else {
            throw .truncated(.tiff, "tag \(tag) needs \(length) bytes at offset \(offset), have \(bytes.count) in all")
        }
    }

    /// The `index`th value of a SHORT or LONG entry, read inline or from its offset (already bounds-checked).
    private static func element(
        _ bytes: ByteView, _ entry: Entry, at index: Int, bigEndian: Bool
    ) -> Int? {
        let width = entry.type == 3 ? 2 : 4
        let base: Int
        if entry.count * width <= 4 {
            base = entry.valueField
        } else {
            guard let offset = bytes.u32(entry.valueField, bigEndian: bigEndian) else { return nil }
            base = Int(offset)
        }
        let position = base + index * width
        return width == 2
            ? bytes.u16(position, bigEndian: bigEndian).map(Int.init)
            : bytes.u32(position, bigEndian: bigEndian).map(Int.init)
    }

    private static func scalar(
        _ bytes: ByteView, _ entry: Entry, tag: UInt16, bigEndian: Bool
    ) throws(ImageRejection) -> Int {
        guard entry.type == 3 || entry.type == 4, entry.count >= 1,
              let value = element(bytes, entry, at: 0, bigEndian: bigEndian)
        else {
            throw .malformed(.tiff, "tag \(tag) is not a SHORT or LONG value")
        }
        return value
    }

    /// Every strip or tile (offset, byte count) pair must end inside the body.
    private static func checkSegments(
        _ bytes: ByteView, offsets: Entry, counts: Entry, kind: String, bigEndian: Bool
    ) throws(ImageRejection) {
        guard offsets.type == 3 || offsets.type == 4, counts.type == 3 || counts.type == 4 else {
            throw .malformed(.tiff, "\(kind) offsets or byte counts are not SHORT or LONG")
        }
        guard offsets.count == counts.count, offsets.count > 0 else {
            throw .malformed(.tiff, "\(offsets.count) \(kind) offsets but \(counts.count) byte counts")
        }
        // The arrays were bounds-checked by checkValueFits, so the loop is linear in the file's size.
        for index in 0..<offsets.count {
            guard let start = element(bytes, offsets, at: index, bigEndian: bigEndian),
                  let length = element(bytes, counts, at: index, bigEndian: bigEndian)
            else {
                throw .malformed(.tiff, "\(kind) table cut off")
            }
            guard bytes.contains(length, at: start) else {
                throw .truncated(.tiff, "\(kind) \(index) needs \(length) bytes at offset \(start), have \(bytes.count) in all")
            }
        }
    }
}
