import Foundation

/// A list of image URLs as people write them: one per line, blank lines and `#` comments ignored.
public struct URLList: Sendable, Hashable {
    /// A line that is not an `http`/`https` URL.
    public struct InvalidLine: Sendable, Hashable, CustomStringConvertible {
        public var number: Int
        public var text: String
        public var description: String { "line \(number): not an http(s) URL: \(text.prefix(200))" }
    }

    /// The URLs, in order, each once (by normalised URL).
    ///
    /// Kept as text and made into `URL`s as they are read: a 100,000-line list then costs a few MB less.
    public var urls: LazyMapCollection<[String], URL> {
        // Every string here parsed as an http(s) URL when the list was read, so parsing again succeeds.
        lines.lazy.map { URL(string: $0)! }
    }

    private var lines: [String]
    /// Lines that were neither blank, a comment, nor a URL.
    public var invalidLines: [InvalidLine]
    /// URLs that appeared again and were dropped.
    public var repeatedCount: Int

    /// Parses a list. A line may also hold a URL followed by whitespace and other text, which is ignored.
    public init(parsing text: String) {
        var lines: [String] = []
        var invalid: [InvalidLine] = []
        var seen: Set<String> = []
        var repeated = 0
        var number = 0
        text.enumerateLines { line, _ in
            number += 1
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            guard !trimmed.isEmpty, !trimmed.hasPrefix("#") else { return }
            let candidate = String(trimmed.split(whereSeparator: { $0 == " " || $0 == "\t" }).first ?? "")
            guard let url = URL(string: candidate), let scheme = url.scheme?.lowercased(),
                  scheme == "http" || scheme == "https", let host = url.host, !host.isEmpty else {
                invalid.append(InvalidLine(number: number, text: trimmed))
                return
            }
            let key = CacheKey(url: url).normalizedURL
            if seen.insert(key).inserted {
                lines.append(candidate)
            } else {
                repeated += 1
            }
        }
        self.lines = lines
        invalidLines = invalid
        repeatedCount = repeated
    }
}
