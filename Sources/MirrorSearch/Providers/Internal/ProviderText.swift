import Foundation

/// Text clean-up shared by the providers: HTML to plain text, secret redaction, short error snippets.
enum ProviderText {
    /// Removes tags, decodes common entities and collapses whitespace; `nil` when nothing is left.
    static func plainText(fromHTML html: String) -> String? {
        var text = ""
        var insideTag = false
        for character in html {
            if insideTag {
                if character == ">" { insideTag = false }
            } else if character == "<" {
                insideTag = true
                text.append(" ")
            } else {
                text.append(character)
            }
        }
        text = decodeEntities(text)
        let collapsed = text.split(whereSeparator: { $0.isWhitespace }).joined(separator: " ")
        // Tags replaced by spaces leave "word ." — tidy spaces before punctuation.
        var tidy = collapsed
        for mark in [".", ",", ";", ":", ")", "!", "?"] {
            tidy = tidy.replacingOccurrences(of: " " + mark, with: mark)
        }
        tidy = tidy.replacingOccurrences(of: "( ", with: "(")
        return tidy.isEmpty ? nil : tidy
    }

    /// The first `href` in `html`, as an absolute http(s) URL (protocol-relative links become https).
    static func firstLink(inHTML html: String) -> URL? {
        guard let range = html.range(of: "href=\"") else { return nil }
        let rest = html[range.upperBound...]
        guard let end = rest.firstIndex(of: "\"") else { return nil }
        return ProviderJSON.webURL(decodeEntities(String(rest[..<end])))
    }

    static func decodeEntities(_ text: String) -> String {
        guard text.contains("&") else { return text }
        var result = ""
        var index = text.startIndex
        while index < text.endIndex {
            let character = text[index]
            if character == "&", let semicolon = text[index...].prefix(12).firstIndex(of: ";") {
                let entity = String(text[text.index(after: index)..<semicolon])
                if let decoded = decodeEntity(entity) {
                    result.append(decoded)
                    index = text.index(after: semicolon)
                    continue
                }
            }
            result.append(character)
            index = text.index(after: index)
        }
        return result
    }

    private static func decodeEntity(_ entity: String) -> String? {
        switch entity {
        case "amp": return "&"
        case "lt": return "<"
        case "gt": return ">"
        case "quot": return "\""
        case "apos": return "'"
        case "nbsp": return " "
        default:
            let scalarValue: UInt32?
            if entity.hasPrefix("#x") || entity.hasPrefix("#X") {
                scalarValue = UInt32(entity.dropFirst(2), radix: 16)
            } else if entity.hasPrefix("#") {
                scalarValue = UInt32(entity.dropFirst())
            } else {
                scalarValue = nil
            }
            return scalarValue.flatMap(Unicode.Scalar.init).map { String(Character($0)) }
        }
    }

    /// `text` with every occurrence of each secret replaced by `<redacted>`.
    static func redact(_ text: String, secrets: [String]) -> String {
        var result = text
        for secret in secrets where !secret.isEmpty {
            result = result.replacingOccurrences(of: secret, with: "<redacted>")
        }
        return result
    }

    /// A short, single-line, redacted excerpt of a response body for error messages.
    package static func snippet(_ text: String, secrets: [String], limit: Int = 200) -> String {
        let oneLine = text.split(whereSeparator: { $0.isNewline || $0 == "\t" }).joined(separator: " ")
            .trimmingCharacters(in: .whitespaces)
        let cleaned = String(oneLine.unicodeScalars.filter { $0.value >= 0x20 && $0.value != 0x7F }.map(Character.init))
        let redacted = redact(cleaned, secrets: secrets)
        return redacted.count > limit ? String(redacted.prefix(limit)) + "…" : redacted
    }

    /// The MIME type implied by a file name or URL path extension, or `nil`.
    package static func mimeType(forPathOf url: URL?) -> String? {
        guard let ext = url?.pathExtension.lowercased(), !ext.isEmpty else { return nil }
        return mimeType(forExtension: ext)
    }

    package static func mimeType(forExtension ext: String) -> String? {
        switch ext.lowercased() {
        case "jpg", "jpeg", "jpe": return "image/jpeg"
        case "png": return "image/png"
        case "gif": return "image/gif"
        case "webp": return "image/webp"
        case "svg": return "image/svg+xml"
        case "tif", "tiff": return "image/tiff"
        case "bmp": return "image/bmp"
        default: return nil
        }
    }

    /// Normalises a MIME type: lowercased, parameters dropped, and a bare `image/` (Google) treated as unknown.
    static func normalizedMIME(_ text: String?) -> String? {
        guard let text else { return nil }
        let base = text.split(separator: ";").first.map(String.init)?.trimmingCharacters(in: .whitespaces).lowercased() ?? ""
        let parts = base.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, !parts[0].isEmpty, !parts[1].isEmpty else { return nil }
        return base
    }
}
