import Foundation
import MirrorImages

/// One line of `manifest.jsonl`: one saved image, with where it came from and what it is.
///
/// This type is the manifest's schema, the one definition the writer (``jsonLine()``, the only one), the readers and
/// the tests share. Every line
/// holds every field of ``Field/all``, in that order, each with one JSON type: a field whose value is unknown (a
/// URL-list image has no provider, an API may name no creator) is written as `null`, never left out, so pyarrow,
/// pandas and Hugging Face `datasets` infer one column type per field. Manifests of separate runs or shards merge by
/// concatenation.
public struct ManifestRecord: Decodable, Sendable, Hashable {
    /// The file's name inside the output folder.
    public var file: String
    /// The image URL it was downloaded from.
    public var url: String
    /// The human-readable page about the image (for attribution), or `nil`.
    public var pageURL: String?
    /// The provider's registry name (`openverse`, …), or `nil` for an image from a URL list.
    public var provider: String?
    /// The provider's id of the image, or `nil`.
    public var id: String?
    /// The image's title, or `nil`.
    public var title: String?
    /// Who made it, or `nil`.
    public var creator: String?
    /// The licence code and version (`cc-by 4.0`), or `nil`.
    public var license: String?
    /// The licence deed or terms page, or `nil`.
    public var licenseURL: String?
    /// Width in pixels, read from the file's header.
    public var width: Int
    /// Height in pixels, read from the file's header.
    public var height: Int
    /// The file's size in bytes.
    public var bytes: Int64
    /// The SHA-256 of the file's bytes, lowercase hex.
    public var sha256: String
    /// The format sniffed from the bytes (`jpeg`, `png`, …).
    public var format: String
    /// The search query that found it, or `nil` for an image from a URL list.
    public var query: String?
    /// When its download finished (UTC).
    public var fetchedAt: Date
    /// The table row it came from (its position, zero-padded: `000000042`), or `nil` for a search.
    public var key: String?
    /// The row's caption, or `nil`.
    public var caption: String?
    /// The class it belongs to (the query of a `--queries` run), or `nil`.
    public var label: String?
    /// The width as served, before any resize (the same as ``width`` when the file is the download itself).
    public var originalWidth: Int
    /// The height as served, before any resize.
    public var originalHeight: Int
    /// The format as served (`png` for a PNG stored as JPEG).
    public var originalFormat: String
    /// The size in bytes as served.
    public var originalBytes: Int64
    /// How many of the row's boxes were blurred (`--blur-col`; 0 when it gave none), or `nil` when the run blurs none.
    public var blurredBoxes: Int?
    /// What the image looks like: the PDQ hash of the download, 64 hex digits (`--dedup near`), or `nil` when it was
    /// not hashed.
    public var pdq: String?
    /// PDQ's quality of ``pdq`` (0–100), or `nil`.
    public var pdqQuality: Int?
    /// PDQ hashes of the image's centre without 1.5, 3 and 4.5 % of each border, or `nil` with no ``pdq``.
    public var pdqTrimmed: [String]?
    /// The computation that made ``pdq`` and ``pdqTrimmed`` (``PerceptualHash/version``), or `nil` with no ``pdq``; a
    /// record with a hash but no version was hashed by version 1.
    public var pdqVersion: Int?
    /// The purpose the run matched reservations against (`ai-train`, …), or `nil` for a record an earlier mirror wrote.
    public var purpose: String?
    /// Whether the image declares a machine made it (``ImageDeclarations/isGenerated``).
    public var generated: Bool
    /// The digital source type the image declares (an IPTC NewsCodes URI), or `nil`.
    public var sourceType: String?
    /// Where it declares it: `iptc` (its XMP) or `c2pa` (its Content Credentials), or `nil`.
    public var sourceTypeFrom: String?
    /// Whether the image carried a C2PA manifest store (read; its signature is not validated).
    public var c2pa: Bool
    /// Reservations read for it that `--ignore-opt-out` set aside (`content-signal ai-train=no (robots.txt, group *)`),
    /// or `nil` when none were.
    public var optOutsIgnored: [String]?
    /// Columns carried from the table (`--keep-cols`), written after the schema's fields under their own names.
    public var columns: [KeptColumn] = []

