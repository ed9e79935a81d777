/// Where an image's metadata payloads lie, noted by the format parsers during the walk they make anyway.
///
/// A parser given a collecting instance appends the byte range of each payload it passes; one that is not
/// collecting (``ImageValidator/readsMarks`` false) pays one branch per metadata segment and nothing else. The ranges
/// are offsets into the body being validated, read by ``MarkReader`` before `validate` returns (the bytes are only
/// valid during the call). An empty array allocates nothing, so an image without metadata costs nothing here.
struct MarkPayloads {
    /// What a range holds.
    enum Kind: Equatable {
        /// A main XMP packet (UTF-8 RDF/XML).
        case xmp(Container)
        /// A JPEG APP1 extended-XMP segment after its signature: GUID, full length, offset, chunk.
        case extendedXMP
        /// An XMP packet in a PNG `iTXt` chunk whose compression flag is set: noted, not read (no zlib here).
        case compressedXMP
        /// A PNG `iTXt` chunk with the XMP keyword whose header is cut short: noted.
        case malformedITXt
        /// A GIF `XMP DataXMP` application extension's data: the packet and the 258-byte magic trailer.
        case gifXMP
        /// A GIF `C2PA_GIF` application extension's data sub-blocks (size byte, data, …, terminator): a JUMBF store.
        case gifC2PA
        /// A JPEG APP11 segment after its marker length: `JP`, box instance, sequence number, box data.
        case app11
        /// A whole JUMBF manifest store (PNG `caBX`, WebP `C2PA`).
        case manifestStore(Container)
    }

    /// The container a payload came in, for notes.
    enum Container: String, Equatable {
        case jpegAPP1 = "JPEG APP1"
        case jpegAPP11 = "JPEG APP11"
        case pngITXt = "PNG iTXt"
        case pngCaBX = "PNG caBX"
        case webpXMP = "WebP XMP chunk"
        case webpC2PA = "WebP C2PA chunk"
        case gifApplication = "GIF application extension"
    }

    struct Payload {
        var kind: Kind
        var range: Range<Int>
    }

    /// The most payloads kept from one image. A body of a few megabytes could hold hundreds of thousands of tiny
    /// metadata segments; no writer makes more than a few dozen (a C2PA store of 16 MiB in APP11 takes 257), so past
    /// this the rest are counted, not kept, and the reader notes it.
    static let maxPayloads = 8_192

    /// Whether the parsers should note payloads at all.
    let isCollecting: Bool
    private(set) var payloads: [Payload] = []
    /// Payloads seen past ``maxPayloads``.
    private(set) var dropped = 0

    init(collecting: Bool) {
        isCollecting = collecting
    }

    /// Notes a payload, when collecting.
    @inline(__always)
    mutating func add(_ kind: Kind, _ range: Range<Int>) {
        guard isCollecting else { return }
        guard payloads.count < Self.maxPayloads else {
            dropped += 1
            return
        }
        payloads.append(Payload(kind: kind, range: range))
    }
}
