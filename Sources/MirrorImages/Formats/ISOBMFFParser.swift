/// Reads the primary image size of an AVIF or HEIF file and checks that the file is whole.
///
/// ISO base media files are trees of boxes (`size`, `type`, payload; a 32-bit size of 1 means a 64-bit
/// size follows, 0 means "to the end of the enclosing box"). The walk is iterative with a fixed depth —
/// `meta` › `iprp` › `ipco`/`ipma` — and every box is bounds-checked against its parent, so nothing in
/// the input controls recursion or loop counts beyond the number of boxes that fit.
///
/// - Size: the `ispe` property associated (through `ipma`) with the primary item named by `pitm`; if
///   either box is missing, the first `ispe` in `ipco`. Reported before `irot`/`clap` transforms, which
///   matters for HEIC: its grid tiles are padded (a 48×80 image may have 64×80 tiles), which is why the
///   primary item's property is used rather than the first `ispe` found.
/// - Completeness: the top-level boxes must walk exactly to the end of the body, and every `iloc` extent
///   stored in the file itself (construction method 0, data reference 0) must end inside it, which catches
///   a body cut cleanly between `meta` and `mdat`.
enum ISOBMFFParser {
    private static let ftyp = fourCC("ftyp")
    private static let meta = fourCC("meta")
    private static let pitm = fourCC("pitm")
    private static let iloc = fourCC("iloc")
    private static let iprp = fourCC("iprp")
    private static let ipco = fourCC("ipco")
    private static let ipma = fourCC("ipma")
    private static let ispe = fourCC("ispe")

    /// Brands whose presence as the major brand marks an image sequence rather than a still image.
    private static let sequenceBrands: [UInt32] = [fourCC("avis"), fourCC("msf1"), fourCC("hevc"), fourCC("hevx")]

    /// A box's type and byte ranges: `start` (the size field), `payload` (after the header) and `end`.
    private struct Box {
        var type: UInt32
        var start: Int
        var payload: Int
        var end: Int
    }

    /// Why a box header could not be read: the parent ended, or the header is invalid.
    private enum BoxProblem: Error {
        case cutOff(needed: Int, available: Int)
        case invalid(String)
    }

    // MARK: - Entry point

    static func parse(_ bytes: ByteView, format: ImageFormat, pixelLimit: Int) throws(ImageRejection) -> ImageInfo {
        // 1. Top level: boxes must walk exactly to the end.
        var metaBox: Box?
        var majorBrand: UInt32 = 0
        var topLevelBoxes = 0
        var offset = 0
        while offset < bytes.count {
            let box: Box
            switch readBox(bytes, at: offset, parentEnd: bytes.count) {
            case .success(let found): box = found
            case .failure(.cutOff(let needed, let available)):
                throw .truncated(format, "box \(bytes.fourCCText(at: offset + 4)) at offset \(offset) needs \(needed) bytes, \(available) left")
            case .failure(.invalid(let detail)):
                throw .malformed(format, detail)
            }
            if offset == 0 {
                guard box.type == ftyp else { throw .malformed(format, "first box is not ftyp") }
                majorBrand = bytes.u32be(box.payload) ?? 0
            }
            if box.type == meta, metaBox == nil { metaBox = box }
            topLevelBoxes += 1
            offset = box.end
        }
        guard let metaBox else {
            // ftyp alone is no image: the body stopped at the first box boundary.
            if topLevelBoxes == 1 { throw .truncated(format, "ends after the ftyp box") }
            throw .malformed(format, "no meta box (image sequences without a still image are not supported)")
        }

        // 2. meta (a FullBox) › pitm, iloc, iprp › ipco, ipma.
        var primaryItem: UInt32?
        var ilocBox: Box?
        var ipcoBox: Box?
        var ipmaBox: Box?
        try forEachChild(of: metaBox, contentStart: metaBox.payload + 4, bytes, format) { (child) throws(ImageRejection) in
            switch child.type {
            case pitm:
                let version = bytes.u8(child.payload) ?? 0
                primaryItem = version == 0
                    ? bytes.u16be(child.payload + 4).map(UInt32.init)
                    : bytes.u32be(child.payload + 4)
            case iloc:
                ilocBox = child
            case iprp:
                try forEachChild(of: child, contentStart: child.payload, bytes, format) { (property) throws(ImageRejection) in
                    if property.type == ipco, ipcoBox == nil { ipcoBox = property }
                    if property.type == ipma, ipmaBox == nil { ipmaBox = property }
                }
            default:
                break
            }
        }

        // 3. The primary item's ispe.
        guard let ipcoBox else { throw .malformed(format, "no ipco (item properties) box") }
        var wanted: [Int]?  // sorted property indices (1-based) associated with the primary item
        if let primaryItem, let ipmaBox {
            wanted = try associations(of: primaryItem, in: ipmaBox, bytes, format).sorted()
        }
        guard let extent = try spatialExtent(in: ipcoBox, matching: wanted, bytes, format) else {
            throw .malformed(format, wanted == nil ? "no ispe property" : "primary item has no ispe property")
        }
        let width = Int(extent.width)
        let height = Int(extent.height)
        try checkDimensions(format, width: width, height: height, limit: pixelLimit)

        // 4. Every item extent stored in this file must end inside it.
        if let ilocBox {
            try checkItemLocations(ilocBox, bytes, format)
        }
        return ImageInfo(format: format, width: width, height: height, frameCount: nil,
                         isAnimated: sequenceBrands.contains(majorBrand))
    }