    /// The manifest's fields, in the order every line holds them.
    enum CodingKeys: String, CodingKey, CaseIterable {
        case file = "file_name"
        case url
        case pageURL = "page_url"
        case provider, id, title, creator, license
        case licenseURL = "license_url"
        case width, height, bytes, sha256, format, query
        case fetchedAt = "fetched_at"
        case key, caption, label
        case originalWidth = "original_width"
        case originalHeight = "original_height"
        case originalFormat = "original_format"
        case originalBytes = "original_bytes"
        case blurredBoxes = "blurred_boxes"
        case pdq
        case pdqQuality = "pdq_quality"
        case pdqTrimmed = "pdq_trimmed"
        case pdqVersion = "pdq_version"
        case purpose, generated
        case sourceType = "source_type"
        case sourceTypeFrom = "source_type_from"
        case c2pa
        case optOutsIgnored = "opt_outs_ignored"
    }

    private enum LegacyKeys: String, CodingKey {
        case file
    }

    /// One field of the schema: its key, its JSON type, whether it may be `null`, and what it means.
    public struct Field: Sendable, Hashable {
        /// The JSON type of a field's value (besides `null` for a nullable field).
        public enum JSONType: String, Sendable, Hashable {
            case string, integer, boolean
            case strings = "array of strings"
        }

        /// The JSON key.
        public var key: String
        /// The JSON type of its value.
        public var type: JSONType
        /// When the value is `null`, or `nil` for a field that is never `null`.
        public var nullWhen: String?
        /// What it means.
        public var meaning: String

        /// The schema, in line order; the README's table says the same.
        public static let all: [Field] = [
            Field(.file, type: .string, meaning: "the file's path inside the output folder (the name `imagefolder` reads)"),
            Field(.url, type: .string, meaning: "the image URL it was downloaded from"),
            Field(.pageURL, type: .string, nullWhen: "the source names no page", meaning: "the page about the image, for attribution"),
            Field(.provider, type: .string, nullWhen: "a URL list", meaning: "the provider that found it (`openverse`, …)"),
            Field(.id, type: .string, nullWhen: "a URL list", meaning: "the provider's id of the image"),
            Field(.title, type: .string, nullWhen: "the source gives none", meaning: "the image's title"),
            Field(.creator, type: .string, nullWhen: "the source names no one", meaning: "who made it"),
            Field(.license, type: .string, nullWhen: "the source does not say", meaning: "licence code and version (`cc-by 4.0`)"),
            Field(.licenseURL, type: .string, nullWhen: "the source gives none", meaning: "the licence deed or terms"),
            Field(.width, type: .integer, meaning: "width in pixels, from the file's header"),
            Field(.height, type: .integer, meaning: "height in pixels, from the file's header"),
            Field(.bytes, type: .integer, meaning: "the file's size"),
            Field(.sha256, type: .string, meaning: "SHA-256 of the file, lowercase hex"),
            Field(.format, type: .string, meaning: "the format sniffed from the bytes (`jpeg`, `png`, …)"),
            Field(.query, type: .string, nullWhen: "a URL list", meaning: "the search query that found it"),
            Field(.fetchedAt, type: .string, meaning: "when the download finished, ISO 8601 UTC"),
            Field(.key, type: .string, nullWhen: "a search", meaning: "the table row it came from: its position from 0, nine digits (`000000042`)"),
            Field(.caption, type: .string, nullWhen: "the row has none", meaning: "the row's caption column"),
            Field(.label, type: .string, nullWhen: "not a `--queries` run", meaning: "its class: the query whose folder holds it"),
            Field(.originalWidth, type: .integer, meaning: "width as served, before `--resize` (the same as `width` when the file is the download)"),
            Field(.originalHeight, type: .integer, meaning: "height as served, before `--resize`"),
            Field(.originalFormat, type: .string, meaning: "the format as served (`png` for a PNG stored as JPEG)"),
            Field(.originalBytes, type: .integer, meaning: "the size as served, in bytes"),
            Field(.blurredBoxes, type: .integer, nullWhen: "no `--blur-col`", meaning: "how many of the row's boxes were blurred (0 when it gave none)"),
            Field(.pdq, type: .string, nullWhen: "not hashed (`--dedup exact` or `none`, or not decodable)", meaning: "what the image looks like: its PDQ hash as served, 64 hex digits"),
            Field(.pdqQuality, type: .integer, nullWhen: "not hashed", meaning: "PDQ's quality of that hash, 0-100 (under 50: matched within 26 bits rather than 31; 0, a flat image: never)"),
            Field(.pdqTrimmed, type: .strings, nullWhen: "not hashed", meaning: "PDQ hashes of its centre without 1.5, 3 and 4.5 % of each border (copies trimmed at the edges match one)"),
            Field(.pdqVersion, type: .integer, nullWhen: "not hashed (a record with `pdq` but none was hashed by version 1, which mirror hashes again when it next compares the folder)", meaning: "the computation that made the hashes: 2, PDQ of the picture averaged onto a fixed grid (hashes of two versions are not comparable)"),
            Field(.purpose, type: .string, nullWhen: "written by an earlier mirror, which read no reservations", meaning: "the purpose reservations were matched against (`--purpose`: `ai-train`, `ai-input`, `search`, `archive`)"),
            Field(.generated, type: .boolean, meaning: "whether the image declares a machine made it (IPTC digital source type `trainedAlgorithmicMedia`, `compositeWithTrainedAlgorithmicMedia` or `algorithmicMedia`, in its XMP or its C2PA manifest)"),
            Field(.sourceType, type: .string, nullWhen: "the image declares none", meaning: "the digital source type it declares, an IPTC NewsCodes URI"),
            Field(.sourceTypeFrom, type: .string, nullWhen: "the image declares none", meaning: "where it declares it: `iptc` (XMP) or `c2pa` (Content Credentials)"),
            Field(.c2pa, type: .boolean, meaning: "whether it carried a C2PA manifest store (read; its signature is not validated)"),
            Field(.optOutsIgnored, type: .strings, nullWhen: "none was set aside", meaning: "reservations `--ignore-opt-out` set aside for it: signal, value and where each was read"),
        ]

