/// The version of mirror, printed by `mirror --version` and sent in every `User-Agent` (`MirrorTransport` adds the
/// libcurl version there).
public enum MirrorVersion {
    /// The semantic version of this build.
    public static let current = "0.1.0"

    /// The longest `User-Agent` accepted, in UTF-8 bytes: room for a name, a version, a URL and an address (Wikimedia's
    /// policy asks for those), far below the 8 KB a server may take for a whole header section.
    public static let maximumUserAgentBytes = 512

    /// Why `userAgent` cannot be sent as a `User-Agent` header, or `nil` when it can: it is empty, holds a control
    /// character (a CR or LF would end the header and start another), or is longer than ``maximumUserAgentBytes``.
    public static func problem(withUserAgent userAgent: String) -> String? {
        if userAgent.allSatisfy({ $0 == " " }) {
            return "is empty: name the agent, e.g. \"MyDatasetBot/1.0 (https://example.org/bot; ops@example.org)\""
        }
        if let index = userAgent.unicodeScalars.firstIndex(where: { $0.properties.generalCategory == .control }) {
            let scalar = userAgent.unicodeScalars[index]
            let position = userAgent.unicodeScalars.distance(from: userAgent.unicodeScalars.startIndex, to: index) + 1
            let code = String(scalar.value, radix: 16, uppercase: true)
            return "holds a control character (U+\(String(repeating: "0", count: max(0, 4 - code.count)))\(code), character \(position)); give printable characters only, no tab or line break"
        }
        let bytes = userAgent.utf8.count
        if bytes > maximumUserAgentBytes {
            return "is \(bytes) bytes long; at most \(maximumUserAgentBytes)"
        }
        return nil
    }
}