    // MARK: - Boxes

    private static func readBox(_ bytes: ByteView, at offset: Int, parentEnd: Int) -> Result<Box, BoxProblem> {
        let available = parentEnd - offset
        guard available >= 8, let size32 = bytes.u32be(offset), let type = bytes.u32be(offset + 4) else {
            return .failure(.cutOff(needed: 8, available: max(available, 0)))
        }
        var header = 8
        var size: Int
        switch size32 {
        case 0:
            size = available
        case 1:
            guard available >= 16, let size64 = bytes.u64be(offset + 8) else {
                return .failure(.cutOff(needed: 16, available: available))
            }
            header = 16
            guard size64 <= UInt64(Int.max) else {
                return .failure(.invalid("box \(bytes.fourCCText(at: offset + 4)) declares \(size64) bytes"))
            }
            size = Int(size64)
        default:
            size = Int(size32)
        }
        guard size >= header else {
            return .failure(.invalid("box \(bytes.fourCCText(at: offset + 4)) at offset \(offset) has size \(size)"))
        }
        guard size <= available else {
            return .failure(.cutOff(needed: size, available: available))
        }
        return .success(Box(type: type, start: offset, payload: offset + header, end: offset + size))
    }

    /// Calls `body` for each child box between `contentStart` and the parent's end. A child that overruns
    /// its parent is malformed: the top-level walk has already shown the parent itself is whole.
    private static func forEachChild(
        of parent: Box, contentStart: Int, _ bytes: ByteView, _ format: ImageFormat,
        _ body: (Box) throws(ImageRejection) -> Void
    ) throws(ImageRejection) {
        var offset = contentStart
        while offset < parent.end {
            switch readBox(bytes, at: offset, parentEnd: parent.end) {
            case .success(let child):
                try body(child)
                offset = child.end
            case .failure(.cutOff):
                throw .malformed(format, "box \(bytes.fourCCText(at: offset + 4)) overruns its parent \(bytes.fourCCText(at: parent.start + 4))")
            case .failure(.invalid(let detail)):
                throw .malformed(format, detail)
            }
        }
    }

    // MARK: - Properties

    /// The property indices (1-based, essential bit cleared) that `ipma` associates with `item`.
    private static func associations(
        of item: UInt32, in box: Box, _ bytes: ByteView, _ format: ImageFormat
    ) throws(ImageRejection) -> [Int] {
        guard let version = bytes.u8(box.payload), let flags = bytes.u8(box.payload + 3),
              let entryCount = bytes.u32be(box.payload + 4)
        else {
            throw .malformed(format, "ipma box too short")
        }
        let wideIndices = flags & 0x01 != 0
        var offset = box.payload + 8
        // Each entry takes at least 3 bytes, so the loop ends when the box does, whatever entryCount says.
        for _ in 0..<entryCount {
            let itemID: UInt32?
            if version < 1 {
                itemID = bytes.u16be(offset).map(UInt32.init)
                offset += 2
            } else {
                itemID = bytes.u32be(offset)
                offset += 4
            }
            guard let itemID, offset < box.end, let count = bytes.u8(offset) else {
                throw .malformed(format, "ipma entry overruns its box")
            }
            offset += 1
            let entryLength = Int(count) * (wideIndices ? 2 : 1)
            guard entryLength <= box.end - offset else { throw .malformed(format, "ipma entry overruns its box") }
            if itemID == item {
                var indices: [Int] = []
                indices.reserveCapacity(Int(count))
                for index in 0..<Int(count) {
                    if wideIndices {
                        indices.append(Int((bytes.u16be(offset + 2 * index) ?? 0) & 0x7FFF))
                    } else {
                        indices.append(Int((bytes.u8(offset + index) ?? 0) & 0x7F))
                    }
                }
                return indices
            }
            offset += entryLength
        }
        return []
    }

