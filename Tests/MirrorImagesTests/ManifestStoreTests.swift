import Foundation
@_spi(Testing) import MirrorImages
import Testing

/// The C2PA reader on JUMBF stores built here, one structural detail at a time.
@Suite("C2PA manifest stores")
struct ManifestStoreTests {
    /// `{ "entries": { name: { "use": use } } }` in CBOR, for names and uses under 24 bytes.
    static func trainingMining(_ entries: [(String, String)]) -> [UInt8] {
        func text(_ string: String) -> [UInt8] { [0x60 | UInt8(string.utf8.count)] + Array(string.utf8) }
        return [0xA1] + text("entries") + [0xA0 | UInt8(entries.count)]
            + entries.flatMap { text($0.0) + [0xA1] + text("use") + text($0.1) }
    }

    static func read(_ store: [UInt8]) -> ImageMarks {
        store.withUnsafeBytes { MarkPayloadReaders.readManifestStore($0) }
    }

    @Test("the active manifest is the last; labels keep their __N suffix")
    func activeManifest() {
        // Given a store with an older manifest saying notAllowed and the active one saying allowed, twice
        let old = JUMBFBytes.superbox("c2ma", label: "urn:c2pa:old", [
            JUMBFBytes.superbox("c2as", label: "c2pa.assertions", [
                JUMBFBytes.superbox("cbor", label: "c2pa.training-mining", [
                    JUMBFBytes.box("cbor", Self.trainingMining([("c2pa.ai_training", "notAllowed")])),
                ]),
            ]),
        ])
        let active = JUMBFBytes.superbox("c2ma", label: "urn:c2pa:new", [
            JUMBFBytes.superbox("c2as", label: "c2pa.assertions", [
                JUMBFBytes.superbox("cbor", label: "c2pa.training-mining", [
                    JUMBFBytes.box("cbor", Self.trainingMining([("c2pa.ai_training", "allowed")])),
                ]),
                JUMBFBytes.superbox("cbor", label: "c2pa.training-mining__2", [
                    JUMBFBytes.box("cbor", Self.trainingMining([("c2pa.data_mining", "allowed")])),
                ]),
            ]),
        ])
        let store = JUMBFBytes.superbox("c2pa", label: "c2pa", [old, active])

        // When it is read
        let marks = Self.read(store)

        // Then only the active manifest counts
        #expect(marks == ImageMarks(
            trainingMining: [
                ImageMarks.TrainingMiningEntry(label: "c2pa.training-mining", entry: "c2pa.ai_training", use: "allowed"),
                ImageMarks.TrainingMiningEntry(label: "c2pa.training-mining__2", entry: "c2pa.data_mining", use: "allowed"),
            ],
            hasC2PAManifest: true))
    }

    @Test("JUMBF that is not a C2PA store, or has no description, is noted")
    func notAStore() {
        let other = JUMBFBytes.superbox("jp2c", label: "JPEG XT", [JUMBFBytes.box("json", Array("{}".utf8))])
        let noDescription = JUMBFBytes.box("jumb", JUMBFBytes.box("cbor", [0xA0]))
        #expect(Self.read(other) == ImageMarks(notes: ["JUMBF in the input is not a C2PA manifest store; not read"]))
        #expect(Self.read(noDescription) == ImageMarks(
            notes: ["JUMBF in the input is malformed: the superbox at byte 0 has no description box; not read"]))
    }

    @Test("box lengths of 0 inside a superbox, 1 with a bad XLBox, and past the parent are refused")
    func boxLengths() {
        // Given a good store, and the same with its assertion's cbor box length rewritten
        let good = JUMBFBytes.store(assertions: [("c2pa.training-mining", Self.trainingMining([("c2pa.ai_training", "notAllowed")]))])
        #expect(Self.read(good).trainingMining.count == 1)
        let cbor = good.count - (Self.trainingMining([("c2pa.ai_training", "notAllowed")]).count + 8)

        let left = good.count - cbor
        for (length, why) in [
            ([UInt8](repeating: 0, count: 4), "a box at byte \(cbor) has length 0; not read"),
            ([0, 0, 0, 1], "a box at byte \(cbor) claims 11630376087782058341 bytes with \(left) left; not read"),
            ([0xFF, 0xFF, 0xFF, 0xFF], "a box at byte \(cbor) claims 4294967295 bytes with \(left) left; not read"),
            ([0, 0, 0, 5], "a box at byte \(cbor) has length 5; not read"),
        ] {
            var store = good
            store.replaceSubrange(cbor..<cbor + 4, with: length)

            // When it is read
            let marks = Self.read(store)

            // Then nothing in it is believed, and the note says where
            #expect(marks == ImageMarks(notes: ["JUMBF in the input is malformed: \(why)"]))
        }
    }

    @Test("superboxes nested 10,000 deep and a store of 10,001 boxes are refused")
    func depthAndCount() {
        var deep = JUMBFBytes.box("cbor", [0xA0])
        for _ in 0..<10_000 { deep = JUMBFBytes.box("jumb", JUMBFBytes.description("c2pa", label: "c2pa") + deep) }
        let many = JUMBFBytes.superbox("c2pa", label: "c2pa", Array(repeating: JUMBFBytes.box("free", []), count: 10_001))

        #expect(Self.read(deep).notes == ["JUMBF in the input is malformed: boxes nest deeper than 16; not read"])
        #expect(Self.read(many).notes == ["JUMBF in the input is malformed: more than 10000 boxes; not read"])
    }

    @Test("a label without its NUL, or not UTF-8, is a malformed description")
    func labels() {
        let noNUL = JUMBFBytes.box("jumb", JUMBFBytes.box("jumd", Array("c2pa".utf8) + Array(repeating: 0x11, count: 12)
            + [0x03] + Array("c2pa".utf8)))
        let latin1 = JUMBFBytes.box("jumb", JUMBFBytes.box("jumd", Array(repeating: 0x11, count: 16) + [0x03, 0xE9, 0x00]))
        for store in [noNUL, latin1] {
            #expect(Self.read(store) == ImageMarks(
                notes: ["JUMBF in the input is malformed: the description box at byte 8 is malformed; not read"]))
        }
    }

    @Test("a CBOR map claiming 2^32 entries loses its assertion, not the others")
    func hugeMapBesideGoodAssertion() {
        // Given a training-mining assertion whose CBOR claims 2^32 entries, beside a good actions assertion
        let actions: [UInt8] = [0xA1, 0x67] + Array("actions".utf8) + [0x81, 0xA2, 0x66] + Array("action".utf8)
            + [0x6C] + Array("c2pa.created".utf8) + [0x71] + Array("digitalSourceType".utf8) + [0x78, 0x2F]
            + Array("http://cv.iptc.org/newscodes/digitalsourcetype/".utf8)
        let store = JUMBFBytes.store(assertions: [
            ("c2pa.training-mining", [0xBB, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00]),
            ("c2pa.actions", actions),
        ])

        // When it is read
        let marks = Self.read(store)

        // Then the actions are read and the training-mining is a note
        #expect(marks.trainingMining.isEmpty)
        #expect(marks.digitalSourceTypes == [ImageMarks.SourceType(
            value: "http://cv.iptc.org/newscodes/digitalsourcetype/", source: .c2pa, location: "C2PA c2pa.actions c2pa.created")])
        #expect(marks.notes == ["C2PA c2pa.training-mining in the input: CBOR length 4294967296 at byte 0 with 0 bytes left; not read"])
        #expect(marks.hasC2PAManifest)
    }

    @Test("an entry without a text use is not an entry")
    func entryWithoutUse() {
        // { "entries": { "c2pa.ai_training": { "use": 1 }, "c2pa.data_mining": { "use": "notAllowed" } } }
        var cbor = Self.trainingMining([("c2pa.ai_training", "x"), ("c2pa.data_mining", "notAllowed")])
        let x = cbor.firstIndex(of: UInt8(ascii: "x")).map { $0 - 1 } ?? 0
        cbor.replaceSubrange(x..<x + 2, with: [0x01])
        let marks = Self.read(JUMBFBytes.store(assertions: [("cawg.training-mining", cbor)]))
        #expect(marks.trainingMining == [
            ImageMarks.TrainingMiningEntry(label: "cawg.training-mining", entry: "c2pa.data_mining", use: "notAllowed"),
        ])
        #expect(marks.notes == ["C2PA cawg.training-mining in the input has 1 entries without a text use; not read"])
    }
}
