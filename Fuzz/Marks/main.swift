// libFuzzer harness for the mark readers behind `ImageValidator.readsMarks`: XMP packets (through corelibs'
// XMLParser and libxml2), C2PA manifest stores (JUMBF), the CBOR decoder, and whole images read with their marks.
//
// Not part of Package.swift: `scripts/fuzz/fuzz` compiles it with `-sanitize=fuzzer,address -parse-as-library` against
// MirrorImages built in `.build-fuzz` (FoundationXML and libxml2 are linked, not instrumented).
//
// Input: [selector] then the payload; selector % 4: 0 an XMP packet (`MarkPayloadReaders.readXMPPacket`), 1 a JUMBF
// manifest store (`readManifestStore`), 2 one CBOR item (`CBORDecoder`), 3 a whole image validated with `readsMarks`.
// `scripts/fuzz/fuzz marks` seeds each from the consent samples: the files, and the packets, stores and assertion bodies
// extracted from them.
//
// Invariants checked besides "no trap, no memory error": every ImageMarks is within the readers' bounds (64 values of
// a kind, each non-empty and at most 2,048 bytes; at most 18 notes, each one line of at most 201 characters); a
// decoded CBOR item, encoded again (definite lengths, shortest heads), decodes to the same item; an image's marks
// never change whether it is accepted or what else is said of it, and only JPEG, PNG, GIF and WebP have marks.
import Foundation
@_spi(Testing) import MirrorImages

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzMarks(_ start: UnsafeRawPointer?, _ count: Int) -> CInt {
    guard count > 0, let start else { return 0 }
    let selector = start.load(as: UInt8.self) % 4
    let payload = UnsafeRawBufferPointer(start: count > 1 ? start + 1 : nil, count: count - 1)
    switch selector {
    case 0:
        check(MarkPayloadReaders.readXMPPacket(payload))
    case 1:
        check(MarkPayloadReaders.readManifestStore(payload))
    case 2:
        if let value = try? CBORDecoder.decode(payload) {
            var encoded: [UInt8] = []
            encode(value, into: &encoded)
            let again = encoded.withUnsafeBytes { try? CBORDecoder.decode($0) }
            precondition(again.map { same($0, value) } ?? false, "CBOR did not survive a re-encoding: \(value)")
        }
    default:
        let plain = try? ImageValidator().validate(bytes: payload)
        let read = try? ImageValidator(readsMarks: true).validate(bytes: payload)
        precondition((plain == nil) == (read == nil), "reading marks changed whether the image is accepted")
        if var read, let plain {
            if let marks = read.marks {
                precondition([.jpeg, .png, .gif, .webp].contains(read.format), "marks read from \(read.format)")
                check(marks)
            }
            read.marks = nil
            precondition(read == plain, "reading marks changed the image's description")
        }
    }
    return 0
}

/// The bounds every ImageMarks keeps (MarkCollector's).
func check(_ marks: ImageMarks) {
    let values = marks.dataMining.map(\.value) + marks.digitalSourceTypes.map(\.value)
        + marks.trainingMining.flatMap { [$0.entry, $0.use] }
    precondition(marks.dataMining.count <= 64 && marks.digitalSourceTypes.count <= 64 && marks.trainingMining.count <= 64,
                 "more than 64 values of a kind")
    for value in values {
        precondition(!value.isEmpty && value.utf8.count <= 2_048, "a value of \(value.utf8.count) bytes")
    }
    precondition(marks.notes.count <= 18, "\(marks.notes.count) notes")
    for note in marks.notes {
        precondition(!note.isEmpty && note.count <= 201 && !note.contains("\n"), "a note that is not one short line")
    }
    _ = String(describing: marks)
}

/// Equality that takes NaN as equal to NaN (a float decoded twice is the same bits, not an equal number).
func same(_ a: CBORValue, _ b: CBORValue) -> Bool {
    switch (a, b) {
    case (.float(let x), .float(let y)): return x.bitPattern == y.bitPattern || (x.isNaN && y.isNaN)
    case (.array(let x), .array(let y)): return x.count == y.count && zip(x, y).allSatisfy(same)
    case (.map(let x), .map(let y)):
        return x.count == y.count && zip(x, y).allSatisfy { same($0.key, $1.key) && same($0.value, $1.value) }
    default: return a == b
    }
}

/// CBOR with definite lengths and the shortest heads; floats as doubles.
func encode(_ value: CBORValue, into out: inout [UInt8]) {
    func head(_ major: UInt8, _ argument: UInt64) {
        switch argument {
        case 0..<24: out.append(major << 5 | UInt8(argument))
        case 24...0xFF: out += [major << 5 | 24, UInt8(argument)]
        case 0x100...0xFFFF: out += [major << 5 | 25] + bytes(argument, 2)
        case 0x1_0000...0xFFFF_FFFF: out += [major << 5 | 26] + bytes(argument, 4)
        default: out += [major << 5 | 27] + bytes(argument, 8)
        }
    }
    func bytes(_ value: UInt64, _ count: Int) -> [UInt8] {
        (0..<count).reversed().map { UInt8(truncatingIfNeeded: value >> (8 * UInt64($0))) }
    }
    switch value {
    case .unsigned(let n): head(0, n)
    case .negative(let n): head(1, n)
    case .bytes(let data): head(2, UInt64(data.count)); out += data
    case .text(let text): head(3, UInt64(text.utf8.count)); out += Array(text.utf8)
    case .array(let items): head(4, UInt64(items.count)); for item in items { encode(item, into: &out) }
    case .map(let entries):
        head(5, UInt64(entries.count))
        for entry in entries {
            encode(entry.key, into: &out)
            encode(entry.value, into: &out)
        }
    case .bool(let flag): out.append(flag ? 0xF5 : 0xF4)
    case .null: out.append(0xF6)
    case .undefined: out.append(0xF7)
    case .simple(let number): if number < 24 { out.append(0xE0 | number) } else { out += [0xF8, number] }
    case .float(let double): out += [0xFB] + bytes(double.bitPattern, 8)
    }
}