    /// The width and height of an `ispe` in `ipco`: the first one whose 1-based index is in `wanted`
    /// (sorted), or the first one at all when `wanted` is nil.
    private static func spatialExtent(
        in ipco: Box, matching wanted: [Int]?, _ bytes: ByteView, _ format: ImageFormat
    ) throws(ImageRejection) -> (width: UInt32, height: UInt32)? {
        var index = 0
        var cursor = 0  // into `wanted`, which is sorted, so the walk stays linear
        var offset = ipco.payload
        while offset < ipco.end {
            let child: Box
            switch readBox(bytes, at: offset, parentEnd: ipco.end) {
            case .success(let found): child = found
            case .failure(.cutOff): throw .malformed(format, "property box overruns ipco")
            case .failure(.invalid(let detail)): throw .malformed(format, detail)
            }
            index += 1
            offset = child.end

            var isWanted = true
            if let wanted {
                while cursor < wanted.count, wanted[cursor] < index { cursor += 1 }
                guard cursor < wanted.count else { return nil }  // every associated index is behind us
                isWanted = wanted[cursor] == index
            }
            if isWanted, child.type == ispe {
                // FullBox header (4 bytes), then image_width and image_height.
                guard child.end - child.payload >= 12,
                      let width = bytes.u32be(child.payload + 4), let height = bytes.u32be(child.payload + 8)
                else {
                    throw .malformed(format, "ispe box too short")
                }
                return (width: width, height: height)
            }
        }
        return nil
    }

    // MARK: - Item locations

    /// Checks that every `iloc` extent with construction method 0 and data reference 0 (bytes in this
    /// file, at absolute offsets) ends inside the body.
    private static func checkItemLocations(_ box: Box, _ bytes: ByteView, _ format: ImageFormat) throws(ImageRejection) {
        guard let version = bytes.u8(box.payload), version <= 2,
              let sizes = bytes.u8(box.payload + 4), let moreSizes = bytes.u8(box.payload + 5)
        else {
            throw .malformed(format, "iloc box too short or of unknown version")
        }
        let offsetSize = Int(sizes >> 4)
        let lengthSize = Int(sizes & 0x0F)
        let baseOffsetSize = Int(moreSizes >> 4)
        let indexSize = version >= 1 ? Int(moreSizes & 0x0F) : 0
        for size in [offsetSize, lengthSize, baseOffsetSize, indexSize] where size != 0 && size != 4 && size != 8 {
            throw .malformed(format, "iloc field size \(size) is not 0, 4 or 8")
        }

        var reader = FieldReader(bytes: bytes, offset: box.payload + 6, end: box.end)
        let itemCount: UInt64? = version < 2 ? reader.read(2) : reader.read(4)
        guard let itemCount else { throw .malformed(format, "iloc box too short") }
        let extentSize = indexSize + offsetSize + lengthSize
        let fileLength = UInt64(bytes.count)

        // Every item reads at least 4 bytes, so the loop ends with the box, whatever itemCount says.
        for _ in 0..<itemCount {
            guard let itemID = version < 2 ? reader.read(2) : reader.read(4) else {
                throw .malformed(format, "iloc item overruns its box")
            }
            var constructionMethod: UInt64 = 0
            if version >= 1 {
                guard let field = reader.read(2) else { throw .malformed(format, "iloc item overruns its box") }
                constructionMethod = field & 0x0F
            }
            guard let dataReference = reader.read(2), let baseOffset = reader.read(baseOffsetSize),
                  let extentCount = reader.read(2)
            else {
                throw .malformed(format, "iloc item overruns its box")
            }
            // Extents of zero-sized fields are (0, 0) — "the whole file" — and consume nothing: skip them,
            // or a hostile count would spin without progress.
            guard extentSize > 0 else { continue }
            let inFile = constructionMethod == 0 && dataReference == 0
            for _ in 0..<extentCount {
                _ = reader.read(indexSize)
                guard let extentOffset = reader.read(offsetSize), let extentLength = reader.read(lengthSize) else {
                    throw .malformed(format, "iloc extent overruns its box")
                }
                guard inFile else { continue }
                let (start, startOverflow) = baseOffset.addingReportingOverflow(extentOffset)
                let (end, endOverflow) = start.addingReportingOverflow(extentLength)
                guard !startOverflow, !endOverflow else {
                    throw .malformed(format, "iloc extent of item \(itemID) overflows")
                }
                guard end <= fileLength else {
                    throw .truncated(format, "item \(itemID) data ends at byte \(end), have \(bytes.count)")
                }
            }
        }
    }

    /// Reads big-endian unsigned fields of 0, 2, 4 or 8 bytes in sequence, within `end`.
    private struct FieldReader {
        let bytes: ByteView
        var offset: Int
        let end: Int

        /// The next `size`-byte field (0 for a zero-sized field), or nil if it would pass `end`.
        mutating func read(_ size: Int) -> UInt64? {
            guard size <= end - offset else { return nil }
            let value: UInt64?
            switch size {
            case 0: value = 0
            case 2: value = bytes.u16be(offset).map(UInt64.init)
            case 4: value = bytes.u32be(offset).map(UInt64.init)
            case 8: value = bytes.u64be(offset)
            default: value = nil
            }
            offset += size
            return value
        }
    }
}