        /// The names no `--keep-cols` column may take (they are the schema's).
        public static var reservedNames: Set<String> { Set(all.map(\.key)) }

        init(_ key: CodingKeys, type: JSONType, nullWhen: String? = nil, meaning: String) {
            self.key = key.rawValue
            self.type = type
            self.nullWhen = nullWhen
            self.meaning = meaning
        }
    }

    public init(
        file: String, url: String, pageURL: String? = nil, provider: String? = nil, id: String? = nil,
        title: String? = nil, creator: String? = nil, license: String? = nil, licenseURL: String? = nil,
        width: Int, height: Int, bytes: Int64, sha256: String, format: String, query: String? = nil, fetchedAt: Date,
        key: String? = nil, caption: String? = nil, label: String? = nil, originalWidth: Int? = nil, originalHeight: Int? = nil,
        originalFormat: String? = nil, originalBytes: Int64? = nil, blurredBoxes: Int? = nil, hashes: PictureHashes? = nil,
        declarations: ImageDeclarations = ImageDeclarations(), columns: [KeptColumn] = []
    ) {
        self.file = file
        self.url = url
        self.pageURL = pageURL
        self.provider = provider
        self.id = id
        self.title = title
        self.creator = creator
        self.license = license
        self.licenseURL = licenseURL
        self.width = width
        self.height = height
        self.bytes = bytes
        self.sha256 = sha256
        self.format = format
        self.query = query
        self.fetchedAt = fetchedAt
        self.key = key
        self.caption = caption
        self.label = label
        // Unless told otherwise, the file is the download itself.
        self.originalWidth = originalWidth ?? width
        self.originalHeight = originalHeight ?? height
        self.originalFormat = originalFormat ?? format
        self.originalBytes = originalBytes ?? bytes
        self.blurredBoxes = blurredBoxes
        pdq = hashes?.whole.hex
        pdqQuality = hashes?.quality
        pdqTrimmed = hashes?.trimmed.map(PerceptualHash.hex)
        pdqVersion = hashes == nil ? nil : PerceptualHash.version
        purpose = declarations.purpose?.rawValue
        generated = declarations.isGenerated
        sourceType = declarations.sourceType
        sourceTypeFrom = declarations.sourceTypeFrom?.rawValue
        c2pa = declarations.hasC2PAManifest
        optOutsIgnored = declarations.ignored.isEmpty ? nil : declarations.ignored.map(\.summary)
        self.columns = columns
    }

