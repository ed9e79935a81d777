import Foundation
import MirrorImages

/// Safe file names for saved images.
///
/// A name never contains a path separator, `..`, NUL or another control character, bidirectional
/// controls (which can make `gpj.exe` look like `exe.jpg`), or a leading dot (no hidden files); it is
/// at most `maximumLength` UTF-8 bytes; reserved device names (`CON`, `NUL`, `COM1`, …) are prefixed so
/// that a folder copied to another system still works. The extension always comes from the bytes.
public enum FileNaming {
    /// The longest name produced, in UTF-8 bytes (well under the 255 of common file systems). 
    public static let maximumLength = 150

    private static let reserved: Set<String> = {
        var names: Set<String> = ["CON", "PRN", "AUX", "NUL"]
        for index in 1...9 {
            names.insert("COM\(index)")
            names.insert("LPT\(index)")
        }
        return names
    }()

    /// Cleans one component of a name: keeps letters, digits and `-_.+=@,()[]` plus spaces folded to `-`.
    public static func sanitize(_ raw: String, fallback: String = "image") -> String {
        // Most stems (`openverse-1234`, a table row's `000000042`) are letters, digits and `-_.` alone, which the
        // scalar by scalar filter (``kept(_:)``) would keep as they are: skip it (it asks each scalar's Unicode category;
        // 0.6 % of `mirror urls`'s samples).
        var name = raw.utf8.allSatisfy(isPlain) ? raw : kept(raw)
        if hasDoubleDot(name) { name = collapsingDots(name) }
        name = trimmingEdges(name)
        name = truncated(name, toUTF8Bytes: maximumLength)
        name = trimmingEdges(name)
        if name.isEmpty { return fallback }
        let guarded = guardingReserved(name)
        // A reserved name's `_` must fit too (`CON.` and 146 more bytes came out 151 long: the text fuzzer).
        guard guarded.utf8.count > maximumLength else { return guarded }
        return guardingReserved(trimmingEdges(truncated(name, toUTF8Bytes: maximumLength - 1)))
    }

