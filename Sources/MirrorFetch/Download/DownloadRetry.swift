import Foundation

/// An attempt that failed with another to follow, handed to the download manager's `onRetry`: the one thing the
/// manager tells as it goes (how a download ended is its completion's).
public struct DownloadRetry: Sendable, Hashable {
    /// The image.
    public var url: URL
    /// The attempt that follows (2 for the first retry).
    public var attempt: Int
    /// How long until it starts.
    public var delay: Duration
    /// Why the last one failed (`http-503`, `timeout`, …).
    public var reason: String

    public init(url: URL, attempt: Int, delay: Duration, reason: String) {
        self.url = url
        self.attempt = attempt
        self.delay = delay
        self.reason = reason
    }
}