    /// The hashes in ``pdq`` (with ``pdqQuality``) and ``pdqTrimmed`` (those that read), when there is a ``pdq``.
    public var pictureHashes: PictureHashes? {
        guard let whole = pdq.flatMap({ PerceptualHash(hex: $0, quality: pdqQuality ?? 0) }) else { return nil }
        return PictureHashes(whole: whole, trimmed: (pdqTrimmed ?? []).compactMap { PerceptualHash.bits(hex: $0) })
    }

    /// Whether the record's hashes were made by another computation than this mirror's (``PerceptualHash/version``):
    /// not comparable until they are made again.
    public var hasStaleHashes: Bool {
        pdq != nil && (pdqVersion ?? 1) != PerceptualHash.version
    }

    /// A manifest line with its hashes replaced by `hashes` of this mirror's computation (``pdqVersion`` set), every
    /// other byte as it was; nil when the line holds no hashes as ``jsonLine()`` writes them. (In JSON text a quote
    /// inside a string is escaped, so `"pdq":"` is only ever the key.)
    package static func line(_ line: Data, replacingHashesWith hashes: PictureHashes) -> Data? {
        let text = String(decoding: line, as: UTF8.self)
        guard text.utf8.elementsEqual(line) else { return nil }  // kept as bytes, never repaired
        let pattern = #""pdq":"[0-9a-f]{64}","pdq_quality":-?[0-9]+,"pdq_trimmed":(null|\[[^\]]*\])(,"pdq_version":[0-9]+|,"pdq_version":null)?"#
        guard let range = text.range(of: pattern, options: .regularExpression) else { return nil }
        let hexes = hashes.trimmed.map { "\"" + PerceptualHash.hex($0) + "\"" }.joined(separator: ",")
        let fields = #""pdq":"\#(hashes.whole.hex)","pdq_quality":\#(hashes.quality),"pdq_trimmed":[\#(hexes)],"pdq_version":\#(PerceptualHash.version)"#
        return Data(text.replacingCharacters(in: range, with: fields).utf8)
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        if let file = try container.decodeIfPresent(String.self, forKey: .file) {
            self.file = file
        } else {
            // Manifests written before 0.15 named it `file`.
            file = try decoder.container(keyedBy: LegacyKeys.self).decode(String.self, forKey: .file)
        }
        url = try container.decode(String.self, forKey: .url)
        pageURL = try container.decodeIfPresent(String.self, forKey: .pageURL)
        provider = try container.decodeIfPresent(String.self, forKey: .provider)
        id = try container.decodeIfPresent(String.self, forKey: .id)
        title = try container.decodeIfPresent(String.self, forKey: .title)
        creator = try container.decodeIfPresent(String.self, forKey: .creator)
        license = try container.decodeIfPresent(String.self, forKey: .license)
        licenseURL = try container.decodeIfPresent(String.self, forKey: .licenseURL)
        width = try container.decode(Int.self, forKey: .width)
        height = try container.decode(Int.self, forKey: .height)
        bytes = try container.decode(Int64.self, forKey: .bytes)
        sha256 = try container.decode(String.self, forKey: .sha256)
        format = try container.decode(String.self, forKey: .format)
        query = try container.decodeIfPresent(String.self, forKey: .query)
        fetchedAt = try container.decode(Date.self, forKey: .fetchedAt)
        key = try container.decodeIfPresent(String.self, forKey: .key)
        caption = try container.decodeIfPresent(String.self, forKey: .caption)
        label = try container.decodeIfPresent(String.self, forKey: .label)
        // Records written before 0.24 have no format or bytes as served, and no size unless the image was resized.
        originalWidth = try container.decodeIfPresent(Int.self, forKey: .originalWidth) ?? width
        originalHeight = try container.decodeIfPresent(Int.self, forKey: .originalHeight) ?? height
        originalFormat = try container.decodeIfPresent(String.self, forKey: .originalFormat) ?? format
        originalBytes = try container.decodeIfPresent(Int64.self, forKey: .originalBytes) ?? bytes
        blurredBoxes = try container.decodeIfPresent(Int.self, forKey: .blurredBoxes)
        pdq = try container.decodeIfPresent(String.self, forKey: .pdq)
        pdqQuality = try container.decodeIfPresent(Int.self, forKey: .pdqQuality)
        pdqTrimmed = try container.decodeIfPresent([String].self, forKey: .pdqTrimmed)
        pdqVersion = try container.decodeIfPresent(Int.self, forKey: .pdqVersion)
        // Records an earlier mirror wrote say nothing of consent or provenance.
        purpose = try container.decodeIfPresent(String.self, forKey: .purpose)
        generated = try container.decodeIfPresent(Bool.self, forKey: .generated) ?? false
        sourceType = try container.decodeIfPresent(String.self, forKey: .sourceType)
        sourceTypeFrom = try container.decodeIfPresent(String.self, forKey: .sourceTypeFrom)
        c2pa = try container.decodeIfPresent(Bool.self, forKey: .c2pa) ?? false
        optOutsIgnored = try container.decodeIfPresent([String].self, forKey: .optOutsIgnored)
    }

