import Foundation

/// What to search for: free text plus optional filters that providers pass on when their API supports them.
///
/// Filters are hints, not guarantees: a provider whose API cannot filter by, say, width ignores that filter,
/// and the download pipeline checks the real image anyway. All filters default to "no filter".
public struct SearchQuery: Sendable, Hashable {
    /// The search text, sent as typed (each provider encodes it for its API).
    public var text: String
    /// The smallest acceptable width in pixels, or `nil` (the default) for any width.
    public var minWidth: Int?
    /// The smallest acceptable height in pixels, or `nil` (the default) for any height.
    public var minHeight: Int?
    /// Acceptable normalised licence codes (see ``ImageResult/License``); empty (the default) allows any.
    public var licenses: [String]
    /// Acceptable formats as lowercase names (`jpeg`, `png`, `gif`, `webp`); empty (the default) allows any.
    public var formats: [String]

    /// Creates a query; every filter defaults to "no filter".
    public init(
        text: String,
        minWidth: Int? = nil,
        minHeight: Int? = nil,
        licenses: [String] = [],
        formats: [String] = []
    ) {
        self.text = text
        self.minWidth = minWidth
        self.minHeight = minHeight
        self.licenses = licenses
        self.formats = formats
    }
}
