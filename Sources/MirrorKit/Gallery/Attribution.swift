import Foundation
import MirrorCore

/// `DIR/ATTRIBUTION.md`: every image with its title, creator, licence and source link, grouped by licence (the
/// largest group first) — what CC BY and its kin ask of anyone who republishes the images.
public enum Attribution {
    /// The document for a collection.
    public static func markdown(for collection: SavedImages) -> String {
        var groups: [String: [SavedImages.Item]] = [:]
        for item in collection.items { groups[item.record.license ?? "unknown", default: []].append(item) }
        var text = "# Attribution\n\n"
        text += "\(collection.items.count) images in `\(escape(collection.root.lastPathComponent))`, by licence. "
        text += "Written by `mirror gallery` from the records in the folder; check each licence's terms before republishing.\n"
        for (license, items) in groups.sorted(by: { ($1.value.count, $0.key) < ($0.value.count, $1.key) }) {
            let name = GalleryPage.licenseName(license)
            let deed = items.lazy.compactMap { GalleryPage.link($0.record.licenseURL) }.first
            text += "\n## " + (deed.map { "[\(escape(name))](<\($0)>)" } ?? escape(name)) + " — \(items.count) image\(items.count == 1 ? "" : "s")\n\n"
            for item in items.sorted(by: { $0.path < $1.path }) {
                let record = item.record
                let title = escape(record.title ?? record.caption ?? "Untitled")
                var line = "- " + (GalleryPage.link(record.pageURL ?? record.url).map { "[\(title)](<\($0)>)" } ?? title)
                if let creator = record.creator { line += " by " + escape(creator) }
                line += " — `\(item.path.replacingOccurrences(of: "`", with: "'"))`"
                text += line + "\n"
            }
        }
        return text
    }

    /// Writes `DIR/ATTRIBUTION.md` whole.
    @discardableResult
    public static func write(for collection: SavedImages) throws -> URL {
        let url = collection.root.appendingPathComponent("ATTRIBUTION.md")
        try AtomicFile.replaceFile(Data(markdown(for: collection).utf8), at: url)
        return url
    }

    /// Markdown-escapes text so that a title cannot make links, emphasis, code, tables or HTML (inline: the text never
    /// starts a line, so block markers such as `#` and `-` need nothing).
    static func escape(_ text: String) -> String {
        var result = ""
        for character in text.replacingOccurrences(of: "\n", with: " ").unicodeScalars {
            if "\\`*_[]<>&|~".unicodeScalars.contains(character) { result += "\\" }
            result.unicodeScalars.append(character)
        }
        return result
    }
}
