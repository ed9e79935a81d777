import Foundation
@testable import MirrorKit
@testable import MirrorTables
@testable import MirrorModel
import MirrorTestSupport
import Testing

/// Tables as a careless exporter or a hostile hand writes them (issue 43): bytes that are not UTF-8, quotes left open,
/// lines of any length. Row N is key N whatever the bytes; a table that cannot be split into rows is an error naming
/// its line; a line or field over its bound is a bad row, skipped without being held.
@Suite("Hostile tables")
struct HostileTableTests {
    private let folder = TemporaryFolder()

    private func write(_ bytes: [UInt8], as name: String) throws -> String {
        let file = folder.url.appendingPathComponent(name)
        try Data(bytes).write(to: file)
        return file.path
    }

    private func write(_ text: String, as name: String) throws -> String {
        try write(Array(text.utf8), as: name)
    }

    private func rows(_ path: String, format: TableFormat? = nil, columns: TableColumns = TableColumns()) throws -> [TableRow] {
        let reader = try TableReader(path: path, format: format, columns: columns)
        var rows: [TableRow] = []
        while let row = try reader.next() { rows.append(row) }
        return rows
    }

    private func reason(_ row: TableRow) -> String? {
        if case let .failure(problem) = row.url { return problem.reason }
        return nil
    }

    private func url(_ row: TableRow) -> String? {
        (try? row.url.get())?.absoluteString
    }

    // MARK: Bytes that are not UTF-8

    @Test("a cp1252 byte in a quoted field and in an unquoted one: every row kept, the caption read as Windows-1252")
    func windows1252BytesKeepEveryRowAndItsKey() throws {
        // Given a CSV exported as Windows-1252: é (0xE9) inside a quoted caption, è (0xE8) in an unquoted one
        var bytes = Array("url,caption\nhttps://a.test/0.jpg,\"caf".utf8) + [0xE9] + Array(" au lait, chaud\"\n".utf8)
        bytes += Array("https://a.test/1.jpg,plain\nhttps://a.test/2.jpg,cr".utf8) + [0xE8] + Array("me\nhttps://a.test/3.jpg,last\n".utf8)
        let path = try write(bytes, as: "cp1252.csv")

        // When it is read
        let rows = try rows(path)

        // Then the four rows are there, row N keyed N with its own URL, and the captions keep every character
        #expect(rows.count == 4)
        #expect(rows.map(\.key) == ["000000000", "000000001", "000000002", "000000003"])
        #expect(rows.map(url) == (0..<4).map { "https://a.test/\($0).jpg" })
        #expect(rows.map(\.place) == ["row 1", "row 2", "row 3", "row 4"])
        #expect(rows.first?.caption == "café au lait, chaud")
        #expect(rows.count > 2 && rows[2].caption == "crème")
    }

    @Test("valid UTF-8 and stray bytes in one field: each character kept, the UTF-8 as UTF-8, the rest as Windows-1252")
    func mixedUTF8AndStrayBytesKeepEachCharacter() throws {
        // Given a caption holding ï as UTF-8 (C3 AF), then é (E9) and € (80) as Windows-1252, and a kept column likewise
        var bytes = Array("url,caption,note\nhttps://a.test/0.jpg,\"na\u{EF}ve caf".utf8) + [0xE9, 0x20, 0x80] + Array("\",".utf8)
        bytes += [0x93] + Array("quoted".utf8) + [0x94] + Array("\nhttps://a.test/1.jpg,ok,ok\n".utf8)
        let path = try write(bytes, as: "mixed.csv")

        // When it is read keeping the note
        let rows = try rows(path, columns: TableColumns(keep: ["note"]))

        // Then both rows are there, with every character
        #expect(rows.count == 2)
        #expect(rows.first?.caption == "naïve café €")
        #expect(rows.first?.columns == [KeptColumn(name: "note", json: #""“quoted”""#)])
        #expect(rows.map(url) == ["https://a.test/0.jpg", "https://a.test/1.jpg"])
    }

    @Test("URL bytes that are not UTF-8 are percent-encoded as themselves (%E9), in text lists and CSV")
    func urlBytesThatAreNotUTF8AreSentAsThemselves() throws {
        // Given the same file name as one Windows-1252 byte, in a text list and in a CSV, and once as UTF-8
        let list = try write(Array("https://a.test/caf".utf8) + [0xE9] + Array(".jpg\nhttps://a.test/caf\u{E9}.jpg\n".utf8), as: "list.txt")
        let csv = try write(Array("url\n\"https://a.test/caf".utf8) + [0xE9] + Array(".jpg\"\n".utf8), as: "t.csv")

        // When they are read
        let listed = try rows(list)
        let tabled = try rows(csv)

        // Then the byte is sent as %E9 (not as U+FFFD's %EF%BF%BD), and UTF-8 as its UTF-8 bytes, as Foundation encodes it
        #expect(listed.map(url) == ["https://a.test/caf%E9.jpg", "https://a.test/caf%C3%A9.jpg"])
        #expect(tabled.map(url) == ["https://a.test/caf%E9.jpg"])
        // And the file is named after the segment read as a table's text is (Foundation decodes it to nothing)
        #expect(listed.compactMap { try? $0.url.get() }.map(FileNaming.stem(of:)) == ["café", "café"])
    }

