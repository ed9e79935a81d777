import Foundation
import MirrorImages
import Testing

/// One image of `Samples/Consent`, as its `samples.json` describes it: what the real writers (exiftool 12.57,
/// c2pa-python 0.38.1) were asked to put in it.
struct ConsentSample: Decodable, Sendable, CustomTestStringConvertible {
    struct Entry: Decodable, Sendable {
        var label: String
        var entry: String
        var use: String
        var constraintInfo: String?

        enum CodingKeys: String, CodingKey {
            case label, entry, use
            case constraintInfo = "constraint_info"
        }
    }

    var file: String
    var format: String
    var writer: String?
    var width: Int
    var height: Int
    var dataMining: String?
    var digitalSourceType: String?
    var c2pa: Bool
    var trainingMining: [Entry]
    var extendedXMP: Bool
    var note: String?

    enum CodingKeys: String, CodingKey {
        case file, format, writer, width, height, c2pa, note
        case dataMining = "data_mining"
        case digitalSourceType = "digital_source_type"
        case trainingMining = "training_mining"
        case extendedXMP = "extended_xmp"
    }

    var testDescription: String { file }

    /// Files whose `plus:DataMining` exiftool moved into the extended XMP (samples.json's note for each says so).
    static let dataMiningInExtendedXMP: Set<String> = ["xmp-extended-dmi-in-extension.jpg"]

    /// Whether exiftool wrote XMP into the file.
    var hasXMP: Bool { writer?.contains("exiftool") ?? false }

    /// What `validate` with `readsMarks` must report: nil for a file without XMP or C2PA; otherwise the values
    /// samples.json names, each where its writer put it, and no note.
    var expectedMarks: ImageMarks? {
        guard hasXMP || c2pa else { return nil }
        var marks = ImageMarks(hasC2PAManifest: c2pa)
        if let dataMining {
            let origin = Self.dataMiningInExtendedXMP.contains(file) ? "extended XMP" : "XMP"
            marks.dataMining = [ImageMarks.Mark(value: dataMining, location: "\(origin) plus:DataMining")]
        }
        if let digitalSourceType {
            // c2pa-rs stores every manifest's actions as c2pa.actions.v2 (the samples' README); exiftool's files
            // carry the type in XMP.
            marks.digitalSourceTypes = [
                c2pa
                    ? ImageMarks.SourceType(value: digitalSourceType, source: .c2pa,
                                            location: "C2PA c2pa.actions.v2 c2pa.created")
                    : ImageMarks.SourceType(value: digitalSourceType, source: .xmp,
                                            location: "XMP Iptc4xmpExt:DigitalSourceType"),
            ]
        }
        marks.trainingMining = trainingMining.map {
            ImageMarks.TrainingMiningEntry(label: $0.label, entry: $0.entry, use: $0.use, constraintInfo: $0.constraintInfo)
        }
        return marks
    }

    /// The file's bytes from the test bundle.
    func data() throws -> Data {
        try Data(contentsOf: Self.directory.appendingPathComponent(file))
    }

    static var directory: URL {
        get throws { try Sample.directory.appendingPathComponent("Consent") }
    }

    /// Every sample samples.json lists.
    static func all() throws -> [ConsentSample] {
        let json = try Data(contentsOf: directory.appendingPathComponent("samples.json"))
        return try JSONDecoder().decode([ConsentSample].self, from: json)
    }

    static func named(_ file: String) throws -> ConsentSample {
        try #require(try all().first { $0.file == file })
    }
}

/// The marks `validate` reads from `data`, failing the test if the image itself is refused.
func marks(of data: Data) throws -> ImageMarks? {
    try ImageValidator(readsMarks: true).validate(data).marks
}

extension ImageMarks {
    /// The same marks with training-mining entries in a fixed order: a CBOR map's order is the writer's, not a fact.
    var normalized: ImageMarks {
        var copy = self
        copy.trainingMining.sort { ($0.label, $0.entry) < ($1.label, $1.entry) }
        return copy
    }

    /// Whether any value read says "reserved" — what a malformed mark must never produce by accident.
    var hasAnyValue: Bool {
        !dataMining.isEmpty || !digitalSourceTypes.isEmpty || !trainingMining.isEmpty
    }
}

