import Foundation
import MirrorImages
import Testing

/// Marks broken on purpose, each made from a real sample by mutation: the image stays valid (its marks never decide
/// that), the broken mark gives a note and no value, and nothing traps.
@Suite("Hostile marks", .timeLimit(.minutes(5)))
struct HostileMarksTests {
    /// Validates `data` with readsMarks, expecting the image to be accepted at `width`×`height`.
    private func readAccepting(_ data: Data, _ sample: ConsentSample) throws -> ImageMarks {
        let info = try ImageValidator(readsMarks: true).validate(data)
        #expect(info.width == sample.width && info.height == sample.height)
        return try #require(info.marks)
    }

    // MARK: - JPEG APP11

    /// The multisegment sample and its three APP11 segments.
    private func multisegment() throws -> (ConsentSample, Data, [JPEGSegments.Segment]) {
        let sample = try ConsentSample.named("c2pa-multisegment-training-mining-notallowed.jpg")
        let data = try sample.data()
        let app11 = try JPEGSegments(data).all(0xEB)
        try #require(app11.count == 3)
        return (sample, data, app11)
    }

    @Test("a cut APP11 segment: the sequence has a hole")
    func missingSegment() throws {
        // Given the multisegment store with its second segment cut out
        let (sample, data, app11) = try multisegment()
        let cut = data.replacing(app11[1].range, with: [])

        // When it is read
        let marks = try readAccepting(cut, sample)

        // Then the store is not read, and the note says why
        #expect(marks == ImageMarks(notes: ["JUMBF in JPEG APP11: sequence number 2 missing; not read"]))
    }

    @Test("APP11 segments out of file order are put back in sequence order")
    func reorderedSegments() throws {
        // Given the multisegment store with segments 2 and 3 swapped in the file (their sequence numbers kept)
        let (sample, data, app11) = try multisegment()
        let swapped = data[..<app11[1].range.lowerBound] + data[app11[2].range] + data[app11[1].range]
            + data[app11[2].range.upperBound...]
        try #require(swapped.count == data.count)

        // When it is read
        let marks = try readAccepting(Data(swapped), sample)

        // Then it reads exactly as the original: the sequence numbers, not the file, order a store (ISO/IEC 19566-5)
        #expect(marks.normalized == sample.expectedMarks?.normalized)
    }

    @Test("a duplicated APP11 sequence number")
    func duplicatedSequence() throws {
        // Given the third segment renumbered 2
        let (sample, data, app11) = try multisegment()
        let z = app11[2].data.lowerBound + 4
        let forged = data.replacing(z..<z + 4, with: [0, 0, 0, 2])

        // When it is read
        let marks = try readAccepting(forged, sample)

        // Then nothing is read
        #expect(marks == ImageMarks(notes: ["JUMBF in JPEG APP11: sequence number 2 repeated; not read"]))
    }

