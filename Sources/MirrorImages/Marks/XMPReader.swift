import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif

/// Reads the properties ``ImageMarks`` holds from one XMP packet, with Foundation's `XMLParser` (libxml2 underneath).
///
/// Before any parse, in this order, each cheap and each a reason to note and stop:
/// 1. the packet is at most ``maxPacketLength`` bytes (1 MiB): Adobe's writers keep the main packet under JPEG's
///    64-KB segment and move the rest to extended XMP, so a megabyte is already sixteen times what they write;
/// 2. it is UTF-8: no NUL byte (every UTF-16 or UTF-32 `<` has one; trailing NUL padding is dropped first) and no
///    XML declaration naming another encoding, so that what the byte searches below see is what libxml2 parses;
/// 3. it mentions a property wanted: the bytes `DataMining`, `DigitalSourceType` (or `HasExtendedXMP` when the
///    image has extended XMP to find). XML names cannot be escaped (no character reference is allowed in a name), so
///    a packet without those bytes cannot hold those properties; a photo's ordinary XMP costs one search, no parse;
/// 4. it declares no DTD (`<!DOCTYPE`, `<!ENTITY`): entities are the one way a small packet expands (the billion
///    laughs), and XMP has no use for them — corelibs' `XMLParser` substitutes entities (`XML_PARSE_NOENT`), so it
///    is refused here, not left to libxml2's own limits;
/// 5. it is valid UTF-8 throughout: corelibs' `XMLParser` force-unwraps each element and attribute name decoded
///    without repair (`_NSXMLParserStartElementNs`; swift-corelibs-foundation issue 5534, open, in Swift 6.3.1), so
///    `<a\xFF>` traps the process — a flipped byte in the samples did, in this project's tests. Valid input gives
///    libxml2 whole characters only (a name cannot be a character reference, and no entity is declared);
/// 6. it has no processing instruction without data (`<?name?>`): libxml2 reports its data as NULL and corelibs'
///    `_NSXMLParserProcessingInstruction` takes the pointer as non-null and `strlen`s it — a segmentation fault that
///    `scripts/fuzz/fuzz marks` found (`Fuzz/Seeds/marks/`); `<?name ?>` gives empty data and is fine. XMP's own
///    `<?xpacket …?>` instructions always carry data;
/// 7. no tag has more than ``maxAttributesPerTag`` (1,024) attributes and namespace declarations: libxml2 2.9 checks
///    an element's attributes for duplicates pair by pair, so 100,000 on one element (a megabyte) took 2.2 s here;
///    with the bound, a megabyte of 1,024-attribute elements parses in 70 ms. Writers put a few hundred at most on
///    one element (exiftool's shorthand form, every simple property of every namespace on one `rdf:Description`).
/// During the parse the element depth is capped at ``maxDepth`` (64; XMP's deepest structures nest about ten), by
/// aborting. A parse that reports any error keeps nothing from the packet: corelibs' parser recovers and returns
/// true (swift-corelibs-foundation issue 5281), so its error callback and `parserError` are what tell.
///
/// Properties are matched by namespace URI and local name, never by prefix, in the three forms RDF/XML gives a
/// simple property of a top-level node (an element directly inside `rdf:RDF`, in XMP an `rdf:Description`): an
/// attribute of the node, a child element holding text, a child element with `rdf:resource`. corelibs reports
/// attributes by their written name (`p:DataMining`) and drops their namespace, so attribute prefixes are resolved
/// here from the prefix mappings it reports (`shouldReportNamespacePrefixes`). A property nested deeper belongs to
/// another resource (a licensor, a history entry) and is not the image's; a property whose value is structured (a
/// `rdf:Bag`, `rdf:parseType="Resource"`) is noted, not read.
enum XMPReader {
    static let maxPacketLength = 1 << 20
    static let maxDepth = 64
    static let maxAttributesPerTag = 1_024

    /// A property ``XMPReader`` looks for.
    struct Property: Equatable {
        var namespace: String
        var name: String
        /// The conventional prefixed name, for locations and notes (whatever prefix the packet used).
        var displayName: String

