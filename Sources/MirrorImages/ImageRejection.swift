/// Why ``ImageValidator`` refused a body: the reason a download does not count as an image.
///
/// Each case carries enough context for a one-line CLI summary, and ``description`` is that line
/// (`"truncated JPEG: no EOI marker"`). Cases are `Equatable` so tests and callers can match exactly.
public enum ImageRejection: Error, Sendable, Equatable, CustomStringConvertible {
    /// What kind of text a non-image body looked like.
    public enum TextKind: String, Sendable, Equatable {
        /// Starts with `{` or `[` after optional whitespace: an API error object, typically.
        case json
        /// Starts with `<` but is not HTML: an XML error document (S3's `<Error>`, RSS, SVG…).
        case xml
        /// Mostly printable text of no recognised kind.
        case plain
    }

    /// The body had no bytes at all.
    case empty
    /// The body is an HTML page (an error page, a login wall, a CDN challenge).
    case html
    /// The body is text other than HTML.
    case text(TextKind)
    /// No known image signature; `prefix` is the lowercase hex of the first (up to 16) bytes, space-separated.
    case unknownFormat(prefix: String)
    /// The body starts as an image of the given format but ends early; the detail says where.
    case truncated(ImageFormat, String)
    /// The body starts as an image of the given format but its structure is invalid; the detail says how.
    case malformed(ImageFormat, String)
    /// The header declares more pixels than the validator's limit allows (a decompression bomb guard).
    case tooManyPixels(width: Int, height: Int, limit: Int)

    /// A short sentence for a CLI summary line, such as `"truncated PNG: no IEND chunk"`.
    public var description: String {
        switch self {
        case .empty:
            "empty body"
        case .html:
            "HTML page, not an image"
        case .text(let kind):
            switch kind {
            case .json: "JSON text, not an image"
            case .xml: "XML text, not an image"
            case .plain: "plain text, not an image"
            }
        case .unknownFormat(let prefix):
            prefix.isEmpty ? "unknown format" : "unknown format (starts with \(prefix))"
        case .truncated(let format, let detail):
            "truncated \(format.displayName): \(detail)"
        case .malformed(let format, let detail):
            "malformed \(format.displayName): \(detail)"
        case .tooManyPixels(let width, let height, let limit):
            "too many pixels: \(width)x\(height) exceeds the limit of \(limit)"
        }
    }
}