    @Test("a continuation that does not repeat the superbox header")
    func continuationHeader() throws {
        // Given the second segment's repeated LBox changed
        let (sample, data, app11) = try multisegment()
        let header = app11[1].data.lowerBound + 8
        let forged = data.replacing(header..<header + 4, with: [0x7F, 0xFF, 0xFF, 0xFF])

        let marks = try readAccepting(forged, sample)

        #expect(marks == ImageMarks(notes: [
            "JUMBF in JPEG APP11: a continuation segment does not repeat the box header; not read",
        ]))
    }

    @Test("a store whose superbox length points past the end")
    func lengthPastEnd() throws {
        // Given the one-segment sample with the store's LBox set to 2^31-1
        let sample = try ConsentSample.named("c2pa-training-mining-notallowed.jpg")
        let data = try sample.data()
        let store = try #require(try JPEGSegments(data).all(0xEB).first).data.lowerBound + 8
        let available = Int(data.u16be(store - 10)) - 2 - 8  // the segment's length, less its length field and JP/En/Z
        let forged = data.replacing(store..<store + 4, with: [0x7F, 0xFF, 0xFF, 0xFF])

        let marks = try readAccepting(forged, sample)

        #expect(marks == ImageMarks(notes: [
            "JUMBF in JPEG APP11 is malformed: a box at byte 0 claims 2147483647 bytes with \(available) left; not read",
        ]))
    }

    @Test("a CBOR map claiming 2^32 entries, in place of the training-mining map")
    func hugeCBORMap() throws {
        // Given the training-mining CBOR's first nine bytes (a1 67 "entries") made a map header claiming 2^32 entries
        let sample = try ConsentSample.named("c2pa-training-mining-notallowed.jpg")
        let data = try sample.data()
        let label = try #require(data.offset(of: Array("c2pa.training-mining".utf8)))
        let cbor = try #require(data.offset(of: Array("cbor".utf8), from: label)) + 4
        try #require(Array(data[cbor..<cbor + 2]) == [0xA1, 0x67])
        let left = Int(data.u32be(cbor - 8)) - 8 - 9
        let forged = data.replacing(cbor..<cbor + 9, with: [0xBB, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00])

        // When it is read
        let marks = try readAccepting(forged, sample)

        // Then the assertion is a note; the rest of the manifest (the created action) is still read
        #expect(marks.trainingMining.isEmpty)
        #expect(marks.hasC2PAManifest)
        #expect(marks.digitalSourceTypes.map(\.value) == ["http://cv.iptc.org/newscodes/digitalsourcetype/digitalCapture"])
        #expect(marks.notes == [
            "C2PA c2pa.training-mining in JPEG APP11: CBOR length 4294967296 at byte 0 with \(left) bytes left; not read",
        ])
    }

    // MARK: - PNG caBX

    @Test("CBOR nested 10,000 deep and JUMBF nested 10,000 deep in a PNG's caBX")
    func deepNestingInPNG() throws {
        // Given the PNG sample with its store replaced by one whose training-mining CBOR is 10,000 arrays deep,
        // and by one of 10,000 nested superboxes
        let sample = try ConsentSample.named("c2pa-training-mining-notallowed.png")
        let data = try sample.data()
        let deepCBOR = JUMBFBytes.store(assertions: [
            ("c2pa.training-mining", Array(repeating: 0x81, count: 10_000) + [0x00]),
        ])
        var deepBoxes = JUMBFBytes.box("cbor", [0xA0])
        for _ in 0..<10_000 { deepBoxes = JUMBFBytes.box("jumb", JUMBFBytes.description("c2pa", label: "c2pa") + deepBoxes) }

        // When each is read
        let cborMarks = try readAccepting(try data.pngReplacingChunk("caBX", with: deepCBOR), sample)
        let boxMarks = try readAccepting(try data.pngReplacingChunk("caBX", with: deepBoxes), sample)

        // Then each is a note
        #expect(cborMarks == ImageMarks(hasC2PAManifest: true, notes: [
            "C2PA c2pa.training-mining in PNG caBX: CBOR nested deeper than 32; not read",
        ]))
        #expect(boxMarks == ImageMarks(notes: ["JUMBF in PNG caBX is malformed: boxes nest deeper than 16; not read"]))
    }

    @Test("a JUMBF box of length 0, 1 and 2^32-1 inside the PNG's store")
    func boxLengthsInPNG() throws {
        // Given the PNG sample's c2pa.actions.v2 assertion box, its LBox rewritten
        let sample = try ConsentSample.named("c2pa-training-mining-notallowed.png")
        let data = try sample.data()
        let label = try #require(data.offset(of: Array("c2pa.actions.v2".utf8)))
        let jumd = try #require(data.range(of: Data("jumd".utf8), options: .backwards, in: 0..<label)).lowerBound - 4
        let jumb = jumd - 8  // the assertion superbox's header, right before its description
        try #require(data[jumb + 4..<jumb + 8].elementsEqual("jumb".utf8))

        for length: [UInt8] in [[0, 0, 0, 0], [0, 0, 0, 1], [0xFF, 0xFF, 0xFF, 0xFF]] {
            // When it is read
            let marks = try readAccepting(data.replacing(jumb..<jumb + 4, with: length), sample)

            // Then the whole store is refused: no value at all, one note
            #expect(!marks.hasAnyValue && !marks.hasC2PAManifest)
            #expect(marks.notes.count == 1)
            #expect(marks.notes.first?.hasPrefix("JUMBF in PNG caBX is malformed: a box") == true)
        }
    }

    // MARK: - XMP

    /// A JPEG sample with its XMP APP1 segment's packet replaced by `packet`.
    private func replacingXMP(in data: Data, with packet: String) throws -> Data {
        let segment = try #require(try JPEGSegments(data).all(0xE1).first {
            data[$0.data].starts(with: "http://ns.adobe.com/xap/1.0/\0".utf8)
        })
        let payload = Array("http://ns.adobe.com/xap/1.0/\0".utf8) + Array(packet.utf8)
        let length = UInt16(payload.count + 2)
        return data.replacing(segment.range, with: [0xFF, 0xE1, UInt8(length >> 8), UInt8(length & 0xFF)] + payload)
    }

    @Test("an XMP packet with a billion-laughs DTD in a JPEG")
    func billionLaughsInJPEG() throws {
        // Given the DMI-PROHIBITED sample with a DTD of nested entities expanding inside its DataMining
        let sample = try ConsentSample.named("xmp-dmi-prohibited.jpg")
        var entities = "<!ENTITY l0 'lol'>"
        for level in 1...9 {
            entities += "<!ENTITY l\(level) '" + String(repeating: "&l\(level - 1);", count: 10) + "'>"
        }
        let packet = "<?xml version='1.0'?><!DOCTYPE x:xmpmeta [\(entities)]>" + XMPReaderTests.packet(
            "<rdf:Description xmlns:plus='\(XMPReaderTests.plus)'><plus:DataMining>&l9;</plus:DataMining></rdf:Description>")

        // When it is read
        let marks = try readAccepting(try replacingXMP(in: sample.data(), with: packet), sample)

        // Then the packet is refused unparsed
        #expect(marks == ImageMarks(notes: ["XMP packet in JPEG APP1 declares a DTD or an entity; not parsed"]))
    }

    @Test("an XMP packet 10,000 elements deep in a PNG's iTXt")
    func deepXMPInPNG() throws {
        // Given the PNG XMP sample with its iTXt text replaced by a DataMining value and 10,000 nested elements
        let sample = try ConsentSample.named("xmp-dmi-prohibited-aimltraining.png")
        let deep = String(repeating: "<a>", count: 10_000) + String(repeating: "</a>", count: 10_000)
        let packet = XMPReaderTests.packet("<rdf:Description xmlns:plus='\(XMPReaderTests.plus)'><plus:DataMining>"
            + "\(XMPReaderTests.prohibited)</plus:DataMining></rdf:Description><rdf:Description>\(deep)</rdf:Description>")
        let itxt = Array("XML:com.adobe.xmp".utf8) + [0, 0, 0, 0, 0] + Array(packet.utf8)

        // When it is read
        let marks = try readAccepting(try sample.data().pngReplacingChunk("iTXt", with: itxt), sample)

        // Then the value found before the depth bound is not kept
        #expect(marks == ImageMarks(notes: ["XMP packet in PNG iTXt nests elements deeper than 64; not read"]))
    }

    @Test("a compressed XMP iTXt, and one whose header is cut, are notes")
    func compressedITXt() throws {
        // Given the PNG XMP sample with its iTXt compression flag set, and with its text cut after the keyword
        let sample = try ConsentSample.named("xmp-dmi-prohibited-aimltraining.png")
        let data = try sample.data()
        let keyword = try #require(data.offset(of: Array("XML:com.adobe.xmp\0".utf8)))
        let compressed = data.replacing(keyword + 18..<keyword + 19, with: [1])
        let cut = try data.pngReplacingChunk("iTXt", with: Array("XML:com.adobe.xmp\0\0".utf8))

        #expect(try readAccepting(compressed, sample) == ImageMarks(notes: [
            "XMP packet in PNG iTXt is compressed; not read (MirrorImages has no zlib)",
        ]))
        #expect(try readAccepting(cut, sample) == ImageMarks(notes: ["XMP iTXt chunk in PNG has a header cut short; not read"]))
    }

    @Test("a GIF XMP packet whose magic trailer is damaged")
    func gifTrailer() throws {
        // Given the GIF XMP sample with the trailer's first byte 01 made 02 (the sub-block walk still ends on the
        // terminator: from 02 it hops to FD, and from there to the end)
        let sample = try ConsentSample.named("xmp-dmi-prohibited-aimltraining.gif")
        let data = try sample.data()
        let end = try #require(data.offset(of: Array("<?xpacket end='w'?>".utf8))) + 19
        try #require(data[end] == 0x01 && data[end + 1] == 0xFF)
        let forged = data.replacing(end..<end + 1, with: [0x02])

        let marks = try readAccepting(forged, sample)

        #expect(marks == ImageMarks(notes: [
            "XMP packet in GIF application extension lacks its 258-byte magic trailer; not read",
        ]))
    }

    // MARK: - Extended XMP

    /// The extended-XMP sample and its two extension segments (data after the 35-byte signature).
    private func extended() throws -> (ConsentSample, Data, [Range<Int>]) {
        let sample = try ConsentSample.named("xmp-extended-dmi-in-extension.jpg")
        let data = try sample.data()
        let chunks = try JPEGSegments(data).all(0xE1)
            .filter { data[$0.data].starts(with: "http://ns.adobe.com/xmp/extension/\0".utf8) }
            .map { $0.data.lowerBound + 35..<$0.data.upperBound }
        try #require(chunks.count == 2)
        return (sample, data, chunks)
    }

    @Test("extended XMP chunks that overlap, leave a gap, lie about the full length, or miss one")
    func extendedXMP() throws {
        let (sample, data, chunks) = try extended()
        let second = chunks[1].lowerBound
        let offset = Int(data.u32be(second + 36))
        let full = Int(data.u32be(second + 32))
        func u32(_ value: Int) -> [UInt8] { bigEndian(UInt32(value)) }

        let cases: [(Data, String)] = [
            (data.replacing(second + 36..<second + 40, with: u32(offset - 1)), "chunks overlap"),
            (data.replacing(second + 36..<second + 40, with: u32(offset + 1)), "chunks leave a gap"),
            (data.replacing(second + 32..<second + 36, with: u32(full + 1_000)), "chunks disagree on the full length"),
            (data.replacing(chunks[0].lowerBound + 32..<chunks[0].lowerBound + 36, with: u32(full + 1_000))
                .replacing(second + 32..<second + 36, with: u32(full + 1_000)),
             "chunks hold \(full) of \(full + 1_000) bytes"),
            (data.replacing(chunks[0].lowerBound + 32..<chunks[0].lowerBound + 36, with: u32(0x7FFF_FFFF))
                .replacing(second + 32..<second + 36, with: u32(0x7FFF_FFFF)),
             "over the 8388608-byte bound"),
            (data.replacing(chunks[1].lowerBound - 39..<chunks[1].upperBound, with: []),
             "chunks hold \(offset) of \(full) bytes"),
            (data.replacing(chunks[1].lowerBound..<chunks[1].lowerBound + 1, with: [UInt8(ascii: "Z")])
                .replacing(chunks[0].lowerBound..<chunks[0].lowerBound + 1, with: [UInt8(ascii: "Z")]),
             "no chunk of the GUID the main packet names"),
        ]
        for (forged, why) in cases {
            // When it is read
            let marks = try readAccepting(forged, sample)

            // Then the DataMining in the extension is not read, and the note says why
            #expect(marks.dataMining.isEmpty, "\(why)")
            #expect(marks.notes.count == 1, "\(why)")
            #expect(marks.notes.first?.contains(why) == true, "\(marks.notes) for \(why)")
            #expect(marks.notes.first?.hasPrefix("extended XMP in JPEG APP1") == true)
        }
    }

    // MARK: - Everything at once

    @Test("random byte flips in every consent sample never trap, and an accepted image's notes render")
    func randomFlips() throws {
        var generator = SplitMix64(seed: 0x6D61726B73)
        for sample in try ConsentSample.all() {
            let data = try sample.data()
            for _ in 0..<200 {
                var forged = Data(data)
                for _ in 0..<Int.random(in: 1...4, using: &generator) {
                    let index = Int.random(in: 0..<forged.count, using: &generator)
                    forged[index] = UInt8.random(in: 0...255, using: &generator)
                }
                guard let info = try? ImageValidator(readsMarks: true).validate(forged) else { continue }
                for note in info.marks?.notes ?? [] {
                    #expect(!note.isEmpty && !note.contains("\n") && note.count <= 201)
                }
            }
        }
    }
}