        static let dataMining = Property(
            namespace: "http://ns.useplus.org/ldf/xmp/1.0/", name: "DataMining", displayName: "plus:DataMining")
        static let digitalSourceType = Property(
            namespace: "http://iptc.org/std/Iptc4xmpExt/2008-02-29/", name: "DigitalSourceType",
            displayName: "Iptc4xmpExt:DigitalSourceType")
        static let hasExtendedXMP = Property(
            namespace: "http://ns.adobe.com/xmp/note/", name: "HasExtendedXMP", displayName: "xmpNote:HasExtendedXMP")
    }

    /// Reads the packet in `range` of `bytes` into `collector`, naming its values' location with `origin` (`"XMP"`,
    /// `"extended XMP"`) and its notes with `container`. Returns the `xmpNote:HasExtendedXMP` GUID when `wantsGUID`
    /// and the packet names one.
    @discardableResult
    static func read(
        _ bytes: ByteView, in range: Range<Int>, origin: String, container: String, wantsGUID: Bool,
        into collector: inout MarkCollector
    ) -> String? {
        // Trailing NUL padding, which some writers leave, is not part of the XML.
        var end = range.upperBound
        while end > range.lowerBound, bytes.u8(end - 1) == 0 { end -= 1 }
        let packet = range.lowerBound..<end
        let what = "\(origin) packet in \(container)"

        guard packet.count <= maxPacketLength else {
            collector.note("\(what) of \(packet.count) bytes is over the \(maxPacketLength)-byte bound; not read")
            return nil
        }
        guard bytes.firstIndex(of: 0, in: packet) == nil else {
            collector.note("\(what) is not UTF-8 (it holds NUL bytes); not read")
            return nil
        }
        guard declaresUTF8OrNothing(bytes, packet) else {
            collector.note("\(what) declares an encoding other than UTF-8; not read")
            return nil
        }
        let mentionsWanted = bytes.contains("DataMining", in: packet) || bytes.contains("DigitalSourceType", in: packet)
            || (wantsGUID && bytes.contains("HasExtendedXMP", in: packet))
        guard mentionsWanted else { return nil }
        guard !bytes.contains("<!DOCTYPE", in: packet), !bytes.contains("<!ENTITY", in: packet) else {
            collector.note("\(what) declares a DTD or an entity; not parsed")
            return nil
        }

        let utf8 = UnsafeRawBufferPointer(rebasing: bytes.buffer[packet])
        guard let text = String(validating: utf8, as: UTF8.self) else {
            collector.note("\(what) is not valid UTF-8; not parsed")
            return nil
        }
        guard !hasInstructionWithoutData(bytes, packet) else {
            collector.note("\(what) has a processing instruction without data; not parsed")
            return nil
        }
        guard !hasTag(bytes, packet, withMoreAttributesThan: maxAttributesPerTag) else {
            collector.note("\(what) has a tag of more than \(maxAttributesPerTag) attributes; not parsed")
            return nil
        }

        let scanner = RDFPropertyScanner(wanted: [.dataMining, .digitalSourceType, .hasExtendedXMP], maxDepth: maxDepth)
        let parser = XMLParser(data: Data(text.utf8))
        parser.shouldProcessNamespaces = true
        parser.shouldReportNamespacePrefixes = true
        parser.delegate = scanner
        let finished = parser.parse()
        parser.delegate = nil
        if let failure = scanner.failure {
            collector.note("\(what) \(failure); not read")
            return nil
        }
        guard finished, parser.parserError == nil else {
            collector.note("\(what) is not well-formed XML; not read")
            return nil
        }
        guard scanner.sawRDF else {
            collector.note("\(what) has no rdf:RDF element; not read")
            return nil
        }

        var guid: String?
        for found in scanner.found {
            switch found.property {
            case .dataMining:
                collector.addDataMining(ImageMarks.Mark(value: found.value, location: "\(origin) \(found.property.displayName)"))
            case .digitalSourceType:
                collector.addSourceType(ImageMarks.SourceType(
                    value: found.value, source: .xmp, location: "\(origin) \(found.property.displayName)"))
            default:
                if wantsGUID, guid == nil { guid = found.value }
            }
        }
        for property in scanner.structured {
            collector.note("\(origin) \(property.displayName) in \(container) has a structured value; not read")
        }
        return guid
    }

