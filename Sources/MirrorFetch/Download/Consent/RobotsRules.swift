import Foundation
import MirrorCore
import MirrorStorage

/// A host's `robots.txt` as RFC 9309 reads it, for one product token.
///
/// The group for the token (matched case-insensitively against each `user-agent` line) applies, or else the `*`
/// group; several groups for the same agent merge. A path is allowed unless its longest matching rule is a
/// `disallow` (an `allow` of the same length wins); `*` matches any run of characters and a final `$` anchors the
/// end. `crawl-delay` is not read: mirror's own per-host limits and backoff apply.
public struct RobotsRules: Sendable, Hashable {
    struct Rule: Sendable, Hashable {
        package var allow: Bool
        package var pattern: String
    }

    let rules: [Rule]

    /// Everything allowed (no file, or a 4xx for it).
    public static let allowAll = RobotsRules(rules: [])
    /// Nothing allowed (the file could not be fetched: RFC 9309 says assume complete disallow).
    public static let disallowAll = RobotsRules(rules: [Rule(allow: false, pattern: "/")])

    init(rules: [Rule]) {
        self.rules = rules
    }

    /// Parses a `robots.txt` body for `agent` (mirror's product token).
    public init(parsing text: String, agent: String) {
        let agent = agent.lowercased()
        var specific: [Rule] = []
        var general: [Rule] = []
        var foundSpecific = false
        var groupAgents: [String] = []
        var inRules = false
        for rawLine in text.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r" }) {
            let line = rawLine.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
            guard let colon = line.firstIndex(of: ":") else { continue }
            let field = line[..<colon].trimmingCharacters(in: .whitespaces).lowercased()
            let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            switch field {
            case "user-agent":
                if inRules {
                    groupAgents = []
                    inRules = false
                }
                let name = value.lowercased()
                groupAgents.append(name)
                if name == agent { foundSpecific = true }
            case "allow", "disallow":
                inRules = true
                guard !value.isEmpty else { continue }  // `disallow:` with no path allows everything
                let rule = Rule(allow: field == "allow", pattern: value)
                if groupAgents.contains(agent) {
                    specific.append(rule)
                } else if groupAgents.contains("*") {
                    general.append(rule)
                }
            default:
                continue
            }
        }
        // A group for the token replaces `*`, even one whose rules are all empty (everything allowed).
        rules = foundSpecific ? specific : general
    }

    /// Whether the URL's path (and query) may be fetched.
    public func allows(_ url: URL) -> Bool {
        guard !rules.isEmpty else { return true }
        var target = url.path(percentEncoded: true)
        if target.isEmpty { target = "/" }
        if let query = url.query(percentEncoded: true) { target += "?" + query }
        var best: Rule?
        for rule in rules where Self.matches(rule.pattern, target) {
            guard let current = best else {
                best = rule
                continue
            }
            if rule.pattern.count > current.pattern.count || (rule.pattern.count == current.pattern.count && rule.allow) {
                best = rule
            }
        }
        return best?.allow ?? true
    }

    /// Whether `pattern` (with `*` and a final `$`) matches the start of `path`.
    package static func matches(_ pattern: String, _ path: String) -> Bool {
        var pattern = Substring(pattern)
        let anchored = pattern.hasSuffix("$")
        if anchored { pattern = pattern.dropLast() }
        let pieces = pattern.split(separator: "*", omittingEmptySubsequences: false)
        var rest = Substring(path)
        for (index, piece) in pieces.enumerated() {
            if index == 0 {
                guard rest.hasPrefix(piece) else { return false }
                rest = rest.dropFirst(piece.count)
            } else if index == pieces.count - 1, anchored {
                return rest.hasSuffix(piece)
            } else {
                guard let range = rest.range(of: piece) else { return false }
                rest = rest[range.upperBound...]
            }
        }
        return !anchored || rest.isEmpty
    }
}