    /// The record as one line of JSON, newline included.
    ///
    /// Keys are written in schema order (Foundation's encoder orders keys by hash or alphabetically, never by
    /// declaration); strings that need escaping are escaped by `JSONEncoder`. The line is built as bytes: building it
    /// as a `String` of fragments, with the timestamp from `ISO8601FormatStyle`, was 2.5 % of `mirror urls`'s samples.
    public func jsonLine() throws -> Data {
        var line = LineWriter()
        try line.field(.file, file)
        try line.field(.url, url)
        try line.field(.pageURL, pageURL)
        try line.field(.provider, provider)
        try line.field(.id, id)
        try line.field(.title, title)
        try line.field(.creator, creator)
        try line.field(.license, license)
        try line.field(.licenseURL, licenseURL)
        line.field(.width, width)
        line.field(.height, height)
        line.field(.bytes, bytes)
        try line.field(.sha256, sha256)
        try line.field(.format, format)
        try line.field(.query, query)
        line.field(.fetchedAt, timestamp: fetchedAt)
        try line.field(.key, key)
        try line.field(.caption, caption)
        try line.field(.label, label)
        line.field(.originalWidth, originalWidth)
        line.field(.originalHeight, originalHeight)
        try line.field(.originalFormat, originalFormat)
        line.field(.originalBytes, originalBytes)
        line.field(.blurredBoxes, blurredBoxes)
        try line.field(.pdq, pdq)
        line.field(.pdqQuality, pdqQuality)
        try line.field(.pdqTrimmed, strings: pdqTrimmed)
        line.field(.pdqVersion, pdqVersion)
        try line.field(.purpose, purpose)
        line.field(.generated, generated)
        try line.field(.sourceType, sourceType)
        try line.field(.sourceTypeFrom, sourceTypeFrom)
        line.field(.c2pa, c2pa)
        try line.field(.optOutsIgnored, strings: optOutsIgnored)
        for column in columns {
            try line.field(name: column.name, json: column.json)
        }
        return line.finish()
    }

    /// A string as JSON text (`null` for `nil`).
    package static func jsonText(_ value: String?) throws -> String {
        var text: [UInt8] = []
        try LineWriter.quote(value, into: &text)
        return String(decoding: text, as: UTF8.self)
    }

    /// Writes one line of JSON: `{`, then fields in the order they are given, then `}` and a newline.
    private struct LineWriter {
        private var bytes: [UInt8] = [UInt8(ascii: "{")]

        init() {
            bytes.reserveCapacity(768)
        }

        mutating func field(_ key: CodingKeys, _ value: String?) throws {
            self.key(key.rawValue)
            try Self.quote(value, into: &bytes)
        }

        mutating func field(_ key: CodingKeys, _ value: some BinaryInteger) {
            self.key(key.rawValue)
            bytes.append(contentsOf: String(value).utf8)
        }

        /// Strings as a JSON array, or `null`.
        mutating func field(_ key: CodingKeys, strings: [String]?) throws {
            self.key(key.rawValue)
            guard let strings else {
                bytes.append(contentsOf: "null".utf8)
                return
            }
            bytes.append(UInt8(ascii: "["))
            for (index, string) in strings.enumerated() {
                if index > 0 { bytes.append(UInt8(ascii: ",")) }
                try Self.quote(string, into: &bytes)
            }
            bytes.append(UInt8(ascii: "]"))
        }

