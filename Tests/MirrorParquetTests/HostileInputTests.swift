import Foundation
import MirrorParquet
import Testing

/// Files cut short, with bytes flipped, with data overwritten, and crafted to state sizes and counts they do not hold:
/// each gives a `ParquetError` with a one-line reason, or correct rows, and never a crash.
@Suite("Hostile and broken files", .timeLimit(.minutes(10)))
struct HostileInputTests {
    /// Opens and reads every column it can; returns the rows or the error, checking the error is one line.
    private func outcome(_ bytes: [UInt8], _ configuration: ParquetFile.Configuration = .init()) -> Result<[[ParquetValue]], ParquetError> {
        do throws(ParquetError) {
            let file = try ParquetFile(bytes: bytes, configuration: configuration)
            let readable = file.schema.columns.filter(\.isReadable).map(\.name)
            let (rows, error) = readAll(file, columns: readable)
            if let error { throw error }
            return .success(rows)
        } catch {
            #expect(!error.description.contains("\n") && !error.description.isEmpty, "\(error)")
            return .failure(error)
        }
    }

    private func message(_ bytes: [UInt8], _ configuration: ParquetFile.Configuration = .init()) -> String {
        if case .failure(let error) = outcome(bytes, configuration) { return error.description }
        return "(no error)"
    }

    // MARK: - Real files, damaged

    @Test("every prefix of a file is refused as not Parquet", arguments: ["small-checksums", "legacy-lists"])
    func everyPrefix(_ name: String) throws {
        let bytes = try Fixture(name: name).bytes()
        for length in 0..<bytes.count {
            guard case .failure(let error) = outcome(Array(bytes.prefix(length))) else {
                Issue.record("a prefix of \(length) bytes was read")
                continue
            }
            if case .notParquet = error {} else { Issue.record("cut at \(length): \(error)") }
        }
    }

