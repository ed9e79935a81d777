import Foundation

/// Where the next page of a search starts; each provider picks the kind its API paginates by.
///
/// Providers hand out their first cursor as ``ImageProvider/initialCursor`` and every later one as
/// ``SearchPage/next``; callers treat cursors as opaque and pass them back unchanged.
public enum PageCursor: Sendable, Hashable, Codable {
    /// A 1-based page number (Openverse, Flickr, Pexels, Unsplash, Pixabay).
    case page(Int)
    /// A 0-based item offset (Giphy, and Google Custom Search as `start - 1`).
    case offset(Int)
    /// An opaque set of parameters echoed back to the API, such as MediaWiki's `continue` object; empty means the first page.
    case token([String: String])
}
