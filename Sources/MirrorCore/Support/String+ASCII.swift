/// Small string operations on the per-image path, done natively: Foundation's `trimmingCharacters(in:)` and
/// `caseInsensitiveCompare(_:)` bridge through `NSString` on Linux, and together cost 2–3 % of a run's samples.
extension StringProtocol {
    /// The text without leading and trailing spaces and tabs (what `CharacterSet.whitespaces` trims on one line).
    package func trimmingSpaces() -> String {
        let scalars = unicodeScalars
        // CharacterSet.whitespaces: the tab and the space separators (Zs).
        let isSpace: (Unicode.Scalar) -> Bool = { $0 == " " || $0 == "\t" || $0.properties.generalCategory == .spaceSeparator }
        guard let first = scalars.firstIndex(where: { !isSpace($0) }), let last = scalars.lastIndex(where: { !isSpace($0) }) else {
            return ""
        }
        return String(String.UnicodeScalarView(scalars[first...last]))
    }

    /// Whether the text equals `other` when ASCII letters are compared without case (`other` must be lowercase ASCII).
    package func equalsIgnoringASCIICase(_ lowercased: String) -> Bool {
        utf8.elementsEqual(lowercased.utf8) { byte, expected in
            byte == expected || (byte >= 0x41 && byte <= 0x5A && byte | 0x20 == expected)
        }
    }
}
