import Foundation

/// How long values look in messages: a URL from a table, a header or a file from the web, a line of stderr.
public enum MessageLimit {
    /// The characters of a URL a message shows (a table may hold a 5 MB one; libcurl takes up to 8 MB).
    public static let url = 200
    /// The characters of one line of stderr: the backstop for every value a message quotes (a reason, a signal's
    /// value, a row's text), whoever built it.
    public static let line = 2_000
}

extension StringProtocol {
    /// The text as a message shows it: whole up to `limit` characters (Unicode scalars, so that no one character of
    /// ten thousand combining marks slips past); longer, its first `limit`, an ellipsis and its whole length in bytes —
    /// `http://a.test/aaaa… (5,000,021 bytes)` — so that a 5 MB URL does not become a 5 MB line on stderr.
    public func cut(to limit: Int) -> String {
        let scalars = unicodeScalars
        guard let end = scalars.index(scalars.startIndex, offsetBy: limit, limitedBy: scalars.endIndex), end != scalars.endIndex else {
            return String(self)
        }
        // Grouped by hand: Foundation's number formatting loads ICU's data, megabytes for one message.
        var digits = Array(String(utf8.count))
        var index = digits.count - 3
        while index > 0 {
            digits.insert(",", at: index)
            index -= 3
        }
        return String(self[..<end]) + "… (" + String(digits) + " bytes)"
    }

    /// Each line of the text cut to `limit` (``cut(to:)``): for a message of several lines, each of which may quote a
    /// long value.
    public func cuttingLines(to limit: Int) -> String {
        split(separator: "\n", omittingEmptySubsequences: false).map { $0.cut(to: limit) }.joined(separator: "\n")
    }
}

extension URL {
    /// The URL as a message shows it: cut to ``MessageLimit/url`` characters with its length in bytes.
    public var displayed: String { absoluteString.cut(to: MessageLimit.url) }
}