    /// Whether `<?` is followed by a target and `?>` with no whitespace between (anywhere: in a comment too, where it is
    /// harmless, is refused alike). Linear: each scan stops at the next `?`, and the search resumes there.
    static func hasInstructionWithoutData(_ bytes: ByteView, _ packet: Range<Int>) -> Bool {
        var from = packet.lowerBound
        while let question = bytes.firstIndex(of: UInt8(ascii: "?"), in: from..<packet.upperBound) {
            var end = question + 1
            if question > packet.lowerBound, bytes.u8(question - 1) == UInt8(ascii: "<") {
                while end < packet.upperBound, let byte = bytes.u8(end),
                      ![0x20, 0x09, 0x0A, 0x0D, UInt8(ascii: "?"), UInt8(ascii: ">")].contains(byte) {
                    end += 1
                }
                if end + 1 < packet.upperBound, bytes.u8(end) == UInt8(ascii: "?"), bytes.u8(end + 1) == UInt8(ascii: ">") {
                    return true
                }
            }
            from = end
        }
        return false
    }

    /// Whether some tag holds more than `limit` `=` signs outside quotes (an attribute or namespace declaration
    /// each). Quoted values are skipped whole, so a `>` or `=` inside one neither ends the tag nor counts; a stray quote
    /// in a comment can only make a tag look longer (a refusal, never a miss). Linear: every byte is passed once.
    static func hasTag(_ bytes: ByteView, _ packet: Range<Int>, withMoreAttributesThan limit: Int) -> Bool {
        var offset = packet.lowerBound
        while let open = bytes.firstIndex(of: UInt8(ascii: "<"), in: offset..<packet.upperBound) {
            var count = 0
            offset = open + 1
            scan: while let byte = bytes.u8(offset), offset < packet.upperBound {
                switch byte {
                case UInt8(ascii: ">"):
                    break scan
                case UInt8(ascii: "\""), UInt8(ascii: "'"):
                    guard let close = bytes.firstIndex(of: byte, in: offset + 1..<packet.upperBound) else { return false }
                    offset = close
                case UInt8(ascii: "="):
                    count += 1
                    if count > limit { return true }
                default:
                    break
                }
                offset += 1
            }
        }
        return false
    }

    /// Whether the packet has no XML declaration, or one without an encoding, or one naming UTF-8.
    private static func declaresUTF8OrNothing(_ bytes: ByteView, _ packet: Range<Int>) -> Bool {
        var start = packet.lowerBound
        if bytes.u8(start) == 0xEF, bytes.u8(start + 1) == 0xBB, bytes.u8(start + 2) == 0xBF { start += 3 }
        guard bytes.matches("<?xml", at: start), let next = bytes.u8(start + 5), next == 0x20 || next == 0x09
            || next == 0x0A || next == 0x0D
        else {
            return true  // no declaration: UTF-8 by default (a BOM-less UTF-16 one has NULs)
        }
        guard let close = bytes.firstIndex(of: UInt8(ascii: ">"), in: start..<packet.upperBound) else { return false }
        let declaration = [UInt8](UnsafeRawBufferPointer(rebasing: bytes.buffer[start..<close]))
        let text = String(decoding: declaration, as: UTF8.self).lowercased()
        guard let encoding = text.range(of: "encoding") else { return true }
        let value = text[encoding.upperBound...].drop { " \t\r\n=\"'".contains($0) }.prefix { !" \t\r\n\"'?".contains($0) }
        return value == "utf-8" || value == "utf8"
    }
}

/// The `XMLParser` delegate behind ``XMPReader``: finds the wanted properties of the top-level nodes.
final class RDFPropertyScanner: NSObject, XMLParserDelegate {
    static let rdf = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"

    struct Found {
        var property: XMPReader.Property
        var value: String
    }

    private enum Frame {
        case rdf
        case node
        /// A wanted property of a node (an index into `wanted`); its text and resource are kept beside the stack,
        /// since a property's children are never properties themselves.
        case property(Int)
        case other
    }