/// A JPEG's marker segments before its first scan: each segment's marker and its byte range (from the `FF`).
struct JPEGSegments {
    struct Segment {
        var marker: UInt8
        var range: Range<Int>
        /// The segment's data, after the marker and the 2-byte length.
        var data: Range<Int> { range.lowerBound + 4..<range.upperBound }
    }

    var segments: [Segment] = []

    init(_ data: Data) throws {
        var offset = 2
        while offset + 4 <= data.count, data[offset] == 0xFF {
            let marker = data[offset + 1]
            if marker == 0xDA { break }
            let length = data.u16be(offset + 2)
            segments.append(Segment(marker: marker, range: offset..<offset + 2 + length))
            offset += 2 + length
        }
        try #require(!segments.isEmpty)
    }

    func all(_ marker: UInt8) -> [Segment] { segments.filter { $0.marker == marker } }
}

/// The four bytes of `value`, big-endian.
func bigEndian(_ value: UInt32) -> [UInt8] {
    [UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)]
}

/// JUMBF boxes built by hand: `box("jumb", …)`, a description with a label, a `cbor` box.
enum JUMBFBytes {
    static func box(_ type: String, _ content: [UInt8]) -> [UInt8] {
        let length = UInt32(content.count + 8)
        return bigEndian(length) + Array(type.utf8) + content
    }

    /// A `jumd` with a 16-byte type UUID starting `uuid`'s four characters and the label (toggles `0x03`).
    static func description(_ uuid: String, label: String) -> [UInt8] {
        let type = Array(uuid.utf8) + [0x00, 0x11, 0x00, 0x10, 0x80, 0x00, 0x00, 0xAA, 0x00, 0x38, 0x9B, 0x71]
        return box("jumd", type + [0x03] + Array(label.utf8) + [0])
    }

    static func superbox(_ uuid: String, label: String, _ children: [[UInt8]]) -> [UInt8] {
        box("jumb", description(uuid, label: label) + children.flatMap { $0 })
    }

    /// A whole store: `c2pa` → one manifest → `c2pa.assertions` → each (label, CBOR) assertion.
    static func store(assertions: [(String, [UInt8])]) -> [UInt8] {
        let boxes = assertions.map { superbox("cbor", label: $0.0, [box("cbor", $0.1)]) }
        let assertionStore = superbox("c2as", label: "c2pa.assertions", boxes)
        let manifest = superbox("c2ma", label: "urn:c2pa:00000000-0000-0000-0000-000000000000", [assertionStore])
        return superbox("c2pa", label: "c2pa", [manifest])
    }
}

extension Data {
    /// The big-endian UInt32 at `offset` (relative to the start).
    func u32be(_ offset: Int) -> UInt32 {
        (0..<4).reduce(UInt32(0)) { $0 << 8 | UInt32(self[startIndex + offset + $1]) }
    }

    /// A PNG with the data of its first chunk of `type` replaced by `content` (the length rewritten; CRCs are not
    /// checked by the validator).
    func pngReplacingChunk(_ type: String, with content: [UInt8]) throws -> Data {
        var offset = 8
        while offset + 8 <= count {
            let length = Int(self[offset]) << 24 | Int(self[offset + 1]) << 16 | Int(self[offset + 2]) << 8
                | Int(self[offset + 3])
            if self[offset + 4..<offset + 8].elementsEqual(type.utf8) {
                let header = bigEndian(UInt32(content.count)) + Array(type.utf8)
                return self[..<offset] + Data(header + content + [0, 0, 0, 0]) + self[(offset + 12 + length)...]
            }
            offset += 12 + length
        }
        Issue.record("no \(type) chunk")
        throw CancellationError()
    }

    /// A JPEG with `segment` (marker and data) inserted right after SOI.
    func jpegInserting(marker: UInt8, data: [UInt8]) -> Data {
        let length = UInt16(data.count + 2)
        return self[..<2] + Data([0xFF, marker, UInt8(length >> 8), UInt8(length & 0xFF)] + data) + self[2...]
    }

    /// A copy with `range` replaced by `bytes`.
    func replacing(_ range: Range<Int>, with bytes: [UInt8]) -> Data {
        var copy = Data(self)
        copy.replaceSubrange(range, with: bytes)
        return copy
    }
}