    /// Without page checksums, zeroed bytes can be valid data (a PLAIN string of length 0): then only "no crash" can be
    /// asked. With them (pyarrow's `write_page_checksum`), every row read must be the file's.
    @Test("data cut at every point, the footer kept, never crashes; with checksums, reads only right rows",
          arguments: [("small-checksums", true), ("legacy-lists", false), ("laion-snappy-plain-v1", false),
                      ("nested-plain-v2", false)])
    func everyCutInsideTheData(_ name: String, _ hasChecksums: Bool) throws {
        // Given a file and its rows
        let bytes = try Fixture(name: name).bytes()
        let whole = try #require(try? outcome(bytes).get())
        let footerStart = bytes.count - 8 - Int(UInt32(bytes[bytes.count - 8]) | UInt32(bytes[bytes.count - 7]) << 8
            | UInt32(bytes[bytes.count - 6]) << 16 | UInt32(bytes[bytes.count - 5]) << 24)
        let step = max(1, footerStart / 1500)
        for cut in stride(from: 4, to: footerStart, by: step) {
            // When the data after `cut` is lost (zeroed), the footer intact
            var damaged = bytes
            for index in cut..<footerStart { damaged[index] = 0 }
            // Then nothing crashes; and with checksums, what is read before an error is what the file holds
            let result = outcome(damaged)
            guard hasChecksums else { continue }
            if case .success(let rows) = result { #expect(rows == whole, "cut at \(cut): rows differ without an error") }
            let file = try ParquetFile(bytes: damaged)
            var iterator = try file.rows(columns: file.schema.columns.filter(\.isReadable).map(\.name)).makeIterator()
            var index = 0
            while let row = try? iterator.next() {
                #expect(index < whole.count && row == whole[index], "cut at \(cut): row \(index) differs")
                index += 1
            }
        }
    }

    @Test("a page whose bytes changed fails its CRC-32 check rather than read wrong")
    func checksums() throws {
        // Given a file written with page checksums
        let bytes = try Fixture(name: "small-checksums").bytes()
        let whole = try outcome(bytes).get()
        let footerStart = bytes.count - 8 - Int(UInt32(bytes[bytes.count - 8]) | UInt32(bytes[bytes.count - 7]) << 8)
        var wrong = 0
        for index in 4..<footerStart {
            // When one byte of its data changes
            var damaged = bytes
            damaged[index] ^= 0x5A
            // Then every row read is right, or an error stops it
            if case .success(let rows) = outcome(damaged), rows != whole { wrong += 1 }
        }
        #expect(wrong == 0, "\(wrong) flips gave different rows without an error")
    }

    @Test("byte flips anywhere, in files of every writer, never crash", arguments: [
        "laion-none-dict-v1", "datacomp-snappy-dict-v1", "coyo-gzip-plain-v2", "nested-dict-v1", "delta-ints-v2",
        "laion-delta-none-v2", "types-plain-v2", "laion-duckdb-v2", "datacomp-polars", "legacy-lists",
    ])
    func byteFlips(_ name: String) throws {
        let bytes = try Fixture(name: name).bytes()
        var generator = SeededGenerator(seed: UInt64(name.utf8.reduce(0) { $0 &* 31 &+ UInt64($1) }))
        for _ in 0..<300 {
            var damaged = bytes
            for _ in 0..<Int.random(in: 1...3, using: &generator) {
                let index = Int.random(in: 0..<damaged.count, using: &generator)
                damaged[index] = [0x00, 0xFF, 0x7F, 0x80, damaged[index] ^ 1, UInt8.random(in: 0...255, using: &generator)]
                    .randomElement(using: &generator) ?? 0
            }
            _ = outcome(damaged)
        }
    }

    // MARK: - Crafted files

    @Test("a crafted file reads as written: the crafting is sound")
    func craftedBaseline() throws {
        #expect(try outcome(CraftedFile().bytes).get() == [[.int(1)], [.int(2)], [.int(3)], [.int(40_000)], [.int(-5)]])
        var optional = CraftedFile()
        optional.isOptional = true
        #expect(try outcome(optional.bytes).get().count == 5)
    }

    @Test("LZ4_RAW blocks, and the old LZ4 codec in Hadoop's frames or bare")
    func lz4Codecs() throws {
        let plain = try outcome(CraftedFile().bytes).get()
        var raw = CraftedFile()
        raw.codec = 7
        raw.compress = lz4LiteralBlock
        #expect(try outcome(raw.bytes).get() == plain)

        var hadoop = CraftedFile()
        hadoop.codec = 5
        hadoop.compress = { bytes in
            // Two frames: the first 8 bytes, then the rest.
            let first = lz4LiteralBlock(Array(bytes.prefix(8)))
            let second = lz4LiteralBlock(Array(bytes.dropFirst(8)))
            return bigEndian(8) + bigEndian(first.count) + first + bigEndian(bytes.count - 8) + bigEndian(second.count) + second
        }
        #expect(try outcome(hadoop.bytes).get() == plain)

        var bare = CraftedFile()
        bare.codec = 5
        bare.compress = lz4LiteralBlock
        #expect(try outcome(bare.bytes).get() == plain)

        var short = CraftedFile()
        short.codec = 7
        short.compress = { lz4LiteralBlock(Array($0.dropLast())) }
        #expect(message(short.bytes).contains("LZ4_RAW"))
    }

    @Test("unknown fields are skipped, nested structs, lists, sets and maps among them")
    func unknownFieldsSkipped() throws {
        // Given fields no version of parquet.thrift has, in the footer, a schema element, a column and a page header
        let unknown: (inout CompactWriter) -> Void = { writer in
            writer.structure(40) { inner in
                inner.listHeader(1, element: .structure, count: 2)
                inner.structBody { $0.string(1, "a"); $0.structure(2) { $0.i64(1, -1) } }
                inner.structBody { $0.i32(3, 7) }
                inner.field(2, .map)
                inner.varint(2)
                inner.bytes.append(0x8C)  // binary keys, struct values
                for key in ["k", "l"] {
                    inner.varint(1)
                    inner.bytes += Array(key.utf8)
                    inner.structBody { $0.listHeader(1, element: .i64, count: 20); for _ in 0..<20 { $0.zigzag(5) } }
                }
                inner.bytes.append(0x31)  // field 3, BOOLEAN_TRUE
                inner.bytes.append(0x47)  // field 7, DOUBLE
                inner.bytes += [UInt8](repeating: 0, count: 8)
                inner.field(8, .list)
                inner.bytes.append(0x31)  // three bools
                inner.bytes += [1, 0, 2]
            }
        }
        var file = CraftedFile()
        file.footerExtra = unknown
        file.schemaExtra = unknown
        file.columnExtra = unknown
        file.pageHeaderExtra = unknown
        // Then the rows are read as without them
        #expect(try outcome(file.bytes).get() == outcome(CraftedFile().bytes).get())
    }

    @Test("refuses, naming it, what it does not read or what cannot be")
    func craftedRefusals() throws {
        var bitPacked = CraftedFile()
        bitPacked.isOptional = true
        bitPacked.definitionLevelEncoding = 4
        #expect(message(bitPacked.bytes).contains("definition levels in encoding BIT_PACKED (deprecated), not read"))

        var bitPackedValues = CraftedFile()
        bitPackedValues.encoding = 4
        #expect(message(bitPackedValues.bytes).contains("page uses encoding BIT_PACKED (deprecated), not read"))

        var alp = CraftedFile()
        alp.encoding = 10
        #expect(message(alp.bytes).contains("page uses encoding ALP, not read"))

        var lzo = CraftedFile()
        lzo.codec = 3
        #expect(message(lzo.bytes).contains("LZO"))

        var unknownCodec = CraftedFile()
        unknownCodec.codec = 99
        #expect(message(unknownCodec.bytes).contains("compression codec 99"))

        var pastEnd = CraftedFile()
        pastEnd.chunkOffset = 1 << 40
        #expect(message(pastEnd.bytes).contains("runs past the end of the file"))

        var tooLong = CraftedFile()
        tooLong.chunkSize = 1 << 30
        #expect(message(tooLong.bytes).contains("runs past the end of the file"))

        var footerTooLong = CraftedFile()
        footerTooLong.footerLength = 1 << 30
        #expect(message(footerTooLong.bytes).hasPrefix("not a Parquet file: its footer length"))

        var encrypted = CraftedFile()
        encrypted.footerExtra = { $0.structure(8) { $0.structure(1) { _ in } } }
        #expect(message(encrypted.bytes).contains("encrypt"))
    }

    @Test("bounds every stated size and count before it allocates")
    func craftedSizes() throws {
        var hugePage = CraftedFile()
        hugePage.uncompressedPageSize = .max
        #expect(message(hugePage.bytes).contains("maxPageSize"))

        var snappyBomb = CraftedFile()
        snappyBomb.codec = 1
        snappyBomb.uncompressedPageSize = 100_000_000
        #expect(message(snappyBomb.bytes).contains("more than SNAPPY can make of it"))

        var pagePastChunk = CraftedFile()
        pagePastChunk.compressedPageSize = 1_000_000
        #expect(message(pagePastChunk.bytes).contains("the chunk has"))

        var manyValues = CraftedFile()
        manyValues.numValues = .max
        #expect(message(manyValues.bytes).contains("maxValuesPerPage"))

        var moreValuesThanBytes = CraftedFile()
        moreValuesThanBytes.numValues = 1000
        #expect(message(moreValuesThanBytes.bytes).contains("ends early"))

        var manyChildren = CraftedFile()
        manyChildren.numChildren = .max
        #expect(message(manyChildren.bytes).contains("children"))

        var hugeList = CraftedFile()
        hugeList.footerExtra = { $0.listHeader(30, element: .i64, count: 1 << 30) }
        #expect(message(hugeList.bytes).contains("a list of 1073741824 elements"))

        var deep = CraftedFile()
        deep.footerExtra = { writer in
            func nest(_ writer: inout CompactWriter, _ depth: Int) {
                writer.structure(1) { inner in if depth > 0 { nest(&inner, depth - 1) } }
            }
            writer.field(30, .structure)
            writer.structBody { nest(&$0, 200) }
        }
        #expect(message(deep.bytes).contains("nested over 64 deep"))

        let small = ParquetFile.Configuration { $0.maxFooterSize = 16 }
        #expect(message(CraftedFile().bytes, small).contains("maxFooterSize"))
    }

    @Test("a dictionary index past the dictionary, a level past the maximum, are corrupt, not read")
    func outOfRangeIndices() throws {
        // Given a column whose definition levels say 2 where the maximum is 1
        var levels = CraftedFile()
        levels.isOptional = true
        var file = levels.bytes
        // The RLE run's value byte (after 4 length bytes and the run header) is the first level.
        let pageBody = try #require(file.indices.first { file[$0...].starts(with: [2, 0, 0, 0, 10, 1]) })
        file[pageBody + 5] = 2
        #expect(message(file).contains("above 1"))
    }
}

/// A small deterministic generator (SplitMix64), so that the flips are the same every run.
struct SeededGenerator: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