    @Test("a JSONL line that is not UTF-8 is not JSON: a bad row with its line")
    func aJSONLLineThatIsNotUTF8IsABadRow() throws {
        // Given a JSONL line holding a Windows-1252 byte inside a string, between two good lines
        let bytes = Array(#"{"url":"https://a.test/0.jpg"}"#.utf8) + [0x0A] + Array(#"{"url":"https://a.test/caf"#.utf8) + [0xE9]
            + Array(#".jpg"}"#.utf8) + [0x0A] + Array(#"{"url":"https://a.test/2.jpg"}"#.utf8) + [0x0A]
        let path = try write(bytes, as: "t.jsonl")

        // When it is read
        let rows = try rows(path)

        // Then the middle line is a bad row saying why, and the others keep their positions
        #expect(rows.count == 3)
        #expect(rows.count == 3 && rows[1].place == "line 2")
        #expect(rows.count == 3 && reason(rows[1])?.hasPrefix("not UTF-8, so not JSON") == true, "\(rows.map(reason))")
        #expect(rows.map(url) == ["https://a.test/0.jpg", nil, "https://a.test/2.jpg"])
    }

    @Test("JSON nested past the bound says so, with the bound")
    func overDeepJSONSaysWhatHappened() throws {
        // Given a JSONL line nested 600 arrays deep inside its object, and a good line after it
        let deep = #"{"url":"https://a.test/0.jpg","x":"# + String(repeating: "[", count: 600) + String(repeating: "]", count: 600) + "}"
        let path = try write(deep + "\n" + #"{"url":"https://a.test/1.jpg"}"# + "\n", as: "deep.jsonl")

        // When it is read
        let rows = try rows(path)

        // Then the deep line is a bad row that names the nesting and its bound, not "not a JSON object"
        #expect(rows.count == 2)
        #expect(rows.first.flatMap(reason) == "JSON nested deeper than 512 arrays and objects")
        #expect(rows.last.flatMap(url) == "https://a.test/1.jpg")
    }

    // MARK: Quotes

    @Test("a quote left open on line 2 of 300 rows is an error naming line 2, not one row swallowing the rest")
    func anOpenQuoteIsAnErrorNamingItsLine() throws {
        // Given a CSV whose first data row (line 2) opens a quote it never closes, then 300 rows
        var text = "url,caption\nhttps://a.test/0.jpg,\"never closed\n"
        for index in 1...300 { text += "https://a.test/\(index).jpg,row \(index)\n" }
        let path = try write(text, as: "open.csv")

        // When it is read
        let reader = try TableReader(path: path)
        var read = 0

        // Then no row comes, and the error names the line the quote opened on and where the table ended
        #expect {
            while try reader.next() != nil { read += 1 }
        } throws: { error in
            "\(error)" == "\(path): a quoted field opened on line 2 is still open at the end of the table (line 302); close the quote or fix the row"
        }
        #expect(read == 0)
    }

    @Test("the rows before an open quote are read before its error")
    func theRowsBeforeAnOpenQuoteAreRead() throws {
        // Given three good rows, then a quote opened on line 5 and never closed
        let path = try write("url\nhttps://a.test/0.jpg\nhttps://a.test/1.jpg\nhttps://a.test/2.jpg\n\"https://a.test/3.jpg\nhttps://a.test/4.jpg\n", as: "late.csv")

        // When it is read
        let reader = try TableReader(path: path)
        var read: [String?] = []
        #expect {
            while let row = try reader.next() { read.append(url(row)) }
        } throws: { error in
            "\(error)".contains("opened on line 5")
        }

        // Then the three rows came first
        #expect(read == ["https://a.test/0.jpg", "https://a.test/1.jpg", "https://a.test/2.jpg"])
    }

    @Test("a quoted field that runs past 1 MiB is an error naming its line, read without being held")
    func aQuotedFieldPastTheBoundIsAnError() throws {
        // Given a quoted caption of 1.5 MiB (closed, but past the field bound) on line 3
        let long = String(repeating: "x", count: 3 << 19)
        let path = try write("url,caption\nhttps://a.test/0.jpg,ok\nhttps://a.test/1.jpg,\"\(long)\"\nhttps://a.test/2.jpg,ok\n", as: "long.csv")

        // When it is read
        let reader = try TableReader(path: path)
        var read = 0

        // Then the row before it comes, then the error naming line 3 and the bound
        #expect {
            while try reader.next() != nil { read += 1 }
        } throws: { error in
            "\(error)".hasPrefix("\(path): a quoted field opened on line 3 runs past 1 MiB")
        }
        #expect(read == 1)
    }

