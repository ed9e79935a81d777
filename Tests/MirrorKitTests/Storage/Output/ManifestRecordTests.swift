import Foundation
import MirrorImages
@testable import MirrorCore
@testable import MirrorFetch
@testable import MirrorKit
@testable import MirrorModel
@testable import MirrorSearch
@testable import MirrorStorage
import Testing

/// The manifest schema: one definition (``ManifestRecord``), written in full on every line, documented in the README.
@Suite("Manifest schema")
struct ManifestRecordTests {
    private let known = ManifestRecord(
        file: "openverse-1.png", url: "https://a.test/1.png", pageURL: "https://a.test/p/1", provider: "openverse", id: "1",
        title: "A \"quoted\" <title>\n", creator: "Ann", license: "cc-by 4.0", licenseURL: "https://creativecommons.org/licenses/by/4.0/",
        width: 640, height: 480, bytes: 12_345, sha256: String(repeating: "ab", count: 32), format: "png", query: "kittens",
        fetchedAt: Date(timeIntervalSince1970: 1_700_000_000), blurredBoxes: 2,
        hashes: PictureHashes(
            whole: PerceptualHash(hex: "d8f8f0cee0f4a84f0637022a078f67f0b36e2ed596621e1d33e6339c4e9c9b22", quality: 87)!,
            trimmed: [SIMD4(1, 2, 3, 4)]
        ),
        declarations: ImageDeclarations(
            purpose: .aiTrain, sourceType: "http://cv.iptc.org/newscodes/digitalsourcetype/trainedAlgorithmicMedia", sourceTypeFrom: .c2pa,
            hasC2PAManifest: true,
            ignored: [ConsentEvidence(signal: .contentSignal, value: "ai-train=no", location: "robots.txt, group *", term: .contentSignal(category: "ai-train", allowed: false))]
        )
    )
    private let unknown = ManifestRecord(
        file: "1.png", url: "https://a.test/1.png", width: 1, height: 2, bytes: 3, sha256: String(repeating: "0", count: 64),
        format: "png", fetchedAt: Date(timeIntervalSince1970: 0)
    )

    @Test func theSchemaListsTheCodingKeysInOrder() {
        #expect(ManifestRecord.Field.all.map(\.key) == ManifestRecord.CodingKeys.allCases.map(\.rawValue))
        // Exactly the optional properties may be null
        #expect(ManifestRecord.Field.all.filter { $0.nullWhen != nil }.map(\.key) == ["page_url", "provider", "id", "title", "creator", "license", "license_url", "query", "key", "caption", "label", "blurred_boxes", "pdq", "pdq_quality", "pdq_trimmed", "pdq_version", "purpose", "source_type", "source_type_from", "opt_outs_ignored"])
    }

    @Test func aLineHoldsEveryKeyInOrderAndNullForTheUnknown() throws {
        // When both records are written
        for record in [known, unknown] {
            let line = String(decoding: try record.jsonLine(), as: UTF8.self)

            // Then each is one line with every key in schema order
            #expect(line.hasSuffix("}\n"))
            #expect(line.dropLast().contains("\n") == false)
            var position = line.startIndex
            for field in ManifestRecord.Field.all {
                let found = try #require(line.range(of: "\"\(field.key)\":", range: position..<line.endIndex), "\(field.key) in \(line)")
                position = found.upperBound
            }
            // And it reads back as the same record
            let decoder = JSONDecoder()
            decoder.dateDecodingStrategy = .iso8601
            #expect(try decoder.decode(ManifestRecord.self, from: Data(line.utf8)) == record)
        }
        let unknownLine = String(decoding: try unknown.jsonLine(), as: UTF8.self)
        #expect(unknownLine.contains(#""provider":null,"id":null,"title":null,"creator":null,"license":null,"license_url":null"#))
        #expect(unknownLine.contains(#""query":null,"fetched_at":"1970-01-01T00:00:00Z","key":null,"caption":null,"label":null,"original_width":1,"original_height":2,"original_format":"png","original_bytes":3,"blurred_boxes":null,"pdq":null,"pdq_quality":null,"pdq_trimmed":null,"pdq_version":null,"purpose":null,"generated":false,"source_type":null,"source_type_from":null,"c2pa":false,"opt_outs_ignored":null}"#))
        // Strings are escaped by JSONEncoder, slashes left alone
        let knownLine = String(decoding: try known.jsonLine(), as: UTF8.self)
        #expect(knownLine.contains(#""title":"A \"quoted\" <title>\n""#))
        #expect(knownLine.contains(#""url":"https://a.test/1.png""#))
        #expect(knownLine.contains(#""pdq":"d8f8f0cee0f4a84f0637022a078f67f0b36e2ed596621e1d33e6339c4e9c9b22","pdq_quality":87,"pdq_trimmed":["0000000000000001000000000000000200000000000000030000000000000004"],"#))
        // The consent fields: the purpose, whether a machine made it and where it says so, Content Credentials, and what
        // --ignore-opt-out set aside
        #expect(knownLine.hasSuffix(#""purpose":"ai-train","generated":true,"source_type":"http://cv.iptc.org/newscodes/digitalsourcetype/trainedAlgorithmicMedia","source_type_from":"c2pa","c2pa":true,"opt_outs_ignored":["content-signal ai-train=no (robots.txt, group *)"]}"# + "\n"))
        #expect(known.pictureHashes?.trimmed == [SIMD4(1, 2, 3, 4)])
        #expect(known.pictureHashes?.whole.hex == "d8f8f0cee0f4a84f0637022a078f67f0b36e2ed596621e1d33e6339c4e9c9b22")
    }

