import Foundation

/// The boxes of an image to blur (`--blur-col`): `[[x0, y0, x1, y1], …]`, each corner a fraction of the image's width
/// and height (img2dataset's default `bbox_format`, "albumentations"), in the image's stored orientation.
///
/// A table's value is hostile, so it is read by a parser of its own with every bound fixed: the text is JSON — an array
/// of arrays of four numbers, nothing else — read in one pass with no recursion; at most ``maximumCount`` boxes (a
/// longer list is malformed: blurring some of a row's faces and saving the rest is worse than saving none); a number
/// of at most 64 characters, and every coordinate clamped to 0–1 (a box far outside the image cannot make the blur's
/// kernel larger than the image). An empty value, `null` and `[]` blur nothing.
///
/// ```swift
/// let boxes = try BlurBoxes(parsing: Array("[[0.1, 0.2, 0.3, 0.45]]".utf8))
/// boxes.boxes.count  // 1
/// ```
public struct BlurBoxes: Sendable, Hashable {
    /// The most boxes one image may have: 1,000 (DataComp's rows have a handful; each box costs a pass over its rows).
    public static let maximumCount = 1_000
    /// The longest number read, in characters.
    static let maximumNumberLength = 64

    /// One box, its corners as fractions of the image (clamped to 0–1).
    public struct Box: Sendable, Hashable {
        public var x0: Float, y0: Float, x1: Float, y1: Float

        public init(x0: Float, y0: Float, x1: Float, y1: Float) {
            (self.x0, self.y0, self.x1, self.y1) = (Self.clamped(x0), Self.clamped(y0), Self.clamped(x1), Self.clamped(y1))
        }

        private static func clamped(_ value: Float) -> Float { value.isNaN ? 0 : min(1, max(0, value)) }
    }

    /// Why a value is not a list of boxes, for the row's record (`bad-boxes`).
    public struct Malformed: Error, Sendable, Hashable, CustomStringConvertible {
        public var reason: String
        public var description: String { reason }
    }

    public var boxes: [Box]

    public init(_ boxes: [Box] = []) {
        self.boxes = boxes
    }

    /// Whether there is nothing to blur.
    public var isEmpty: Bool { boxes.isEmpty }

    /// Reads a value of the box column.
    /// - Throws: ``Malformed`` naming the first thing wrong and where.
    public init(parsing text: some Collection<UInt8>) throws(Malformed) {
        var parser = Parser(Array(text))
        boxes = try parser.parse()
    }

    /// A JSON array of arrays of four numbers, read byte by byte.
    private struct Parser {
        let bytes: [UInt8]
        var at = 0

        init(_ bytes: [UInt8]) {
            self.bytes = bytes
        }

        mutating func parse() throws(Malformed) -> [Box] {
            skipSpace()
            if at == bytes.count || literal("null") { return try end([]) }
            try expect(UInt8(ascii: "["), "a list of boxes, [[x0, y0, x1, y1], …]")
            var boxes: [Box] = []
            skipSpace()
            if peek == UInt8(ascii: "]") {
                at += 1
                return try end(boxes)
            }
            while true {
                guard boxes.count < BlurBoxes.maximumCount else {
                    throw Malformed(reason: "more than \(BlurBoxes.maximumCount) boxes to blur")
                }
                boxes.append(try box(boxes.count + 1))
                skipSpace()
                if peek == UInt8(ascii: "]") {
                    at += 1
                    return try end(boxes)
                }
                try expect(UInt8(ascii: ","), "a comma or ] after box \(boxes.count)")
            }
        }

        private mutating func box(_ number: Int) throws(Malformed) -> Box {
            skipSpace()
            try expect(UInt8(ascii: "["), "box \(number) as [x0, y0, x1, y1]")
            var values: [Float] = []
            while true {
                skipSpace()
                values.append(try self.number(box: number))
                skipSpace()
                if peek == UInt8(ascii: "]") {
                    at += 1
                    break
                }
                guard values.count < 4 else { throw Malformed(reason: "box \(number) has more than 4 numbers") }
                try expect(UInt8(ascii: ","), "a comma or ] in box \(number)")
            }
            guard values.count == 4 else { throw Malformed(reason: "box \(number) has \(values.count) numbers, not 4 (x0, y0, x1, y1)") }
            return Box(x0: values[0], y0: values[1], x1: values[2], y1: values[3])
        }

        /// A JSON number: `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`, at most ``BlurBoxes/maximumNumberLength``
        /// characters; its value as a Float (an exponent past Float's range is infinite, clamped with the box).
        private mutating func number(box: Int) throws(Malformed) -> Float {
            let start = at
            func digits() -> Int {
                let first = at
                while let byte = peek, byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") { at += 1 }
                return at - first
            }
            if peek == UInt8(ascii: "-") { at += 1 }
            guard digits() > 0 else { throw Malformed(reason: "box \(box) holds something that is not a number\(quoted(from: start))") }
            if peek == UInt8(ascii: ".") {
                at += 1
                guard digits() > 0 else { throw Malformed(reason: "box \(box) holds a number cut short\(quoted(from: start))") }
            }
            if peek == UInt8(ascii: "e") || peek == UInt8(ascii: "E") {
                at += 1
                if peek == UInt8(ascii: "+") || peek == UInt8(ascii: "-") { at += 1 }
                guard digits() > 0 else { throw Malformed(reason: "box \(box) holds a number cut short\(quoted(from: start))") }
            }
            guard at - start <= BlurBoxes.maximumNumberLength else {
                throw Malformed(reason: "box \(box) holds a number longer than \(BlurBoxes.maximumNumberLength) characters")
            }
            let text = String(decoding: bytes[start..<at], as: UTF8.self)
            guard let value = Double(text) else { throw Malformed(reason: "box \(box) holds \(text), which is not a number") }
            return Float(value)
        }

        private mutating func end(_ boxes: [Box]) throws(Malformed) -> [Box] {
            skipSpace()
            guard at == bytes.count else { throw Malformed(reason: "more than a list of boxes\(quoted(from: at))") }
            return boxes
        }

        private var peek: UInt8? { at < bytes.count ? bytes[at] : nil }

        private mutating func skipSpace() {
            while let byte = peek, byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D { at += 1 }
        }

        private mutating func literal(_ word: String) -> Bool {
            let word = Array(word.utf8)
            guard bytes.count - at >= word.count, bytes[at..<at + word.count].elementsEqual(word) else { return false }
            at += word.count
            return true
        }

        private mutating func expect(_ byte: UInt8, _ what: String) throws(Malformed) {
            guard peek == byte else { throw Malformed(reason: "expected \(what)\(quoted(from: at))") }
            at += 1
        }

        /// ` at "…"`: up to 24 characters from `offset`, or ` at the end`.
        private func quoted(from offset: Int) -> String {
            guard offset < bytes.count else { return " at the end" }
            let piece = String(decoding: bytes[offset..<min(bytes.count, offset + 24)], as: UTF8.self)
            return " at \"\(piece)\(bytes.count - offset > 24 ? "…" : "")\""
        }
    }
}
