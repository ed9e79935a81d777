import Foundation

/// One page of normalised results, the cursor of the page after it, and whether there is one.
///
/// `next` is non-`nil` exactly when `continuation` is ``Continuation/more``.
public struct SearchPage: Sendable, Hashable {
    /// Why a page is, or is not, followed by another.
    public enum Continuation: Sendable, Hashable {
        /// Another page can be requested with ``SearchPage/next``.
        case more
        /// The API has no more results for this query.
        case exhausted
        /// More results exist but the provider's hard cap forbids asking for them (for example Openverse's 20 pages).
        case capped
    }

    /// The usable results of this page, in the API's rank order; unusable items (no image URL) are dropped.
    public var results: [ImageResult]
    /// The cursor of the following page, or `nil` when `continuation` is not ``Continuation/more``.
    public var next: PageCursor?
    /// Whether another page follows, and if not, why.
    public var continuation: Continuation
    /// The total number of results the API claims, or `nil` when it does not say (it may exceed what is reachable).
    public var reportedTotal: Int?

    /// Creates a page; `reportedTotal` defaults to `nil`. A `next` cursor is dropped unless `continuation` is `.more`.
    public init(results: [ImageResult], next: PageCursor?, continuation: Continuation, reportedTotal: Int? = nil) {
        self.results = results
        self.next = continuation == .more ? next : nil
        self.continuation = next == nil && continuation == .more ? .exhausted : continuation
        self.reportedTotal = reportedTotal
    }
}
