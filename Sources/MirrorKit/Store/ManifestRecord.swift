import Foundation

/// One line of `manifest.jsonl`: one saved image, with where it came from and what it is.
///
/// Fields that a source does not know are left out of the line. Lines are JSON objects with sorted
/// keys, so manifests of separate runs or shards merge by concatenation.
public struct ManifestRecord: Codable, Sendable, Hashable {
    public var file: String
    public var url: String
    public var pageURL: String?
    public var provider: String?
    public var id: String?
    public var title: String?
    public var creator: String?
    public var license: String?
    public var licenseURL: String?
    public var width: Int
    public var height: Int
    public var bytes: Int64
    public var sha256: String
    public var format: String
    public var query: String?
    public var fetchedAt: Date

    enum CodingKeys: String, CodingKey {
        case file, url, provider, id, title, creator, license, width, height, bytes, sha256, format, query
        case pageURL = "page_url"
        case licenseURL = "license_url"
        case fetchedAt = "fetched_at"
    }

    public init(
        file: String, url: String, pageURL: String? = nil, provider: String? = nil, id: String? = nil,
        title: String? = nil, creator: String? = nil, license: String? = nil, licenseURL: String? = nil,
        width: Int, height: Int, bytes: Int64, sha256: String, format: String, query: String? = nil, fetchedAt: Date
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
    }

    /// The record as one line of JSON, newline included.
    public func jsonLine() throws -> Data {
        var data = try Self.encoder.encode(self)
        data.append(0x0A)
        return data
    }

    /// Reads a manifest's lines; lines that are not records (a torn last line, say) are skipped.
    public static func read(from url: URL) -> [ManifestRecord] {
        guard let data = try? Data(contentsOf: url) else { return [] }
        return data.split(separator: 0x0A).compactMap { try? decoder.decode(ManifestRecord.self, from: Data($0)) }
    }

    private static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        return encoder
    }()

    private static let decoder: JSONDecoder = {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return decoder
    }()
}
