import Foundation

extension ImageResult.License {
    /// Normalises what an API says about a licence into one vocabulary, or returns `nil` when it says nothing.
    ///
    /// `code` may be an Openverse code (`by-nc-sa`, `cc0`, `pdm`), a MediaWiki `License` (`cc-by-sa-3.0-de`, `pd`)
    /// or `LicenseShortName` (`CC BY-SA 4.0`, `Public domain`), or any other text. Creative Commons licences become
    /// `cc-by`…`cc-by-nc-nd` (elements in the order by, nc, sa/nd), CC0 `cc0`, public domain (marked or
    /// declared) `pdm`, "no known copyright restrictions"/"no restrictions" `no-known-copyright`; other text
    /// becomes a lowercase slug. The version comes from `version`, else from the code, else from a
    /// creativecommons.org `url`; when `code` is `nil`, the code is read from the URL.
    public static func normalized(code: String?, version: String? = nil, url: String? = nil) -> Self? {
        let licenseURL = url.flatMap(ProviderJSON.webURL)
        let fromCode = code.flatMap(parse)
        let fromURL = licenseURL.flatMap(parseCreativeCommonsURL)
        guard let parsed = fromCode ?? fromURL else { return nil }
        let explicitVersion = version?.trimmingCharacters(in: .whitespaces)
        let resolvedVersion = (explicitVersion?.isEmpty == false ? explicitVersion : nil)
            ?? parsed.version
            ?? (fromURL?.code == parsed.code ? fromURL?.version : nil)
        return Self(code: parsed.code, version: resolvedVersion, url: licenseURL)
    }

    private static func parse(_ raw: String) -> (code: String, version: String?)? {
        let text = raw.trimmingCharacters(in: .whitespacesAndNewlines).lowercased()
        guard !text.isEmpty else { return nil }
        let tokens = text.split(whereSeparator: { " -_/,()".contains($0) }).map(String.init)
        let version = tokens.first(where: isVersion)

        if tokens.contains("cc0") || (tokens.contains("cc") && (tokens.contains("zero") || tokens.contains("0")))
            || text.contains("public domain dedication")
        {
            return ("cc0", version ?? "1.0")
        }
        if tokens == ["pd"] || tokens == ["pdm"] || text.contains("public domain") || text.hasPrefix("pd-") {
            return ("pdm", tokens == ["pdm"] ? (version ?? "1.0") : version)
        }
        if text.contains("no known copyright") || text == "no restrictions" {
            return ("no-known-copyright", nil)
        }
        if text.contains("all rights reserved") {
            return ("all-rights-reserved", nil)
        }
        if text.contains("government work") {
            return ("us-government-work", nil)
        }
        let elements = creativeCommonsElements(tokens, text: text)
        if !elements.isEmpty {
            return ("cc-" + elements.joined(separator: "-"), version)
        }
        if tokens.contains(where: { $0.hasPrefix("sampling") }) {
            return (text.contains("nc") ? "cc-nc-sampling+" : "cc-sampling+", version)
        }
        let slug = tokens.filter { !isVersion($0) }.joined(separator: "-")
        return slug.isEmpty ? nil : (slug, version)
    }

    /// `by`, `nc`, `sa`, `nd` found in a CC-style code, in canonical order; empty unless `by` is present.
    private static func creativeCommonsElements(_ tokens: [String], text: String) -> [String] {
        var set = Set<String>()
        for token in tokens {
            switch token {
            case "by", "attribution": set.insert("by")
            case "nc", "noncommercial": set.insert("nc")
            case "sa", "sharealike": set.insert("sa")
            case "nd", "noderivs", "noderivatives": set.insert("nd")
            default: break
            }
        }
        // A bare "Attribution" is a MediaWiki template, not CC BY: spelled-out names count only in the
        // Flickr form "Attribution-NonCommercial-ShareAlike License" or next to a "cc" token.
        let isCreativeCommons = tokens.contains("cc") || tokens.contains("by") || tokens.contains("license")
        guard set.contains("by"), isCreativeCommons else { return [] }
        return ["by", "nc", "sa", "nd"].filter(set.contains)
    }

    private static func parseCreativeCommonsURL(_ url: URL) -> (code: String, version: String?)? {
        guard let host = url.host?.lowercased(), host.hasSuffix("creativecommons.org") else { return nil }
        let parts = url.pathComponents.filter { $0 != "/" }.map { $0.lowercased() }
        guard parts.count >= 2 else { return nil }
        let version = parts.count >= 3 && isVersion(parts[2]) ? parts[2] : nil
        switch (parts[0], parts[1]) {
        case ("publicdomain", "zero"): return ("cc0", version)
        case ("publicdomain", "mark"): return ("pdm", version)
        case ("licenses", let name):
            return parse("cc-" + name).map { ($0.code, version) }
        default: return nil
        }
    }

    private static func isVersion(_ token: String) -> Bool {
        guard let first = token.first, first.isNumber, token.contains(".") else { return false }
        return token.allSatisfy { $0.isNumber || $0 == "." }
    }
}
