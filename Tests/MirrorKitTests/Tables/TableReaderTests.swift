import Foundation
@testable import MirrorCore
@testable import MirrorFetch
@testable import MirrorKit
@testable import MirrorTables
@testable import MirrorModel
@testable import MirrorSearch
@testable import MirrorStorage
import MirrorTestSupport
import Testing

/// Tables of URLs: text, CSV, TSV and JSONL, gzip or not, read row by row with bad rows reported in place.
@Suite("Table reader")
struct TableReaderTests {
    private let folder = TemporaryFolder()

    private func write(_ text: String, as name: String, gzip: Bool = false) throws -> String {
        let file = folder.url.appendingPathComponent(name)
        try Data(text.utf8).write(to: file)
        guard gzip else { return file.path }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/gzip")
        process.arguments = ["-f", file.path]
        try process.run()
        process.waitUntilExit()
        return file.path + ".gz"
    }

    private func rows(_ path: String, format: TableFormat? = nil, columns: TableColumns = TableColumns()) throws -> [TableRow] {
        let reader = try TableReader(path: path, format: format, columns: columns)
        var rows: [TableRow] = []
        while let row = try reader.next() { rows.append(row) }
        return rows
    }

    private static let csv = #"""
        url,caption,width,note
        https://a.test/1.jpg,"a cat, sitting",640,x
        https://a.test/2.jpg,"two
        lines, ""quoted""",480,y

        ftp://a.test/3.jpg,bad scheme,1,z
        ,no url,2,w
        https://a.test/4.jpg,,3
        """#

    @Test func csvRowsKeepTheirPositionCaptionAndColumns() throws {
        // Given a CSV with quoted fields, a field spanning two lines, a blank line and two bad rows
        let path = try write(Self.csv, as: "t.csv")

        // When it is read keeping two columns
        let rows = try rows(path, columns: TableColumns(keep: ["width", "note"]))

        // Then every data row is there in order, keyed by position, the bad ones with their reason and place
        #expect(rows.map(\.position) == [0, 1, 2, 3, 4])
        #expect(rows.map(\.key) == ["000000000", "000000001", "000000002", "000000003", "000000004"])
        #expect(try rows[0].url.get().absoluteString == "https://a.test/1.jpg")
        #expect(rows[0].caption == "a cat, sitting")
        #expect(rows[1].caption == "two\nlines, \"quoted\"")
        #expect(rows[0].columns == [KeptColumn(name: "width", json: #""640""#), KeptColumn(name: "note", json: #""x""#)])
        #expect(rows[2].place == "row 3")
        #expect(throws: TableRow.Problem.self) { try rows[2].url.get() }
        guard case let .failure(scheme) = rows[2].url, case let .failure(empty) = rows[3].url else {
            Issue.record("rows 3 and 4 should be bad")
            return
        }
        #expect(scheme.reason == "not an http(s) URL: ftp://a.test/3.jpg")
        #expect(empty.reason == "no URL")
        // A short row reads its missing columns as null
        #expect(rows[4].columns.last == KeptColumn(name: "note", json: "null"))
        #expect(rows[4].caption == "")
    }

    @Test func gzipIsReadByContentWhateverTheName() throws {
        // Given the same CSV gzipped, named .csv.gz
        let path = try write(Self.csv, as: "t.csv", gzip: true)

        // Then it reads as the plain one does
        let plain = try rows(try write(Self.csv, as: "plain.csv"))
        let reader = try TableReader(path: path)
        #expect(reader.isGzip)
        #expect(reader.format == .csv)
        var gzipped: [TableRow] = []
        while let row = try reader.next() { gzipped.append(row) }
        #expect(gzipped == plain)
    }

    @Test("gzip members one after another (cat a.gz b.gz) read as one table")
    func concatenatedGzipMembersReadAsOne() throws {
        // Given two gzipped halves of a URL list, concatenated
        let first = try Data(contentsOf: URL(fileURLWithPath: try write("https://a.test/1.png\nhttps://a.test/2.png\n", as: "a.txt", gzip: true)))
        let second = try Data(contentsOf: URL(fileURLWithPath: try write("https://b.test/3.png\n", as: "b.txt", gzip: true)))
        let both = folder.url.appendingPathComponent("both.txt.gz")
        try (first + second).write(to: both)

        // Then every row of both reads, in order
        #expect(try rows(both.path).map { (try? $0.url.get())?.absoluteString } == ["https://a.test/1.png", "https://a.test/2.png", "https://b.test/3.png"])
    }

