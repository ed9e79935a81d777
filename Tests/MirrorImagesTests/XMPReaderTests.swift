import Foundation
@_spi(Testing) import MirrorImages
import Testing

/// The XMP reader on packets written here, one RDF/XML detail at a time.
@Suite("XMP packets")
struct XMPReaderTests {
    static let plus = "http://ns.useplus.org/ldf/xmp/1.0/"
    static let iptc = "http://iptc.org/std/Iptc4xmpExt/2008-02-29/"
    static let rdf = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
    static let prohibited = "http://ns.useplus.org/ldf/vocab/DMI-PROHIBITED"
    static let trained = "http://cv.iptc.org/newscodes/digitalsourcetype/trainedAlgorithmicMedia"

    /// A packet: `<x:xmpmeta><rdf:RDF>` around `body`, with `declarations` on `rdf:RDF`.
    static func packet(_ body: String, declarations: String = "") -> String {
        "<?xpacket begin='\u{FEFF}' id='W5M0MpCehiHzreSzNTczkc9d'?>\n<x:xmpmeta xmlns:x='adobe:ns:meta/'>"
            + "<rdf:RDF xmlns:rdf='\(rdf)' \(declarations)>\(body)</rdf:RDF></x:xmpmeta>\n<?xpacket end='w'?>"
    }

    static func read(_ text: String) -> ImageMarks {
        read(Array(text.utf8))
    }

    static func read(_ bytes: [UInt8]) -> ImageMarks {
        bytes.withUnsafeBytes { MarkPayloadReaders.readXMPPacket($0) }
    }

    static func dataMining(_ value: String, _ origin: String = "XMP") -> ImageMarks.Mark {
        ImageMarks.Mark(value: value, location: "\(origin) plus:DataMining")
    }

    @Test("properties are matched by namespace URI, whatever the prefix")
    func namespaceNotPrefix() {
        // Given the PLUS namespace under another prefix, under the default namespace, and `plus:` bound elsewhere
        let otherPrefix = Self.read(Self.packet(
            "<rdf:Description rdf:about='' xmlns:lic='\(Self.plus)'><lic:DataMining>\(Self.prohibited)</lic:DataMining>"
                + "</rdf:Description>"))
        let defaultNamespace = Self.read(Self.packet(
            "<rdf:Description rdf:about=''><DataMining xmlns='\(Self.plus)'>\(Self.prohibited)</DataMining>"
                + "</rdf:Description>"))
        let wrongNamespace = Self.read(Self.packet(
            "<rdf:Description rdf:about='' xmlns:plus='http://example.com/plus/'>"
                + "<plus:DataMining>\(Self.prohibited)</plus:DataMining></rdf:Description>"))

        // Then the first two are read and the third is not PLUS's property
        #expect(otherPrefix.dataMining == [Self.dataMining(Self.prohibited)])
        #expect(defaultNamespace.dataMining == [Self.dataMining(Self.prohibited)])
        #expect(wrongNamespace == ImageMarks())
    }

