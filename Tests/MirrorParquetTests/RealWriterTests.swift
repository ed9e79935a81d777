import Foundation
import MirrorParquet
import Testing

/// Every file the real writers made (pyarrow with each codec, dictionary on and off, data pages v1 and v2, the delta
/// and byte-stream-split encodings, every type; polars; DuckDB; the legacy list shapes) reads row for row as pyarrow
/// reads it.
@Suite("Real writers' files", .timeLimit(.minutes(5)))
struct RealWriterTests {
    @Test("reads every row as pyarrow does", arguments: Fixture.readable)
    func readsAsPyarrow(_ fixture: Fixture) throws {
        // Given a file and what pyarrow read from it
        let (columns, expected) = try fixture.expected()
        let file = try ParquetFile(url: fixture.url)

        // When its columns are read
        let (rows, error) = readAll(file, columns: columns)

        // Then every row matches, and there are as many
        #expect(error == nil, "\(error?.description ?? "")")
        #expect(rows.count == expected.count)
        #expect(Int64(expected.count) == file.schema.rowCount)
        var mismatches = 0
        for (index, (row, wanted)) in zip(rows, expected).enumerated() {
            for (column, (value, want)) in zip(columns, zip(row, wanted)) where !want.matches(value) {
                mismatches += 1
                if mismatches <= 5 { Issue.record("row \(index), \(column): read \(value.jsonText), pyarrow \(want)") }
            }
        }
        #expect(mismatches == 0)
    }

    @Test("reads the same rows from memory and from a file", arguments: Fixture.readable.filter { $0.name.hasPrefix("laion") })
    func memoryAndFileAgree(_ fixture: Fixture) throws {
        let fromFile = readAll(try ParquetFile(url: fixture.url))
        let fromMemory = readAll(try ParquetFile(bytes: try fixture.bytes()))
        #expect(fromFile.error == nil && fromMemory.error == nil)
        #expect(fromFile.rows == fromMemory.rows)
    }

    @Test("refuses encrypted files with one line naming encryption", arguments: Fixture.refused)
    func refusesEncryption(_ fixture: Fixture) throws {
        let fragment = try #require(fixture.errorFragment)
        let error: ParquetError?
        do throws(ParquetError) {
            error = readAll(try ParquetFile(url: fixture.url)).error
        } catch let opening {
            error = opening
        }
        let description = try #require(error).description
        #expect(description.lowercased().contains(fragment), "\(description)")
        #expect(!description.contains("\n"))
    }

    @Test("names the struct, the map and the list of structs it does not read, and reads the other columns")
    func unsupportedColumns() throws {
        for name in ["nested-struct-map", "legacy-lists"] {
            let fixture = Fixture(name: name)
            let file = try ParquetFile(url: fixture.url)
            for column in fixture.unsupportedColumns {
                // Given a column this reader does not read
                #expect(file.schema[column]?.isReadable == false)
                // When it is asked for, Then the error says what it is
                #expect {
                    _ = try file.rows(columns: ["row", column].filter { file.schema[$0] != nil })
                } throws: { error in
                    guard case .unsupported(let message) = error as? ParquetError else { return false }
                    return message.contains(column) && (message.contains("struct") || message.contains("map"))
                }
            }
            // And reading everything fails at once, before any row
            #expect(throws: ParquetError.self) { _ = try file.rows() }
        }
    }

    @Test("describes the schema: names, types, nullability")
    func schema() throws {
        let laion = try ParquetFile(url: Fixture(name: "laion-zstd-dict-v1").url).schema
        #expect(laion.columns.map(\.name) == ["URL", "TEXT", "WIDTH", "HEIGHT", "similarity", "hash", "punsafe", "pwatermark"])
        #expect(laion["TEXT"]?.type == .string)
        #expect(laion["TEXT"]?.isNullable == true)
        #expect(laion["hash"]?.type == .integer(bitWidth: 64, isSigned: true))
        #expect(laion["punsafe"]?.type == .float)
        #expect(laion.rowGroupCount == 4)
        #expect(laion.createdBy?.hasPrefix("parquet-cpp-arrow") == true)

        let datacomp = try ParquetFile(url: Fixture(name: "datacomp-polars").url).schema
        #expect(datacomp["face_bboxes"]?.type == .list(.list(.double, elementIsNullable: true), elementIsNullable: true))
        #expect(datacomp["face_bboxes"]?.description == "face_bboxes: list<list<double?>?> (nullable)")

        let types = try ParquetFile(url: Fixture(name: "types-dict-v1").url).schema
        #expect(types["u64"]?.type == .integer(bitWidth: 64, isSigned: false))
        #expect(types["ts_us_utc"]?.type == .timestamp(.microseconds, isAdjustedToUTC: true))
        #expect(types["dec_38_10"]?.type == .decimal(precision: 38, scale: 10))
        #expect(types["date"]?.type == .date)
        let int96 = try ParquetFile(url: Fixture(name: "types-int96").url).schema
        #expect(int96["ts"]?.type == .timestamp(.nanoseconds, isAdjustedToUTC: true))
    }

    @Test("renders DataComp's face_bboxes as a JSON array of arrays")
    func faceBoxesAsJSON() throws {
        // Given DataComp's list<list<double>> column
        let file = try ParquetFile(url: Fixture(name: "datacomp-zstd-dict-v2").url)
        let (columns, expected) = try Fixture(name: "datacomp-zstd-dict-v2").expected()
        let index = try #require(columns.firstIndex(of: "face_bboxes"))

        // When its rows are read and rendered
        let (rows, error) = readAll(file, columns: ["face_bboxes"])
        #expect(error == nil)

        // Then each renders as JSON that parses back to what pyarrow read
        for (row, want) in zip(rows, expected) {
            let text = row[0].jsonText
            let parsed = try JSONDecoder().decode(Expected.self, from: Data(text.utf8))
            #expect(parsed == want[index] || (parsed.description == want[index].description), "\(text)")
        }
        #expect(rows.contains { $0[0].jsonText.hasPrefix("[[0.") })
    }

    @Test("iterates asynchronously as it does synchronously")
    func asyncIteration() async throws {
        let file = try ParquetFile(url: Fixture(name: "coyo-snappy-dict-v2").url)
        var rows: [[ParquetValue]] = []
        for try await row in try file.rows(columns: ["url", "text"]) { rows.append(row) }
        #expect(rows == readAll(file, columns: ["url", "text"]).rows)
        #expect(rows.count == 90)
    }

    @Test("asks for an unknown column by name and lists the ones there are")
    func unknownColumn() throws {
        let file = try ParquetFile(url: Fixture(name: "laion-none-dict-v1").url)
        #expect(throws: ParquetError.noSuchColumn("caption", available: file.schema.columns.map(\.name))) {
            _ = try file.rows(columns: ["URL", "caption"])
        }
        #expect(ParquetError.noSuchColumn("caption", available: ["URL", "TEXT"]).description
            == "no column 'caption' in the Parquet file (it has 'URL', 'TEXT')")
    }
}