    @Test func corruptGzipIsAClearError() throws {
        // Given a gzipped table whose compressed bytes are altered halfway (inflating it gives other bytes, and the
        // member's CRC-32 no longer matches: what `gzip -t` reports as a "crc error")
        let text = (0..<2_000).map { "https://a.test/\(($0 &* 2_654_435_761) % 1_000_000_007).png\n" }.joined()
        var bytes = try Data(contentsOf: URL(fileURLWithPath: try write(text, as: "c.txt", gzip: true)))
        for index in bytes.count / 2..<(bytes.count / 2 + 64) { bytes[index] ^= 0x5A }
        let path = folder.url.appendingPathComponent("corrupt.txt.gz").path
        try bytes.write(to: URL(fileURLWithPath: path))

        // Then reading it ends in one error that says what to do, not in rows of garbage
        #expect {
            _ = try rows(path)
        } throws: { error in
            "\(error)".contains("gzip data is corrupt") && "\(error)".contains("gzip -t")
        }
    }

    @Test func aCutOffGzipTableIsAnErrorAfterItsWholeRows() throws {
        // Given a gzipped table of 50,000 rows cut in half
        let text = (0..<50_000).map { "https://a.test/\($0).png\n" }.joined()
        let whole = try Data(contentsOf: URL(fileURLWithPath: try write(text, as: "cut.txt", gzip: true)))
        let path = folder.url.appendingPathComponent("half.txt.gz").path
        try whole.prefix(whole.count / 2).write(to: URL(fileURLWithPath: path))

        // When it is read: rows come while the data lasts, then one error that says the file is cut off
        let reader = try TableReader(path: path)
        var read = 0
        #expect {
            while try reader.next() != nil { read += 1 }
        } throws: { error in
            "\(error)".contains("ends too soon") && "\(error)".contains("gzip -t")
        }
        #expect(read > 1_000 && read < 50_000, "\(read) rows before the error")
    }

    @Test func aLargeGzipTableStreamsInChunks() throws {
        // Given 50,000 JSONL rows gzipped (several MB of text, many 256 KiB chunks either side of the inflater)
        var text = ""
        for index in 0..<50_000 { text += #"{"url":"https://h\#(index % 7).test/\#(index).png","caption":"image number \#(index) of many"}"# + "\n" }
        let path = try write(text, as: "big.jsonl", gzip: true)

        // Then every row arrives once, in order, none cut at a chunk boundary
        let reader = try TableReader(path: path)
        var count = 0
        while let row = try reader.next() {
            #expect(try row.url.get().lastPathComponent == "\(count).png")
            #expect(row.caption == "image number \(count) of many")
            count += 1
        }
        #expect(count == 50_000)
    }

    @Test func jsonlRowsKeepTypedColumnsAndReportLinesThatDoNotParse() throws {
        // Given JSONL with a number, a nested value, a line that is not JSON and one without a URL
        let path = try write("""
            {"url": "https://a.test/1.png", "caption": "one", "score": 0.5, "tags": ["a", "b"]}
            {not json
            {"caption": "no url"}

            {"url": 7}
            {"url": "https://a.test/2.png", "text": "two"}
            """, as: "t.jsonl")

        // When read with a caption column named text for the last row, keeping score and tags
        let rows = try rows(path, columns: TableColumns(keep: ["score", "tags"]))

        // Then the values keep their JSON types and the bad lines their line numbers
        #expect(rows.count == 5)
        #expect(rows[0].columns == [KeptColumn(name: "score", json: "0.5"), KeptColumn(name: "tags", json: #"["a","b"]"#)])
        #expect(rows[1].place == "line 2")
        #expect(rows[2].place == "line 3")
        #expect(rows[3].place == "line 5")
        guard case let .failure(notJSON) = rows[1].url, case let .failure(noURL) = rows[2].url, case let .failure(notString) = rows[3].url else {
            Issue.record("lines 2, 3 and 5 should be bad")
            return
        }
        #expect(notJSON.reason.hasPrefix("not a JSON object"))
        #expect(noURL.reason == #"no "url" field"#)
        #expect(notString.reason == #""url" is not a string"#)
        #expect(rows[4].position == 4)
        #expect(rows[4].columns == [KeptColumn(name: "score", json: "null"), KeptColumn(name: "tags", json: "null")])
    }

    @Test func tsvAndTextLists() throws {
        let tsv = try write("link\ttext\r\nhttps://a.test/1.png\thello world\r\n", as: "t.tsv")
        let tsvRows = try rows(tsv, columns: TableColumns(url: "link", caption: "text"))
        #expect(tsvRows.count == 1)
        #expect(tsvRows.first?.caption == "hello world")

        let text = try write("# a comment\n\nhttps://a.test/1.png trailing words\r\nnot a url\nhttps://a.test/2.png", as: "list")
        let textRows = try rows(text)
        #expect(textRows.map(\.position) == [0, 1, 2])
        #expect(try textRows[0].url.get().absoluteString == "https://a.test/1.png")
        #expect(textRows[1].place == "line 4")
        #expect(try textRows[2].url.get().absoluteString == "https://a.test/2.png")
    }

    @Test("what CSV.swift read reads the same: a BOM, CR and CRLF line ends, quoted delimiters and line ends, TSV quoting")
    func theByteScannerReadsWhatCSVSwiftRead() throws {
        // Given a CSV with a UTF-8 byte order mark, spaces around its column names, a lone CR ending rows (an old Mac
        // export) beside CRLF, a quoted comma, a quoted CRLF, a quoted empty field and a line holding only ""
        let csv = try write("\u{FEFF} url , caption \rhttps://a.test/0.jpg,\"a, b\"\r\nhttps://a.test/1.jpg,\"line\r\nbreak\"\r\"\"\nhttps://a.test/2.jpg,\"\"\n", as: "mac.csv")
        // And a TSV whose quoted caption holds a tab, and whose unquoted one holds a quote
        let tsv = try write("url\tcaption\nhttps://a.test/0.jpg\t\"tab\there\"\nhttps://a.test/1.jpg\t5\" screen\n", as: "q.tsv")

        // When they are read
        let csvRows = try rows(csv)
        let tsvRows = try rows(tsv)

        // Then the rows, captions and places are as CSV.swift gave them
        #expect(csvRows.map { (try? $0.url.get())?.absoluteString } == ["https://a.test/0.jpg", "https://a.test/1.jpg", "https://a.test/2.jpg"])
        #expect(csvRows.map(\.caption) == ["a, b", "line\r\nbreak", ""])
        #expect(csvRows.map(\.place) == ["row 1", "row 2", "row 3"])
        #expect(tsvRows.map(\.caption) == ["tab\there", "5\" screen"])
    }

    @Test func aMissingColumnOrFileIsOneClearError() throws {
        let path = try write("link,caption\nhttps://a.test/1.png,x\n", as: "t.csv")
        #expect(throws: TableError.missingColumn(option: "--url-col", name: "url", columns: ["link", "caption"])) {
            try TableReader(path: path)
        }
        #expect(throws: TableError.missingColumn(option: "--keep-cols", name: "nope", columns: ["link", "caption"])) {
            try TableReader(path: path, columns: TableColumns(url: "link", keep: ["nope"]))
        }
        let missing = TableError.missingColumn(option: "--url-col", name: "url", columns: ["link", "caption"])
        #expect(missing.description == #"the table has no column "url"; name its column with --url-col (its columns: link, caption)"#)
        #expect(throws: TableError.self) { try TableReader(path: folder.url.appendingPathComponent("absent.csv").path) }
        let empty = try write("", as: "empty.csv")
        #expect(throws: TableError.self) { try TableReader(path: empty) }
    }

    @Test func formatsComeFromTheName() {
        #expect(TableFormat(fileName: "urls.CSV.gz") == .csv)
        #expect(TableFormat(fileName: "a.b.tsv") == .tsv)
        #expect(TableFormat(fileName: "x.jsonl.gz") == .jsonl)
        #expect(TableFormat(fileName: "x.txt") == .txt)
        #expect(TableFormat(fileName: "-") == nil)
        #expect(TableFormat(fileName: "data.parquet") == nil)
    }
}