        mutating func field(_ key: CodingKeys, _ value: Bool) {
            self.key(key.rawValue)
            bytes.append(contentsOf: (value ? "true" : "false").utf8)
        }

        mutating func field(_ key: CodingKeys, _ value: Int?) {
            self.key(key.rawValue)
            bytes.append(contentsOf: (value.map(String.init) ?? "null").utf8)
        }

        /// UTC to the second, as JSONEncoder's `.iso8601` writes it (`2026-11-24T19:00:00Z`).
        mutating func field(_ key: CodingKeys, timestamp: Date) {
            self.key(key.rawValue)
            var seconds = time_t(timestamp.timeIntervalSince1970.rounded(.down))
            var parts = tm()
            gmtime_r(&seconds, &parts)
            bytes.append(UInt8(ascii: "\""))
            digits(Int(parts.tm_year) + 1900, 4)
            bytes.append(UInt8(ascii: "-"))
            digits(Int(parts.tm_mon) + 1, 2)
            bytes.append(UInt8(ascii: "-"))
            digits(Int(parts.tm_mday), 2)
            bytes.append(UInt8(ascii: "T"))
            digits(Int(parts.tm_hour), 2)
            bytes.append(UInt8(ascii: ":"))
            digits(Int(parts.tm_min), 2)
            bytes.append(UInt8(ascii: ":"))
            digits(Int(parts.tm_sec), 2)
            bytes.append(contentsOf: "Z\"".utf8)
        }

        /// A kept column: its name quoted, its value as the JSON text it already is.
        mutating func field(name: String, json: String) throws {
            bytes.append(UInt8(ascii: ","))
            try Self.quote(name, into: &bytes)
            bytes.append(UInt8(ascii: ":"))
            bytes.append(contentsOf: json.utf8)
        }

        /// A string as JSON text, `null` for `nil`. Most values need no escaping at all (no quote, backslash or
        /// control character): quoted as they are, which is what JSONEncoder writes for them too.
        static func quote(_ value: String?, into bytes: inout [UInt8]) throws {
            guard let value else {
                bytes.append(contentsOf: "null".utf8)
                return
            }
            if value.utf8.allSatisfy({ $0 >= 0x20 && $0 != UInt8(ascii: "\"") && $0 != UInt8(ascii: "\\") }) {
                bytes.append(UInt8(ascii: "\""))
                bytes.append(contentsOf: value.utf8)
                bytes.append(UInt8(ascii: "\""))
            } else {
                bytes.append(contentsOf: try ManifestRecord.encoder.encode(value))
            }
        }

        consuming func finish() -> Data {
            bytes.append(contentsOf: "}\n".utf8)
            return Data(bytes)
        }

        private mutating func key(_ key: String) {
            if bytes.count > 1 { bytes.append(UInt8(ascii: ",")) }
            bytes.append(UInt8(ascii: "\""))
            bytes.append(contentsOf: key.utf8)
            bytes.append(contentsOf: "\":".utf8)
        }

        /// `value` in decimal, zero-padded to `width` digits.
        private mutating func digits(_ value: Int, _ width: Int) {
            let text = String(value)
            if text.utf8.count < width { bytes.append(contentsOf: repeatElement(UInt8(ascii: "0"), count: width - text.utf8.count)) }
            bytes.append(contentsOf: text.utf8)
        }
    }

    /// Reads a manifest's lines; lines that are not records (a torn last line, say) are skipped.
    public static func read(from url: URL) -> [ManifestRecord] {
        guard let data = try? Data(contentsOf: url) else { return [] }
        return data.split(separator: 0x0A).compactMap(decode)
    }

    /// Decodes one line, or `nil` when it is not a record (a failed row of a shard's `.jsonl`, a torn line).
    public static func decode(_ line: some DataProtocol) -> ManifestRecord? {
        try? decoder.decode(ManifestRecord.self, from: Data(line))
    }

    private static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        return encoder
    }()

    private static let decoder: JSONDecoder = {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return decoder
    }()
}

/// A column carried from the table into each record (`--keep-cols`): its name and its value as JSON text.
public struct KeptColumn: Sendable, Hashable {
    /// The column's name.
    public var name: String
    /// Its value as JSON text: a CSV field is a JSON string, a JSONL value is written as it was; `null` when absent.
    public var json: String

    public init(name: String, json: String) {
        self.name = name
        self.json = json
    }
}