    @Test("the three RDF forms: attribute, element with text, element with rdf:resource")
    func forms() {
        // Given each form, the attribute one with prefixes declared on an ancestor and renamed
        let attribute = Self.read(Self.packet(
            "<rdf:Description rdf:about='' p:DataMining='\(Self.prohibited)' i:DigitalSourceType='\(Self.trained)'/>",
            declarations: "xmlns:p='\(Self.plus)' xmlns:i='\(Self.iptc)'"))
        let element = Self.read(Self.packet(
            "<rdf:Description xmlns:plus='\(Self.plus)'><plus:DataMining>\n  \(Self.prohibited)\n </plus:DataMining>"
                + "</rdf:Description>"))
        let resource = Self.read(Self.packet(
            "<rdf:Description xmlns:Iptc4xmpExt='\(Self.iptc)'>"
                + "<Iptc4xmpExt:DigitalSourceType r:resource='\(Self.trained)' xmlns:r='\(Self.rdf)'/></rdf:Description>"))
        let cdata = Self.read(Self.packet(
            "<rdf:Description xmlns:plus='\(Self.plus)'><plus:DataMining><![CDATA[\(Self.prohibited)]]></plus:DataMining>"
                + "</rdf:Description>"))

        // Then each gives the value as written, trimmed, with where it was read
        #expect(attribute.dataMining == [Self.dataMining(Self.prohibited)])
        #expect(attribute.digitalSourceTypes == [
            ImageMarks.SourceType(value: Self.trained, source: .xmp, location: "XMP Iptc4xmpExt:DigitalSourceType"),
        ])
        #expect(element.dataMining == [Self.dataMining(Self.prohibited)])
        #expect(resource.digitalSourceTypes.map(\.value) == [Self.trained])
        #expect(cdata.dataMining == [Self.dataMining(Self.prohibited)])
        #expect([attribute, element, resource, cdata].allSatisfy { $0.notes.isEmpty })
    }

    @Test("a property of a nested resource is not the image's; a structured value is noted")
    func nestingAndStructure() {
        // Given DataMining inside a licensor structure, and DataMining whose value is an rdf:Bag
        let nested = Self.read(Self.packet(
            "<rdf:Description xmlns:plus='\(Self.plus)'><plus:Licensor><rdf:Seq><rdf:li rdf:parseType='Resource'>"
                + "<plus:DataMining>\(Self.prohibited)</plus:DataMining></rdf:li></rdf:Seq></plus:Licensor>"
                + "</rdf:Description>"))
        let bag = Self.read(Self.packet(
            "<rdf:Description xmlns:plus='\(Self.plus)'><plus:DataMining><rdf:Bag><rdf:li>\(Self.prohibited)</rdf:li>"
                + "</rdf:Bag></plus:DataMining></rdf:Description>"))

        // Then neither is a value; the bag says why
        #expect(nested == ImageMarks())
        #expect(bag.dataMining.isEmpty)
        #expect(bag.notes == ["XMP plus:DataMining in the input has a structured value; not read"])
    }

    @Test("a packet that does not name a wanted property is not parsed at all")
    func prefilter() {
        // Given broken XML that never mentions DataMining or DigitalSourceType
        let marks = Self.read("<x:xmpmeta><rdf:RDF><unclosed dc:title='x'>")

        // Then nothing is read and nothing is noted: the parser never saw it
        #expect(marks == ImageMarks())
    }

    @Test("a DTD is refused before parsing: the billion laughs")
    func billionLaughs() {
        // Given entities that expand to a billion "lol"s inside the DataMining element
        var entities = "<!ENTITY lol0 'lol'>"
        for level in 1...9 {
            entities += "<!ENTITY lol\(level) '" + String(repeating: "&lol\(level - 1);", count: 10) + "'>"
        }
        let text = "<?xml version='1.0'?><!DOCTYPE x:xmpmeta [\(entities)]>"
            + Self.packet("<rdf:Description xmlns:plus='\(Self.plus)'><plus:DataMining>&lol9;</plus:DataMining>"
                + "</rdf:Description>")

        // When it is read
        let marks = Self.read(text)

        // Then it is refused with a note, in no time
        #expect(marks.dataMining.isEmpty)
        #expect(marks.notes == ["XMP packet in the input declares a DTD or an entity; not parsed"])
    }

    @Test("elements 10,000 deep abort the parse and discard what was found before")
    func deepNesting() {
        // Given a DataMining value, then 10,000 nested elements
        let deep = String(repeating: "<a>", count: 10_000) + String(repeating: "</a>", count: 10_000)
        let text = Self.packet("<rdf:Description xmlns:plus='\(Self.plus)'><plus:DataMining>\(Self.prohibited)"
            + "</plus:DataMining></rdf:Description><rdf:Description>\(deep)</rdf:Description>")

        // When it is read
        let marks = Self.read(text)

        // Then nothing is kept
        #expect(marks.dataMining.isEmpty)
        #expect(marks.notes == ["XMP packet in the input nests elements deeper than 64; not read"])
    }

    @Test("XML that is not well-formed keeps nothing, though libxml2 recovers")
    func notWellFormed() {
        // Given a value followed by a mismatched end tag (corelibs' parser recovers and returns true)
        let text = Self.packet("<rdf:Description xmlns:plus='\(Self.plus)'><plus:DataMining>\(Self.prohibited)"
            + "</plus:DataMining></rdf:Description><oops></rdf:RDF>")

        // When it is read
        let marks = Self.read(text)

        // Then the value is discarded
        #expect(marks.dataMining.isEmpty)
        #expect(marks.notes.count == 1)
        #expect(marks.notes.first?.hasPrefix("XMP packet in the input is not well-formed XML") == true)
    }

    @Test("only UTF-8 is read; trailing NULs are padding")
    func encodings() {
        let body = Self.packet("<rdf:Description xmlns:plus='\(Self.plus)'><plus:DataMining>\(Self.prohibited)"
            + "</plus:DataMining></rdf:Description>")
        // UTF-16 with a BOM, a declared Latin-1, a declared UTF-8, and UTF-8 with NUL padding
        let utf16 = Self.read([0xFF, 0xFE] + Array(body.utf16).flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] })
        let latin1 = Self.read("<?xml version='1.0' encoding='ISO-8859-1'?>" + body)
        let utf8 = Self.read("<?xml version=\"1.0\" encoding=\"UTF-8\"?>" + body)
        let padded = Self.read(Array(body.utf8) + [0, 0, 0])

        #expect(utf16.notes == ["XMP packet in the input is not UTF-8 (it holds NUL bytes); not read"])
        #expect(latin1.notes == ["XMP packet in the input declares an encoding other than UTF-8; not read"])
        #expect(utf16.dataMining.isEmpty && latin1.dataMining.isEmpty)
        #expect(utf8.dataMining == [Self.dataMining(Self.prohibited)])
        #expect(padded.dataMining == [Self.dataMining(Self.prohibited)])
    }

    @Test("a name that is not UTF-8 is refused before corelibs' parser can trap on it")
    func invalidUTF8Name() {
        // Given a DataMining value, then an element whose name holds C3 28 (corelibs force-unwraps names: issue 5534)
        let body = Self.packet("<rdf:Description xmlns:plus='\(Self.plus)'><plus:DataMining>\(Self.prohibited)"
            + "</plus:DataMining></rdf:Description>")
        let bad = Array(body.utf8) + Array("<b".utf8) + [0xC3, 0x28] + Array("/>".utf8)

        // When it is read
        let marks = Self.read(bad)

        // Then it is a note, and the process is still here
        #expect(marks == ImageMarks(notes: ["XMP packet in the input is not valid UTF-8; not parsed"]))
    }

    @Test("a processing instruction without data is refused before corelibs' parser strlens its NULL")
    func instructionWithoutData() {
        // Given a DataMining value and `<?xp?>` (the shape scripts/fuzz/fuzz marks found: a segmentation fault in
        // _NSXMLParserProcessingInstruction), and the same with a space, which libxml2 reports as empty data
        let body = "<rdf:Description xmlns:plus='\(Self.plus)'><plus:DataMining>\(Self.prohibited)</plus:DataMining>"
            + "</rdf:Description>"
        let bare = Self.read(Self.packet(body + "<?xp?>"))
        let spaced = Self.read(Self.packet(body + "<?xp ?>"))

        // Then the first is a note, the second is read
        #expect(bare == ImageMarks(notes: ["XMP packet in the input has a processing instruction without data; not parsed"]))
        #expect(spaced.dataMining == [Self.dataMining(Self.prohibited)])
    }

    @Test("a tag of more than 1,024 attributes is refused before libxml2 compares them pair by pair")
    func manyAttributes() {
        // Given an rdf:Description of 1,024 attributes and namespace declarations in all, DataMining among them, then
        // of 1,025 (the values hold `>` and `=`, which must neither end the tag nor count)
        func description(_ others: Int) -> String {
            "<rdf:Description xmlns:plus='\(Self.plus)' plus:DataMining='\(Self.prohibited)' "
                + (0..<others - 1).map { "a\($0)='x>=y'" }.joined(separator: " ") + "/>"
        }
        let atBound = Self.read(Self.packet(description(1_023)))
        let overBound = Self.read(Self.packet(description(1_024)))

        // Then 1,024 are read and 1,025 are a note
        #expect(atBound.dataMining == [Self.dataMining(Self.prohibited)])
        #expect(overBound == ImageMarks(notes: ["XMP packet in the input has a tag of more than 1024 attributes; not parsed"]))
    }

    @Test("a packet over 1 MiB is not read")
    func oversized() {
        let filler = "<rdf:Description xmlns:dc='http://purl.org/dc/elements/1.1/' dc:description='"
            + String(repeating: "x", count: 1 << 20) + "'/>"
        let marks = Self.read(Self.packet("<rdf:Description xmlns:plus='\(Self.plus)'><plus:DataMining>"
            + "\(Self.prohibited)</plus:DataMining></rdf:Description>" + filler))
        #expect(marks.dataMining.isEmpty)
        #expect(marks.notes.first?.hasSuffix("is over the 1048576-byte bound; not read") == true)
    }

    @Test("a property repeated thousands of times keeps 64 values and one note")
    func repeatedValues() {
        let descriptions = (0..<1_000).map {
            "<rdf:Description xmlns:plus='\(Self.plus)'><plus:DataMining>v\($0)</plus:DataMining></rdf:Description>"
        }.joined()
        let marks = Self.read(Self.packet(descriptions))
        #expect(marks.dataMining.count == 64)
        #expect(marks.dataMining.first?.value == "v0")
        #expect(marks.notes == ["936 more values past 64 of a kind not kept"])
    }
}
