import Foundation
import MirrorParquet
import Testing

/// The reader reads the footer, then only the column chunks of the columns asked for, one row group at a time.
@Suite("Streaming and selection", .timeLimit(.minutes(2)))
struct StreamingTests {
    @Test("opening reads the footer alone")
    func openingReadsTheFooter() throws {
        // Given a file whose blob column is most of its bytes
        let bytes = try Fixture(name: "unselected-blob").bytes()
        let counting = CountingBytes(bytes)

        // When it is opened
        let file = try ParquetFile(source: counting)

        // Then only its ends were read: the magic, the footer's length and the footer
        let footerLength = Int(UInt32(bytes[bytes.count - 8]) | UInt32(bytes[bytes.count - 7]) << 8
            | UInt32(bytes[bytes.count - 6]) << 16 | UInt32(bytes[bytes.count - 5]) << 24)
        #expect(counting.bytesRead == 8 + 4 + footerLength)
        #expect(file.schema.columns.map(\.name) == ["url", "caption", "blob"])
    }

    @Test("reading two small columns never touches the big one's chunks")
    func readsOnlySelectedColumns() throws {
        // Given the same file, about 200 kB of blobs beside a few kB of URLs and captions
        let bytes = try Fixture(name: "unselected-blob").bytes()
        let counting = CountingBytes(bytes)
        let file = try ParquetFile(source: counting)
        let opened = counting.bytesRead

        // When the URLs and captions are read
        let (rows, error) = readAll(file, columns: ["url", "caption"])

        // Then every row came, and the reads were a few kB: nothing of the blobs
        #expect(error == nil)
        #expect(rows.count == 40)
        let read = counting.bytesRead - opened
        #expect(read > 0 && read < bytes.count / 10, "\(read) of \(bytes.count) bytes read")

        // And reading the blobs does read them, one row group (about half the file) at a time
        let before = counting.bytesRead
        let blobs = readAll(file, columns: ["blob"])
        #expect(blobs.error == nil && blobs.rows.count == 40)
        #expect(counting.bytesRead - before > bytes.count * 8 / 10)
        let largestRead = counting.rangesRead.map(\.count).max() ?? 0
        #expect(largestRead < bytes.count * 6 / 10, "one read of \(largestRead) bytes: more than a row group's chunk")
    }

    @Test("each row group's chunks are read when its rows are reached, not before")
    func rowGroupsAreReadInTurn() throws {
        let counting = CountingBytes(try Fixture(name: "laion-zstd-dict-v1").bytes())
        let file = try ParquetFile(source: counting)
        var iterator = try file.rows(columns: ["URL"]).makeIterator()
        let opened = counting.rangesRead.count

        // When the first row is read, one chunk is read (the first row group's URL column)
        _ = try iterator.next()
        #expect(counting.rangesRead.count == opened + 1)
        // and no other until the 26th row, the second row group's first
        for _ in 1..<25 { _ = try iterator.next() }
        #expect(counting.rangesRead.count == opened + 1)
        _ = try iterator.next()
        #expect(counting.rangesRead.count == opened + 2)
    }

    @Test("a column asked for twice is read once per row group and given twice")
    func sameColumnTwice() throws {
        let counting = CountingBytes(try Fixture(name: "coyo-none-plain-v1").bytes())
        let file = try ParquetFile(source: counting)
        let opened = counting.rangesRead.count
        let (rows, error) = readAll(file, columns: ["url", "url"])
        #expect(error == nil)
        #expect(rows.allSatisfy { $0.count == 2 && $0[0] == $0[1] })
        #expect(counting.rangesRead.count - opened == file.schema.rowGroupCount)
    }

    @Test("no columns: as many empty rows as the file has")
    func noColumns() throws {
        let file = try ParquetFile(url: Fixture(name: "datacomp-polars").url)
        let (rows, error) = readAll(file, columns: [])
        #expect(error == nil && rows.count == 150 && rows.allSatisfy(\.isEmpty))
    }

    @Test("iterating after an error ends the iteration")
    func afterAnError() throws {
        var bytes = try Fixture(name: "small-checksums").bytes()
        bytes[200] ^= 0xFF  // inside the first column chunk: its CRC fails
        let file = try ParquetFile(bytes: bytes)
        var iterator = try file.rows().makeIterator()
        var threw = false
        while true {
            do throws(ParquetError) {
                guard try iterator.next() != nil else { break }
            } catch {
                threw = true
                #expect(error.description.contains("CRC-32") || error.description.contains("corrupt"), "\(error)")
            }
        }
        #expect(threw)
        #expect(try iterator.next() == nil)
    }
}