    private let wanted: [XMPReader.Property]
    private let maxDepth: Int
    private var frames: [Frame] = []
    /// Each prefix's URIs, innermost last (the default namespace under "").
    private var prefixes: [String: [String]] = [:]
    /// The open property's text, `rdf:resource` and whether it has child elements.
    private var text = ""
    private var resource: String?
    private var hasElements = false

    private(set) var found: [Found] = []
    private(set) var structured: [XMPReader.Property] = []
    private(set) var failure: String?
    private(set) var sawRDF = false

    init(wanted: [XMPReader.Property], maxDepth: Int) {
        self.wanted = wanted
        self.maxDepth = maxDepth
    }

    func parser(_ parser: XMLParser, didStartMappingPrefix prefix: String, toURI namespaceURI: String) {
        prefixes[prefix, default: []].append(namespaceURI)
    }

    func parser(_ parser: XMLParser, didEndMappingPrefix prefix: String) {
        _ = prefixes[prefix]?.popLast()
    }

    func parser(
        _ parser: XMLParser, didStartElement elementName: String, namespaceURI: String?, qualifiedName qName: String?,
        attributes attributeDict: [String: String] = [:]
    ) {
        guard frames.count < maxDepth else {
            failure = "nests elements deeper than \(maxDepth)"
            parser.abortParsing()
            return
        }
        let namespace = namespaceURI ?? ""
        switch frames.last {
        case nil, .other?:
            if namespace == Self.rdf, elementName == "RDF" {
                sawRDF = true
                frames.append(.rdf)
            } else {
                frames.append(.other)
            }
        case .rdf?:
            // A node element: rdf:Description, or a typed node. Its attributes may be properties; sorted, so that
            // two found here come out in the same order every time.
            for (name, value) in attributeDict.sorted(by: { $0.key < $1.key }) {
                guard let (uri, local) = resolve(attribute: name),
                      let index = wanted.firstIndex(where: { $0.namespace == uri && $0.name == local })
                else { continue }
                record(wanted[index], value)
            }
            frames.append(.node)
        case .node?:
            if let index = wanted.firstIndex(where: { $0.namespace == namespace && $0.name == elementName }) {
                text = ""
                hasElements = false
                resource = nil
                for (name, value) in attributeDict {
                    if let (uri, local) = resolve(attribute: name), uri == Self.rdf, local == "resource" {
                        resource = value
                    }
                }
                frames.append(.property(index))
            } else {
                frames.append(.other)
            }
        case .property?:
            hasElements = true
            frames.append(.other)
        }
    }

    func parser(
        _ parser: XMLParser, didEndElement elementName: String, namespaceURI: String?, qualifiedName qName: String?
    ) {
        guard case .property(let index)? = frames.popLast() else { return }
        let property = wanted[index]
        if hasElements {
            if !structured.contains(property) { structured.append(property) }
        } else {
            record(property, resource ?? text)
        }
    }

    func parser(_ parser: XMLParser, foundCharacters string: String) {
        if case .property? = frames.last { text += string }
    }

    func parser(_ parser: XMLParser, foundCDATA CDATABlock: Data) {
        if case .property? = frames.last { text += String(decoding: CDATABlock, as: UTF8.self) }
    }

    func parser(_ parser: XMLParser, parseErrorOccurred parseError: Error) {
        guard failure == nil else { return }
        let line = parser.lineNumber
        failure = "is not well-formed XML" + (line > 0 ? " (line \(line))" : "")
    }

    private func record(_ property: XMPReader.Property, _ value: String) {
        let trimmed = value.trimmingXMLWhitespace
        guard !trimmed.isEmpty else { return }
        found.append(Found(property: property, value: trimmed))
    }

    /// An attribute's namespace URI and local name from its written name, by the prefixes in scope; nil for an
    /// unprefixed attribute (which has no namespace) or an undeclared prefix.
    private func resolve(attribute name: String) -> (String, String)? {
        guard let colon = name.firstIndex(of: ":") else { return nil }
        guard let uri = prefixes[String(name[..<colon])]?.last else { return nil }
        return (uri, String(name[name.index(after: colon)...]))
    }
}
