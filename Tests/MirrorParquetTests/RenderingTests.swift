import Foundation
import MirrorParquet
import Testing

/// How values render: JSON for lists and scalars, the text columns as themselves, errors as one line.
@Suite("Rendering")
struct RenderingTests {
    @Test("lists render as compact JSON arrays")
    func lists() {
        let boxes = ParquetValue.list([.list([.double(0.1), .double(0.2), .double(0.3), .double(0.4)])])
        #expect(boxes.jsonText == "[[0.1,0.2,0.3,0.4]]")
        #expect(ParquetValue.list([]).jsonText == "[]")
        #expect(ParquetValue.list([.null, .list([]), .int(-3), .uint(18_446_744_073_709_551_615)]).jsonText
            == "[null,[],-3,18446744073709551615]")
        #expect(ParquetValue.list([.bool(true), .string("a")]).jsonText == "[true,\"a\"]")
    }

    @Test("strings escape what JSON requires and keep the rest")
    func strings() throws {
        let text = "quote \" backslash \\ tab\t newline\n control \u{01} café 東京 😀 \u{2028}"
        let json = ParquetValue.string(text).jsonText
        #expect(json == "\"quote \\\" backslash \\\\ tab\\t newline\\n control \\u0001 café 東京 😀 \u{2028}\"")
        #expect(try JSONDecoder().decode(String.self, from: Data(json.utf8)) == text)
        #expect(ParquetValue.string(text).description == text)
    }

    @Test("doubles render exactly, and non-finite ones as null")
    func doubles() throws {
        for value in [0.1, 1e-5, 1e300, -0.0, .leastNonzeroMagnitude, 123_456_789.125, Double(Float(0.3))] {
            let json = ParquetValue.double(value).jsonText
            #expect(try JSONDecoder().decode(Double.self, from: Data(json.utf8)) == value, "\(json)")
        }
        #expect(ParquetValue.double(.nan).jsonText == "null")
        #expect(ParquetValue.double(-.infinity).jsonText == "null")
    }

    @Test("bytes render as base64")
    func bytes() {
        #expect(ParquetValue.bytes([0, 1, 2, 254, 255]).jsonText == "\"AAEC/v8=\"")
        #expect(ParquetValue.bytes([]).jsonText == "\"\"")
    }

    @Test("accessors")
    func accessors() {
        #expect(ParquetValue.string("x").stringValue == "x")
        #expect(ParquetValue.int(3).stringValue == nil)
        #expect(ParquetValue.uint(7).int64Value == 7)
        #expect(ParquetValue.uint(.max).int64Value == nil)
        #expect(ParquetValue.int(2).doubleValue == 2)
        #expect(ParquetValue.null.isNull)
    }

    @Test("timestamps, dates, times and decimals read as pyarrow renders them")
    func temporalAndDecimal() throws {
        // Given the types file's first row, whose expected values the fixture script rendered from pyarrow
        let fixture = Fixture(name: "types-plain-v2")
        let (columns, expected) = try fixture.expected()
        let rows = readAll(try ParquetFile(url: fixture.url), columns: columns).rows
        for name in ["date", "ts_ms", "ts_us_utc", "ts_ns", "time_ms", "time_us", "dec_9_2", "dec_38_10"] {
            let index = try #require(columns.firstIndex(of: name))
            // Then each is the same text
            for (row, want) in zip(rows, expected) {
                guard case .string(let text) = want[index] else { continue }
                #expect(row[index] == .string(text), "\(name)")
            }
        }
        // And an instant before 1970 and a date before year 1000 keep their digits and zone
        let first = try #require(rows.first)
        #expect(first[try #require(columns.firstIndex(of: "ts_ns"))].stringValue?.hasSuffix("Z") == true)
    }

    @Test("schema descriptions are one line per column")
    func schemaDescription() throws {
        let schema = try ParquetFile(url: Fixture(name: "nested-struct-map").url).schema
        #expect(schema["pair"]?.description == "pair: struct (not read) (nullable)")
        #expect(schema["labels"]?.description == "labels: map (not read) (nullable)")
        #expect(schema["deep"]?.description == "deep: list<list<list<int64?>?>?> (nullable)")
        #expect(schema["required_lists"]?.description == "required_lists: list<double>")
        #expect(schema.description.split(separator: "\n").count == schema.columns.count + 1)
    }
}
