import Foundation
import MirrorImages
import Testing

/// The bounded CBOR decoder behind C2PA assertions, against RFC 8949's appendix A examples and hostile lengths.
@Suite("CBOR decoding")
struct CBORTests {
    private func decode(_ bytes: [UInt8]) throws(CBORError) -> CBORValue {
        try bytes.withUnsafeBytes { buffer in
            Result { () throws(CBORError) in try CBORDecoder.decode(buffer) }
        }.get()
    }

    private func failure(_ bytes: [UInt8]) -> CBORError? {
        do {
            _ = try decode(bytes)
            return nil
        } catch {
            return error
        }
    }

    @Test("integers, strings, arrays and maps of RFC 8949 appendix A")
    func appendixA() throws {
        #expect(try decode([0x00]) == .unsigned(0))
        #expect(try decode([0x18, 0x64]) == .unsigned(100))
        #expect(try decode([0x1B, 0x00, 0x00, 0x00, 0xE8, 0xD4, 0xA5, 0x10, 0x00]) == .unsigned(1_000_000_000_000))
        #expect(try decode([0x38, 0x63]) == .negative(99))  // -100
        #expect(try decode([0x44, 0x01, 0x02, 0x03, 0x04]) == .bytes([1, 2, 3, 4]))
        #expect(try decode([0x62, 0xC3, 0xBC]) == .text("ü"))
        #expect(try decode([0x83, 0x01, 0x82, 0x02, 0x03, 0x82, 0x04, 0x05])
            == .array([.unsigned(1), .array([.unsigned(2), .unsigned(3)]), .array([.unsigned(4), .unsigned(5)])]))
        let map = try decode([0xA2, 0x61, 0x61, 0x01, 0x61, 0x62, 0x82, 0x02, 0x03])
        #expect(map["a"] == .unsigned(1))
        #expect(map["b"]?.items == [.unsigned(2), .unsigned(3)])
    }

    @Test("floats of every width, simple values and tags")
    func floatsSimpleTags() throws {
        #expect(try decode([0xF9, 0x3C, 0x00]) == .float(1.0))
        #expect(try decode([0xF9, 0x00, 0x01]) == .float(5.960464477539063e-8))  // the smallest half subnormal
        #expect(try decode([0xF9, 0xFC, 0x00]) == .float(-.infinity))
        #expect(try decode([0xFA, 0x47, 0xC3, 0x50, 0x00]) == .float(100_000.0))
        #expect(try decode([0xFB, 0x3F, 0xF1, 0x99, 0x99, 0x99, 0x99, 0x99, 0x9A]) == .float(1.1))
        if case .float(let nan) = try decode([0xF9, 0x7E, 0x00]) { #expect(nan.isNaN) } else { Issue.record("not a float") }
        #expect(try decode([0xF4]) == .bool(false))
        #expect(try decode([0xF6]) == .null)
        #expect(try decode([0xF7]) == .undefined)
        #expect(try decode([0xF8, 0xFF]) == .simple(255))
        // Tag 1 (epoch time) and tag 24 around a byte string: the tag is skipped, the content kept
        #expect(try decode([0xC1, 0x1A, 0x51, 0x4B, 0x67, 0xB0]) == .unsigned(1_363_896_240))
        #expect(try decode([0xD8, 0x18, 0x45, 0x64, 0x49, 0x45, 0x54, 0x46]) == .bytes(Array("dIETF".utf8)))
    }

    @Test("indefinite lengths")
    func indefinite() throws {
        #expect(try decode([0x7F, 0x65, 0x73, 0x74, 0x72, 0x65, 0x61, 0x64, 0x6D, 0x69, 0x6E, 0x67, 0xFF])
            == .text("streaming"))
        #expect(try decode([0x5F, 0x42, 0x01, 0x02, 0x43, 0x03, 0x04, 0x05, 0xFF]) == .bytes([1, 2, 3, 4, 5]))
        #expect(try decode([0x9F, 0x01, 0x82, 0x02, 0x03, 0x9F, 0x04, 0x05, 0xFF, 0xFF])
            == .array([.unsigned(1), .array([.unsigned(2), .unsigned(3)]), .array([.unsigned(4), .unsigned(5)])]))
        let map = try decode([0xBF, 0x63, 0x46, 0x75, 0x6E, 0xF5, 0x63, 0x41, 0x6D, 0x74, 0x21, 0xFF])
        #expect(map["Fun"] == .bool(true))
        #expect(map["Amt"] == .negative(1))
    }

    @Test("a real training-mining assertion from c2pa-rs")
    func trainingMining() throws {
        // Given the CBOR box c2pa-python 0.38.1 wrote for cawg.training-mining (one constrained entry), found after
        // its label in the sample
        let data = try ConsentSample.named("c2pa-cawg-genai-training-constrained.jpg").data()
        let label = try #require(data.offset(of: Array("cawg.training-mining".utf8)))
        let type = try #require(data.offset(of: Array("cbor".utf8), from: label))
        let length = Int(data.u32be(type - 4))
        let content = [UInt8](data[type + 4..<type - 4 + length])

        // When it is decoded
        let value = try decode(content)

        // Then the entry's use and constraint are where the specification puts them
        let entry = try #require(value["entries"]?["cawg.ai_generative_training"])
        #expect(entry["use"]?.text == "constrained")
        #expect(entry["constraint_info"]?.text == "Licence required: https://example.com/licence")
        #expect(value["entries"]?.entries?.count == 1)
    }

    @Test("lengths are checked against the bytes left before anything is allocated")
    func hostileLengths() {
        // A map claiming 2^32 entries, an array claiming 2^64-1 items, a text of 2^31 bytes, each with nothing after
        #expect(failure([0xBB, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00])
            == .lengthPastEnd(4_294_967_296, remaining: 0, at: 0))
        #expect(failure([0x9B, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x00])
            == .lengthPastEnd(.max, remaining: 1, at: 0))
        #expect(failure([0x7A, 0x80, 0x00, 0x00, 0x00, 0x61]) == .lengthPastEnd(2_147_483_648, remaining: 1, at: 0))
        // A map of 3 entries with 4 bytes left: two bytes an entry at least
        #expect(failure([0xA3, 0x01, 0x02, 0x03, 0x04]) == .lengthPastEnd(3, remaining: 4, at: 0))
    }

    @Test("depth, item count and malformed heads are refused, never trapped on")
    func bounds() {
        // 10,000 nested one-item arrays
        #expect(failure(Array(repeating: 0x81, count: 10_000) + [0x00]) == .tooDeep(limit: 32))
        // 10,000 nested tags
        #expect(failure(Array(repeating: 0xC6, count: 10_000) + [0x00]) == .tooDeep(limit: 32))
        // 32 levels are fine
        #expect(failure(Array(repeating: 0x81, count: 32) + [0x00]) == nil)
        // An array of 100,001 zeros
        #expect(failure([0x9A, 0x00, 0x01, 0x86, 0xA1] + Array(repeating: 0x00, count: 100_001))
            == .tooManyItems(limit: 100_000))
        #expect(failure([0x1C]) == .reservedAdditionalInfo(28, at: 0))
        #expect(failure([0x1F]) == .reservedAdditionalInfo(31, at: 0))
        #expect(failure([0xFF]) == .unexpectedBreak(at: 0))
        #expect(failure([0x5F, 0x61, 0x61, 0xFF]) == .invalidChunk(at: 1))  // a text chunk in a byte string
        #expect(failure([0x62, 0xC3, 0x28]) == .invalidUTF8(at: 0))
        #expect(failure([0xF8, 0x10]) == .invalidSimple(at: 0))
        #expect(failure([0x19, 0x01]) == .truncated(at: 1))
        #expect(failure([0x9F, 0x01]) == .truncated(at: 2))
        #expect(failure([]) == .truncated(at: 0))
        #expect(failure([0x01, 0x02]) == .trailingBytes(1))
        #expect(CBORError.tooDeep(limit: 32).description == "CBOR nested deeper than 32")
    }
}
