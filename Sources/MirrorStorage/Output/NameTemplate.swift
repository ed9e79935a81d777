import Foundation
import MirrorImages

/// A file-name template such as `{provider}-{id}.{ext}` or `{index}-{title}-{sha8}.{ext}`.
///
/// Placeholders: `{provider}`, `{id}`, `{title}`, `{index}` (1-based position in the folder, zero-padded
/// to 5 digits), `{sha8}` (the first 8 hex digits of the SHA-256), `{ext}` (from the bytes). Each value
/// is sanitised on its own and the whole name once more, so no value can smuggle in a path separator,
/// `..` or a control character. When the template has no `{ext}`, `.ext` is appended.
public struct NameTemplate: Sendable, Hashable {
    public let pattern: String

    static let placeholders = ["provider", "id", "title", "index", "sha8", "ext"]

    public init(_ pattern: String) {
        self.pattern = pattern
    }

    /// Checks a pattern: known placeholders only, and at least one that differs per image.
    public static func validate(_ pattern: String) throws(TemplateError) {
        var rest = Substring(pattern)
        var names: [String] = []
        while let open = rest.firstIndex(of: "{") {
            guard let close = rest[open...].firstIndex(of: "}") else { throw TemplateError(message: "unclosed '{' in --name \(pattern)") }
            names.append(String(rest[rest.index(after: open)..<close]))
            rest = rest[rest.index(after: close)...]
        }
        if let unknown = names.first(where: { !placeholders.contains($0) }) {
            throw TemplateError(message: "unknown placeholder {\(unknown)} in --name; use \(placeholders.map { "{\($0)}" }.joined(separator: " "))")
        }
        guard names.contains(where: { ["id", "index", "sha8"].contains($0) }) else {
            let example = pattern.replacingOccurrences(of: "{ext}", with: "").trimmingCharacters(in: CharacterSet(charactersIn: ".-_ "))
            throw TemplateError(
                message: "--name '\(pattern)' would give two images one name: add {id}, {index} or {sha8}, which differ per image "
                    + "(e.g. --name '\(example.isEmpty ? "" : example + "-"){id}.{ext}')"
            )
        }
    }

    /// The file name for one image.
    public func render(provider: String, id: String, title: String?, index: Int, sha256: String, format: ImageFormat) -> String {
        let values: [String: String] = [
            "provider": FileNaming.sanitize(provider),
            "id": FileNaming.sanitize(id),
            "title": FileNaming.sanitize(title ?? "", fallback: "untitled"),
            "index": String(format: "%05d", index),
            "sha8": String(sha256.prefix(8)),
            "ext": format.fileExtension,
        ]
        var name = pattern
        for (key, value) in values { name = name.replacingOccurrences(of: "{\(key)}", with: value) }
        if !pattern.contains("{ext}") { name += "." + format.fileExtension }
        let ext = format.fileExtension
        let stem = name.hasSuffix("." + ext) ? String(name.dropLast(ext.count + 1)) : name
        return FileNaming.fileName(stem: stem, format: format)
    }

    /// A template that cannot be used.
    public struct TemplateError: Error, Sendable, CustomStringConvertible {
        public let message: String
        public var description: String { message }
    }
}