    @Test func fastPathsWriteWhatJSONEncoderWrites() throws {
        // Given values the line writer quotes itself (plain and non-ASCII text) and a timestamp with a fraction
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        var record = unknown
        record.title = "Kätzchen 🐈 / „Katze“ \u{7F}"
        record.fetchedAt = Date(timeIntervalSince1970: 1_764_000_123.987)
        let line = String(decoding: try record.jsonLine(), as: UTF8.self)

        // Then each is exactly JSONEncoder's text for it
        #expect(line.contains("\"title\":" + String(decoding: try encoder.encode(record.title), as: UTF8.self) + ","))
        #expect(line.contains("\"fetched_at\":" + String(decoding: try encoder.encode(record.fetchedAt), as: UTF8.self) + ","))
    }

    @Test func aValueAloneIsWrittenAsJSONEncoderWritesIt() throws {
        // The shard record lines of failed rows quote their values with it
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes]
        for value in ["plain", "a \"quoted\" \\ value\n", "https://a.test/x?y=1", "", "Kätzchen"] {
            #expect(try ManifestRecord.jsonText(value) == String(decoding: try encoder.encode(value), as: UTF8.self))
        }
        #expect(try ManifestRecord.jsonText(nil) == "null")
    }

    @Test func keptColumnsFollowTheSchemaUnderTheirOwnNames() throws {
        // Given a table row's record with a caption and two kept columns, one a JSON number
        var record = unknown
        record.key = "000000042"
        record.caption = "a \"cat\""
        record.columns = [KeptColumn(name: "w", json: "640"), KeptColumn(name: "source", json: #""web""#)]
        let line = String(decoding: try record.jsonLine(), as: UTF8.self)

        // Then the columns come last, as written, and the line is one JSON object with every field
        #expect(line.hasSuffix(#""pdq_trimmed":null,"pdq_version":null,"purpose":null,"generated":false,"source_type":null,"source_type_from":null,"c2pa":false,"opt_outs_ignored":null,"w":640,"source":"web"}"# + "\n"))
        let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        #expect(object["caption"] as? String == "a \"cat\"")
        #expect(object["key"] as? String == "000000042")
        #expect(object.count == ManifestRecord.Field.all.count + 2)
    }

    @Test func theREADMEDocumentsEveryField() throws {
        // Given the README at the package root
        let readme = PackageRoot.url.appendingPathComponent("README.md")
        let text = try String(contentsOf: readme, encoding: .utf8)

        // Then its manifest table has one row per field, in schema order, with the field's type
        let section = try #require(text.range(of: "### The manifest"), "README has no '### The manifest' section")
        let rows = text[section.upperBound...].split(separator: "\n").drop { !$0.hasPrefix("|") }.prefix { $0.hasPrefix("|") }
            .filter { $0.hasPrefix("| `") }
        let keys = rows.compactMap { row -> String? in
            guard let start = row.range(of: "| `"), let end = row[start.upperBound...].firstIndex(of: "`") else { return nil }
            return String(row[start.upperBound..<end])
        }
        #expect(keys == ManifestRecord.Field.all.map(\.key))
        for (row, field) in zip(rows, ManifestRecord.Field.all) {
            #expect(row.contains(" | \(field.type.rawValue)\(field.nullWhen == nil ? "" : " or null") |"), "\(row)")
        }
    }
}
