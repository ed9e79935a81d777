import Foundation

/// One image found by a search, normalised from whichever API returned it.
///
/// Every provider maps its own result shape into this value, so the paginator, the download manager and the
/// manifest never see provider-specific JSON. Optional fields are `nil` when the API does not report them;
/// `tags` defaults to empty. Dimensions and byte size describe the file at `imageURL` (they may be approximate
/// for scaled renditions, see each provider) and are re-checked from the downloaded bytes anyway.
///
/// ```swift
/// let page = try provider.parse(response, cursor: cursor)
/// for result in page.results { print(result.provider, result.id, result.imageURL) }
/// ```
public struct ImageResult: Sendable, Hashable, Codable {
    /// The registry name of the provider that returned the result, for example `"openverse"`.
    public var provider: String
    /// The provider's identifier for the image, unique within that provider.
    public var id: String
    /// The image's title, or `nil` when the API has none.
    public var title: String?
    /// A plain-text description (HTML stripped), or `nil` when the API has none.
    public var description: String?
    /// The human-readable page about the image (for attribution), or `nil` when unknown.
    public var pageURL: URL?
    /// The URL of the image file to download.
    public var imageURL: URL
    /// A small preview of the image, or `nil` when the API offers none.
    public var thumbnailURL: URL?
    /// The width in pixels of the file at `imageURL`, or `nil` when not reported.
    public var width: Int?
    /// The height in pixels of the file at `imageURL`, or `nil` when not reported.
    public var height: Int?
    /// The size in bytes of the file at `imageURL`, or `nil` when not reported.
    public var byteSize: Int?
    /// The MIME type such as `"image/jpeg"`, or `nil` when unknown (a bare `"image/"` is reported as `nil`).
    public var mimeType: String?
    /// The image's licence, or `nil` when the API does not say.
    public var license: License?
    /// Who made the image, or `nil` when the API does not say.
    public var creator: Creator?
    /// Keywords attached to the image; empty by default.
    public var tags: [String]
    /// A URL the provider's terms ask to be requested once when the image is saved (Unsplash's
    /// `links.download_location`), or `nil` (most providers). The provider builds the request itself, see
    /// ``ImageProvider/downloadNotification(for:)``.
    public var downloadLocation: URL?

    /// Creates a result; every optional field defaults to `nil` and `tags` to empty.
    public init(
        provider: String,
        id: String,
        title: String? = nil,
        description: String? = nil,
        pageURL: URL? = nil,
        imageURL: URL,
        thumbnailURL: URL? = nil,
        width: Int? = nil,
        height: Int? = nil,
        byteSize: Int? = nil,
        mimeType: String? = nil,
        license: License? = nil,
        creator: Creator? = nil,
        tags: [String] = [],
        downloadLocation: URL? = nil
    ) {
        self.provider = provider
        self.id = id
        self.title = title
        self.description = description
        self.pageURL = pageURL
        self.imageURL = imageURL
        self.thumbnailURL = thumbnailURL
        self.width = width
        self.height = height
        self.byteSize = byteSize
        self.mimeType = mimeType
        self.license = license
        self.creator = creator
        self.tags = tags
        self.downloadLocation = downloadLocation
    }
}

extension ImageResult {
    /// A licence normalised across providers: a lowercase `code`, an optional `version` and the licence URL.
    ///
    /// Codes: `cc-by`, `cc-by-sa`, `cc-by-nd`, `cc-by-nc`, `cc-by-nc-sa`, `cc-by-nc-nd`, `cc0`, `pdm` (public
    /// domain, marked or declared), `no-known-copyright`, `us-government-work`, `all-rights-reserved`, the
    /// provider licences `pexels`, `unsplash`, `pixabay`, and otherwise a lowercase slug of what the API said.
    /// See ``normalized(code:version:url:)``.
    public struct License: Sendable, Hashable, Codable {
        /// The normalised licence code, for example `"cc-by-sa"`.
        public var code: String
        /// The licence version such as `"4.0"`, or `nil` when unknown or not versioned.
        public var version: String?
        /// The licence deed or terms page, or `nil` when unknown.
        public var url: URL?

        /// Creates a licence from an already normalised code; `version` and `url` default to `nil`.
        public init(code: String, version: String? = nil, url: URL? = nil) {
            self.code = code
            self.version = version
            self.url = url
        }
    }

    /// The person or organisation credited for an image: a display name and an optional profile URL.
    public struct Creator: Sendable, Hashable, Codable {
        /// The name to credit, or `nil` when only a URL is known.
        public var name: String?
        /// The creator's profile or home page, or `nil` when unknown.
        public var url: URL?

        /// Creates a creator; both fields default to `nil`.
        public init(name: String? = nil, url: URL? = nil) {
            self.name = name
            self.url = url
        }
    }
}
