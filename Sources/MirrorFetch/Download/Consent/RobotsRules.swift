import Foundation
import MirrorCore
import MirrorStorage

/// A host's `robots.txt` as RFC 9309 reads it, for one product token: what may be fetched, and what the fetched
/// content may be used for.
///
/// The group for the token (matched case-insensitively against each `user-agent` line) applies, or else the `*`
/// group; several groups for the same agent merge. A path is allowed unless its longest matching rule is a
/// `disallow` (an `allow` of the same length wins); `*` matches any run of characters and a final `$` anchors the
/// end. `crawl-delay` is not read: mirror's own per-host limits and backoff apply.
///
/// Two lines of the same group say what allowed content may be used for, and are kept as evidence:
/// - `Content-Signal:` (Cloudflare's Content Signals Policy, which its managed robots.txt writes for millions of
///   domains): comma-separated `category=yes|no` (`search`, `ai-input`, `ai-train`);
/// - `Content-Usage:` (IETF `draft-ietf-aipref-attach` §3, which updates RFC 9309): an AI-preferences statement
///   (``AIPreferences``).
/// Either may start with a path (`Content-Usage: /ai-ok/ train-ai=y`; the path ends at the first space or tab). Of each
/// kind, the lines whose path matches the URL longest apply (by the Allow/Disallow rule, aipref-attach §3.1), all of
/// them when several have that path; a line without a path matches every URL with length 0. Preferences apply only to
/// what may be fetched: a disallowed URL has none.
public struct RobotsRules: Sendable, Hashable, Codable {
    struct Rule: Sendable, Hashable, Codable {
        package var allow: Bool
        package var pattern: String
    }

    /// A `Content-Signal` or `Content-Usage` line of the group that applies.
    struct UsageLine: Sendable, Hashable, Codable {
        var signal: ConsentSignal
        /// The path it is for, empty for every path.
        var path: String
        /// The statement, as written.
        var statement: String
    }

    let rules: [Rule]
    let usage: [UsageLine]
    /// Whose group applied: mirror's product token, or `*`; `nil` when the file has no group for either.
    let group: String?

    /// Everything allowed (no file, or a 4xx for it).
    public static let allowAll = RobotsRules(rules: [], usage: [], group: nil)
    /// Nothing allowed (the file could not be fetched: RFC 9309 says assume complete disallow).
    public static let disallowAll = RobotsRules(rules: [Rule(allow: false, pattern: "/")], usage: [], group: nil)

    init(rules: [Rule], usage: [UsageLine] = [], group: String? = nil) {
        self.rules = rules
        self.usage = usage
        self.group = group
    }