    /// ASCII letters, digits, `-`, `_` and `.`.
    static func isPlain(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."):
            true
        default:
            false
        }
    }

    /// `raw` without what a name must not hold: controls, separators and the characters Windows refuses; each run of
    /// them, and of whitespace, becomes one `-`.
    static func kept(_ raw: String) -> String {
        var scalars = String.UnicodeScalarView()
        var lastWasDash = false
        for scalar in raw.unicodeScalars {
            let keep: Bool
            switch scalar.properties.generalCategory {
            case .control, .format, .lineSeparator, .paragraphSeparator, .surrogate, .privateUse, .unassigned:
                keep = false
            default:
                keep = scalar != "/" && scalar != "\\" && scalar != ":" && scalar != "*" && scalar != "?"
                    && scalar != "\"" && scalar != "<" && scalar != ">" && scalar != "|"
            }
            if keep && !scalar.properties.isWhitespace {
                scalars.append(scalar)
                lastWasDash = false
            } else if !lastWasDash {
                scalars.append("-")
                lastWasDash = true
            }
        }
        return String(scalars)
    }

    /// Prefixes `_` to a name whose part before the first dot is a reserved device name (`CON.txt` too).
    static func guardingReserved(_ name: String) -> String {
        // Reserved names are three or four letters long: most stems are not, and need no closer look.
        let stemLength = name.utf8.firstIndex(of: UInt8(ascii: ".")).map { name.utf8.distance(from: name.utf8.startIndex, to: $0) } ?? name.utf8.count
        guard stemLength == 3 || stemLength == 4 else { return name }
        let stem = name.split(separator: ".", maxSplits: 1).first.map(String.init) ?? name
        return reserved.contains(stem.uppercased()) ? "_" + name : name
    }

    /// A file name `stem.ext` whose stem is sanitised and whose extension is the format's.
    ///
    /// - Parameters:
    ///   - stem: the wanted stem, such as a URL's last path segment without its extension.
    ///   - format: the format the bytes turned out to be.
    ///   - suffix: text added to the stem to tell clashing names apart, such as a short hash.
    public static func fileName(stem: String, format: ImageFormat, suffix: String? = nil) -> String {
        let ext = format.fileExtension
        let room = maximumLength - ext.utf8.count - 1 - (suffix.map { $0.utf8.count + 1 } ?? 0)
        var base = truncated(sanitize(stem), toUTF8Bytes: max(8, room))
        base = trimmingEdges(base)
        if base.isEmpty { base = "image" }
        if let suffix { base += "-" + sanitize(suffix) }
        // The trim above can strip the `_` that `sanitize` put before a reserved name.
        return guardingReserved(base + "." + ext)
    }

    /// The stem a URL suggests: its last path segment without the extension (percent-decoded).
    public static func stem(of url: URL) -> String {
        var last = url.lastPathComponent
        if last.isEmpty, let encoded = url.path(percentEncoded: true).split(separator: "/").last {
            // Escapes that are not UTF-8 (`caf%E9.jpg`, a table's Windows-1252 URL sent as its bytes): Foundation decodes
            // the segment to nothing; read its bytes as a table's text is read (`café`).
            last = String(utf8OrWindows1252: percentDecoded(encoded))
        }
        let segment = last.utf8.contains(UInt8(ascii: "%")) ? last.removingPercentEncoding ?? last : last
        guard segment != "/" && !segment.isEmpty else { return url.host ?? "image" }
        if let dot = segment.lastIndex(of: "."), dot != segment.startIndex {
            let ext = segment[segment.index(after: dot)...].lowercased()
            if ext.count <= 5 { return String(segment[..<dot]) }
        }
        return segment
    }

    /// The bytes `segment`'s percent-escapes stand for (an escape that is not one is kept as it is).
    private static func percentDecoded(_ segment: Substring) -> ArraySlice<UInt8> {
        var bytes: [UInt8] = []
        var utf8 = segment.utf8[...]
        func hex(_ byte: UInt8) -> UInt8? {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
            case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
            case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
            default: nil
            }
        }
        while let byte = utf8.popFirst() {
            if byte == UInt8(ascii: "%"), let high = utf8.first.flatMap(hex), let low = utf8.dropFirst().first.flatMap(hex) {
                bytes.append(high << 4 | low)
                utf8 = utf8.dropFirst(2)
            } else {
                bytes.append(byte)
            }
        }
        return bytes[...]
    }

    /// Whether `text` has two dots in a row (by its bytes: Foundation's `contains` bridges to `NSString` on Linux).
    /// `text` with every run of dots as one, scalar by scalar. (Replacing ".." until none was left never ended on a
    /// dot with a combining mark after it, `..\u{301}`: String searches by Character, where `.\u{301}` is not a dot,
    /// while ``hasDoubleDot(_:)`` reads bytes — a URL's last segment of 115 bytes hung the text fuzzer.)
    private static func collapsingDots(_ text: String) -> String {
        var scalars = String.UnicodeScalarView()
        var afterDot = false
        for scalar in text.unicodeScalars {
            if scalar == ".", afterDot { continue }
            afterDot = scalar == "."
            scalars.append(scalar)
        }
        return String(scalars)
    }

    private static func hasDoubleDot(_ text: String) -> Bool {
        var previous: UInt8 = 0
        for byte in text.utf8 {
            if byte == UInt8(ascii: "."), previous == byte { return true }
            previous = byte
        }
        return false
    }

    /// `text` without leading and trailing `.`, `-`, `_` and spaces.
    private static func trimmingEdges(_ text: String) -> String {
        text.trimming { $0 == "." || $0 == "-" || $0 == "_" || $0 == " " }
    }

    private static func truncated(_ text: String, toUTF8Bytes limit: Int) -> String {
        guard text.utf8.count > limit else { return text }
        var result = ""
        var used = 0
        for character in text {
            let size = character.utf8.count
            if used + size > limit { break }
            result.append(character)
            used += size
        }
        return result
    }
}