    @Test("text after a closing quote is kept, not mangled")
    func textAfterAClosingQuoteIsKept() throws {
        // Given a caption quoted only in part ("Best" cat), which RFC 4180 does not allow
        let path = try write("url,caption\nhttps://a.test/0.jpg,\"Best\" cat\nhttps://a.test/1.jpg,ok\n", as: "partly.csv")

        // When it is read
        let rows = try rows(path)

        // Then the field is its text without the quotes (as Python's csv reads it); CSV.swift made it `Best"cat`
        #expect(rows.map(\.caption) == ["Best cat", "ok"])
    }

    // MARK: Bounds

    @Test("an unquoted field over 1 MiB is a bad row with its place; the rows after it are intact")
    func aLongFieldIsABadRow() throws {
        // Given a CSV whose second row has an unquoted caption of 1.5 MiB
        let long = String(repeating: "y", count: 3 << 19)
        let path = try write("url,caption\nhttps://a.test/0.jpg,a\nhttps://a.test/1.jpg,\(long)\nhttps://a.test/2.jpg,c\n", as: "wide.csv")

        // When it is read
        let rows = try rows(path)

        // Then that row is bad, with its place and the bound, and keyed where it stands
        #expect(rows.count == 3)
        #expect(rows.map(url) == ["https://a.test/0.jpg", nil, "https://a.test/2.jpg"])
        #expect(rows.count == 3 && rows[1].place == "row 2" && rows[1].key == "000000001")
        #expect(rows.count == 3 && reason(rows[1]) == "the row is longer than 1 MiB (it starts on line 3)")
        #expect(rows.last?.caption == "c")
    }

    @Test("a line over 1 MiB in a text list or JSONL, and a URL over 64 KiB, are bad rows with their place")
    func longLinesAndURLsAreBadRows() throws {
        // Given a text list and a JSONL table, each with a 2 MiB line and a line whose URL is 100 KiB
        let huge = "https://a.test/" + String(repeating: "a", count: 2 << 20)
        let long = "https://a.test/" + String(repeating: "b", count: 100 << 10)
        let list = try write("https://a.test/0.jpg\n\(huge)\n\(long)\nhttps://a.test/3.jpg\n", as: "long.txt")
        let jsonl = try write([#"{"url":"https://a.test/0.jpg"}"#, #"{"url":"\#(huge)"}"#, #"{"url":"\#(long)"}"#, #"{"url":"https://a.test/3.jpg"}"#].joined(separator: "\n"), as: "long.jsonl")

        for path in [list, jsonl] {
            // When each is read
            let rows = try rows(path)

            // Then the long line and the long URL are bad rows in their places; the others are intact
            #expect(rows.map(url) == ["https://a.test/0.jpg", nil, nil, "https://a.test/3.jpg"], "\(path)")
            #expect(rows.map(\.place) == ["line 1", "line 2", "line 3", "line 4"])
            #expect(rows.count == 4 && reason(rows[1]) == "the line is longer than 1 MiB", "\(rows.map(reason))")
            #expect(rows.count == 4 && reason(rows[2]) == "the URL is longer than 64 KiB (102,415 bytes)", "\(rows.map(reason))")
        }
    }

    @Test("a 100 MB line in a gzip table is a bad row, read without holding more than the bound")
    func aHundredMegabyteLineInAGzipTableIsSkippedWithFlatMemory() throws {
        // Given a gzipped text list: a URL, one line of 100 MB, a URL
        let path = folder.url.appendingPathComponent("huge.txt.gz").path
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", "{ printf 'https://a.test/0.jpg\\nhttps://a.test/'; head -c 100000000 /dev/zero | tr '\\000' a; printf '\\nhttps://a.test/2.jpg\\n'; } | gzip -1 > '\(path)'"]
        try process.run()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)

        // When it is read
        let reader = try TableReader(path: path)
        var rows: [TableRow] = []
        while let row = try reader.next() { rows.append(row) }

        // Then the long line is a bad row between two good ones, and the reader never held much more than 1 MiB of it
        #expect(reader.isGzip)
        #expect(rows.map(url) == ["https://a.test/0.jpg", nil, "https://a.test/2.jpg"])
        #expect(rows.count == 3 && reason(rows[1]) == "the line is longer than 1 MiB")
        #expect(reader.peakHeldBytes <= (1 << 20) + 512 * 1024, "held \(reader.peakHeldBytes) bytes")
    }
}