    /// Parses a `robots.txt` body for `agent` (mirror's product token).
    public init(parsing text: String, agent: String) {
        let agent = agent.lowercased()
        var specific: (rules: [Rule], usage: [UsageLine]) = ([], [])
        var general: (rules: [Rule], usage: [UsageLine]) = ([], [])
        var foundSpecific = false
        var foundGeneral = false
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
                if name == "*" { foundGeneral = true }
            case "allow", "disallow":
                inRules = true
                guard !value.isEmpty else { continue }  // `disallow:` with no path allows everything
                let rule = Rule(allow: field == "allow", pattern: value)
                if groupAgents.contains(agent) {
                    specific.rules.append(rule)
                } else if groupAgents.contains("*") {
                    general.rules.append(rule)
                }
            case "content-signal", "content-usage":
                inRules = true
                guard let line = Self.usageLine(field == "content-signal" ? .contentSignal : .contentUsage, value: value) else { continue }
                if groupAgents.contains(agent) {
                    specific.usage.append(line)
                } else if groupAgents.contains("*") {
                    general.usage.append(line)
                }
            default:
                continue
            }
        }
        // A group for the token replaces `*`, even one whose rules are all empty (everything allowed).
        (rules, usage) = foundSpecific ? specific : general
        group = foundSpecific ? agent : foundGeneral ? "*" : nil
    }

    /// A usage line's path (when its value starts with `/`, up to the first space or tab) and statement.
    private static func usageLine(_ signal: ConsentSignal, value: String) -> UsageLine? {
        guard value.hasPrefix("/") else { return value.isEmpty ? nil : UsageLine(signal: signal, path: "", statement: value) }
        guard let end = value.firstIndex(where: { $0 == " " || $0 == "\t" }) else { return nil }  // a path and no statement
        let statement = value[end...].trimmingCharacters(in: .whitespaces)
        return statement.isEmpty ? nil : UsageLine(signal: signal, path: String(value[..<end]), statement: statement)
    }

    /// Whether the URL's path (and query) may be fetched.
    public func allows(_ url: URL) -> Bool {
        disallowingRule(for: url) == nil
    }

    /// The `disallow` rule that keeps `url` out, as written (`Disallow: /private/`), or `nil` when it may be fetched.
    func disallowingRule(for url: URL) -> String? {
        guard !rules.isEmpty else { return nil }
        let target = PathMatching.target(of: url)
        var best: (rule: Rule, length: Int)?
        for rule in rules where PathMatching.matches(PathMatching.decodingUnreserved(rule.pattern), target) {
            let length = PathMatching.specificity(rule.pattern)
            guard let current = best else {
                best = (rule, length)
                continue
            }
            if length > current.length || (length == current.length && rule.allow) {
                best = (rule, length)
            }
        }
        guard let best, !best.rule.allow else { return nil }
        return "Disallow: \(best.rule.pattern)"
    }

    /// What the group's `Content-Signal` and `Content-Usage` lines say of `url`, as evidence (none for a URL the file
    /// disallows).
    public func evidence(for url: URL) -> [ConsentEvidence] {
        guard !usage.isEmpty, allows(url) else { return [] }
        let target = PathMatching.target(of: url)
        var evidence: [ConsentEvidence] = []
        for signal in [ConsentSignal.contentSignal, .contentUsage] {
            let matching = usage.filter { $0.signal == signal && ($0.path.isEmpty || PathMatching.matches(PathMatching.decodingUnreserved($0.path), target)) }
            guard let longest = matching.map({ PathMatching.specificity($0.path) }).max() else { continue }
            for line in matching where PathMatching.specificity(line.path) == longest {
                let location = "robots.txt, group \(group == "*" ? "*" : "for " + (group ?? "*"))" + (line.path.isEmpty ? "" : ", path \(line.path)")
                for (category, allowed) in signal == .contentSignal ? Self.contentSignals(line.statement) : AIPreferences.parse(line.statement) {
                    let value = signal == .contentSignal ? "\(category)=\(allowed ? "yes" : "no")" : "\(category)=\(allowed ? "y" : "n")"
                    let term: ConsentEvidence.Term = signal == .contentSignal
                        ? .contentSignal(category: category, allowed: allowed) : .usage(category: category, allowed: allowed)
                    evidence.append(ConsentEvidence(signal: signal, value: value, location: location, term: term))
                }
            }
        }
        return evidence
    }

    /// A `Content-Signal` statement's categories (Cloudflare's Content Signals Policy: `search=yes, ai-train=no`),
    /// lowercased; values other than `yes` and `no` say nothing.
    static func contentSignals(_ statement: String) -> [(category: String, allowed: Bool)] {
        statement.split(separator: ",").compactMap { pair in
            let parts = pair.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
            guard parts.count == 2, !parts[0].isEmpty else { return nil }
            switch parts[1] {
            case "yes": return (parts[0], true)
            case "no": return (parts[0], false)
            default: return nil
            }
        }
    }

    /// Whether `pattern` (with `*` and a final `$`) matches the start of `path`.
    package static func matches(_ pattern: String, _ path: String) -> Bool {
        PathMatching.matches(pattern, path)
    }
}
