import Foundation
import MirrorModel

/// A host's `robots.txt` as RFC 9309 and Google's reference parser (google/robotstxt) read it, for the product tokens a
/// run answers to: what may be fetched, and what the fetched content may be used for.
///
/// Reading the file (as `robots.cc` does, so that a file works as its owner tested it):
/// - octets, not characters: lines end at LF, CR or CRLF; a UTF-8 byte-order mark (or the start of one) before the
///   first line is skipped; `#` starts a comment; a line is cut at 16,663 octets; at most the first 500 KiB are read
///   (RFC 9309 §2.5).
/// - `key: value`, or `key value` with no colon when the line holds exactly two words; keys are read by their start,
///   ignoring case (`user-agent`, `allow`, `disallow`), with the misspellings the reference accepts (`useragent`,
///   `user agent`, `dissallow`, `dissalow`, `disalow`, `diasllow`, `disallaw`).
/// - A `user-agent` value is read to its first character outside `A-Z a-z _ -` (`Mirror Bar` and `mirror/2.0` are
///   `mirror`), compared ignoring case; `*` (alone or before a space) is every agent. Consecutive `user-agent` lines
///   share the group that follows; a rule line ends the list, and rules before any `user-agent` line are ignored.
/// - For each token, the rules of every group that names it apply, merged; only when no group names it, those of the
///   `*` groups. A path is allowed unless its longest matching rule (``PathPattern``) is a `disallow`; an `allow` of
///   the same length wins; an empty `disallow` allows everything. A run answering to two tokens (`--user-agent`'s and
///   `mirror`) is kept out where either token's rules keep it out.
/// - `crawl-delay` is not read: mirror's own per-host limits and backoff apply.
///
/// Two lines of a group say what allowed content may be used for, and are kept as evidence:
/// - `Content-Signal:` (Cloudflare's Content Signals Policy, which its managed robots.txt writes for millions of
///   domains): comma-separated `category=yes|no` (`search`, `ai-input`, `ai-train`);
/// - `Content-Usage:` (IETF `draft-ietf-aipref-attach` §3, which updates RFC 9309): an AI-preferences statement
///   (``AIPreferences``).
/// Either may start with a path (`Content-Usage: /ai-ok/ train-ai=y`; the path ends at the first space or tab). Of each
/// kind, the lines whose path matches the URL longest apply (by the Allow/Disallow rule, aipref-attach §3.1), all of
/// them when several have that path; a line without a path matches every URL with length 0. Preferences apply only to
/// what may be fetched: a disallowed URL has none. Each statement is parsed once, when the file is read.
///
/// Everything a URL is checked against is compiled once per file (``PatternSet``): a lookup costs the URL's own octets
/// and the patterns that could match it, and gives up past ``PatternSet/workLimit`` (then the URL is disallowed).
public struct RobotsRules: Sendable, Codable {
    /// A rule as written, with its line.
    struct Rule: Sendable, Hashable, Codable {
        var allow: Bool
        var pattern: String
        var line: Int
    }

    /// A `Content-Signal` or `Content-Usage` line of a group that applies.
    struct UsageLine: Sendable, Hashable, Codable {
        var signal: ConsentSignal
        /// The path it is for, empty for every path.
        var path: String
        /// The statement, as written.
        var statement: String
        var line: Int
    }

    /// What the file says to one product token: the group chosen and its lines.
    struct Group: Sendable, Codable {
        /// The token asked for, lowercase.
        var token: String
        /// Whose group applies: the token, `*`, or `nil` when the file has neither.
        var name: String?
        var rules: [Rule]
        var usage: [UsageLine]

        /// `group for mirror`, `group *`, `no group`.
        var label: String { name.map { $0 == "*" ? "group *" : "group for \($0)" } ?? "no group" }
    }

    let groups: [Group]
    /// Each group's rules and usage lines, compiled, in the order of ``groups``.
    private let compiled: [Compiled]

    /// Everything allowed (no file, or a 4xx for it).
    public static let allowAll = RobotsRules(groups: [])
    /// Nothing allowed (for tests of the policy; the gate says why when a file could not be had).
    public static let disallowAll = RobotsRules(groups: [Group(token: "*", name: "*", rules: [Rule(allow: false, pattern: "/", line: 0)], usage: [])])

    /// The octets read at most (RFC 9309 §2.5: "at least 500 kibibytes").
    public static let maximumBytes = 500 * 1024
    /// A line's octets kept at most (Google's reference: 2,083 × 8 − 1).
    static let maximumLineBytes = 2083 * 8 - 1

    init(groups: [Group]) {
        self.groups = groups
        compiled = groups.map(Compiled.init)
    }

    /// Parses a `robots.txt` body for `agent`.
    public init(parsing text: String, agent: String) {
        self.init(parsing: Array(text.utf8), agents: [agent])
    }

    /// Parses the first ``maximumBytes`` of a `robots.txt` body for the product tokens `agents` (each compared
    /// ignoring case; duplicates are read once).
    public init(parsing body: some Collection<UInt8>, agents: [String]) {
        var tokens: [String] = []
        for agent in agents.map({ $0.lowercased() }) where !tokens.contains(agent) { tokens.append(agent) }
        let lines = Self.lines(of: body.prefix(Self.maximumBytes))
        self.init(groups: tokens.map { Self.group(for: $0, in: lines) })
    }

    // MARK: Reading the file

    /// A line's key, as the reference reads it.
    enum Key: Equatable {
        case userAgent, allow, disallow, contentSignal, contentUsage, other
    }

    /// The file's lines that say something: their number, key and value (comment and surrounding space removed).
    static func lines(of body: some Collection<UInt8>) -> [(number: Int, key: Key, value: [UInt8])] {
        var result: [(number: Int, key: Key, value: [UInt8])] = []
        var line: [UInt8] = []
        var number = 0
        var bomMatched = 0
        var lastWasCR = false
        func emit() {
            number += 1
            if let (key, value) = keyAndValue(line) { result.append((number, key, value)) }
            line.removeAll(keepingCapacity: true)
        }
        let bom: [UInt8] = [0xEF, 0xBB, 0xBF]
        var atStart = true
        for octet in body {
            if atStart {
                if bomMatched < 3, octet == bom[bomMatched] {
                    bomMatched += 1
                    continue
                }
                atStart = false
            }
            if octet == 0x0A || octet == 0x0D {
                if !(octet == 0x0A && lastWasCR && line.isEmpty) {
                    emit()
                }
                lastWasCR = octet == 0x0D
                line.removeAll(keepingCapacity: true)
            } else {
                if line.count < maximumLineBytes { line.append(octet) }
            }
        }
        emit()
        return result
    }

    /// A line's key and value, or `nil` when it has none: `key: value`, or `key value` when the line (comment removed)
    /// is exactly two words.
    static func keyAndValue(_ line: [UInt8]) -> (Key, [UInt8])? {
        var text = line[...]
        if let hash = text.firstIndex(of: UInt8(ascii: "#")) { text = text[..<hash] }
        text = trimmed(text)
        guard !text.isEmpty else { return nil }
        let keyPart: ArraySlice<UInt8>
        let valuePart: ArraySlice<UInt8>
        if let colon = text.firstIndex(of: UInt8(ascii: ":")) {
            keyPart = text[..<colon]
            valuePart = text[(colon + 1)...]
        } else {
            guard let space = text.firstIndex(where: isBlank) else { return nil }
            let value = trimmed(text[space...])
            guard !value.contains(where: isBlank) else { return nil }  // more than two words: not a line
            keyPart = text[..<space]
            valuePart = value
        }
        let key = trimmed(keyPart)
        guard !key.isEmpty else { return nil }
        return (Self.key(String(decoding: key, as: UTF8.self).lowercased()), Array(trimmed(valuePart)))
    }

    private static func key(_ name: String) -> Key {
        if name.hasPrefix("user-agent") || name.hasPrefix("useragent") || name.hasPrefix("user agent") { return .userAgent }
        if name.hasPrefix("allow") { return .allow }
        for spelling in ["disallow", "dissallow", "dissalow", "disalow", "diasllow", "disallaw"] where name.hasPrefix(spelling) {
            return .disallow
        }
        switch name {
        case "content-signal": return .contentSignal
        case "content-usage": return .contentUsage
        default: return .other
        }
    }

    private static func isBlank(_ octet: UInt8) -> Bool {
        octet == 0x20 || octet == 0x09 || octet == 0x0B || octet == 0x0C || octet == 0x0A || octet == 0x0D
    }

    private static func trimmed(_ text: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
        var text = text
        while let first = text.first, isBlank(first) { text = text.dropFirst() }
        while let last = text.last, isBlank(last) { text = text.dropLast() }
        return text
    }

    /// A `user-agent` value's product token: its start up to the first character outside `A-Z a-z _ -`, lowercase; or
    /// `*` for every agent (alone, or before a space).
    static func agentToken(_ value: [UInt8]) -> String {
        if value.first == UInt8(ascii: "*"), value.count == 1 || isBlank(value[1]) { return "*" }
        let token = value.prefix { octet in
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(octet | 0x20) || octet == UInt8(ascii: "_") || octet == UInt8(ascii: "-")
        }
        return String(decoding: token, as: UTF8.self).lowercased()
    }

    /// The product token of a `User-Agent` (`MyCrawler/1.0 (+https://…)` is `mycrawler`), or `nil` when it does not
    /// start with one.
    public static func productToken(ofUserAgent userAgent: String) -> String? {
        let token = agentToken(Array(userAgent.utf8))
        return token.isEmpty || token == "*" ? nil : token
    }

    /// The group `token` reads: the rules and usage lines of the groups that name it, or else of the `*` groups.
    private static func group(for token: String, in lines: [(number: Int, key: Key, value: [UInt8])]) -> Group {
        var specific = Group(token: token, name: token, rules: [], usage: [])
        var general = Group(token: token, name: "*", rules: [], usage: [])
        var namedAnywhere = false
        var namedGeneral = false
        var inSpecific = false
        var inGeneral = false
        var afterRules = false
        for (number, key, value) in lines {
            switch key {
            case .userAgent:
                if afterRules {
                    (inSpecific, inGeneral, afterRules) = (false, false, false)
                }
                let name = agentToken(value)
                if name == "*" {
                    inGeneral = true
                    namedGeneral = true
                } else if name == token {
                    inSpecific = true
                    namedAnywhere = true
                }
            case .allow, .disallow:
                guard inSpecific || inGeneral else { continue }
                afterRules = true
                guard !value.isEmpty else { continue }  // `disallow:` with no path allows everything
                let rule = Rule(allow: key == .allow, pattern: String(decoding: value, as: UTF8.self), line: number)
                if inSpecific { specific.rules.append(rule) } else { general.rules.append(rule) }
            case .contentSignal, .contentUsage:
                guard inSpecific || inGeneral else { continue }
                afterRules = true
                let signal: ConsentSignal = key == .contentSignal ? .contentSignal : .contentUsage
                guard let line = usageLine(signal, value: String(decoding: value, as: UTF8.self), line: number) else { continue }
                if inSpecific { specific.usage.append(line) } else { general.usage.append(line) }
            case .other:
                continue
            }
        }
        // A group for the token replaces `*`, even one whose rules are all empty (everything allowed).
        if namedAnywhere { return specific }
        if namedGeneral { return general }
        return Group(token: token, name: nil, rules: [], usage: [])
    }

    /// A usage line's path (when its value starts with `/`, up to the first space or tab) and statement.
    private static func usageLine(_ signal: ConsentSignal, value: String, line: Int) -> UsageLine? {
        guard value.hasPrefix("/") else { return value.isEmpty ? nil : UsageLine(signal: signal, path: "", statement: value, line: line) }
        guard let end = value.firstIndex(where: { $0 == " " || $0 == "\t" }) else { return nil }  // a path and no statement
        let statement = value[end...].trimmingCharacters(in: .whitespaces)
        return statement.isEmpty ? nil : UsageLine(signal: signal, path: String(value[..<end]), statement: statement, line: line)
    }

    // MARK: Deciding

    /// Why a URL is kept out: the deciding rule of the first token's group that keeps it out.
    struct Refusal: Sendable, Hashable {
        /// The rule as written (`Disallow: /private/`), or why none could decide.
        var rule: String
        /// Its line in the file (0 when none).
        var line: Int
        /// The group it belongs to (`group for mirror`, `group *`).
        var group: String
    }

    /// The rule that decides `url` for each token's group, allow or disallow, with its group; for `mirror why`.
    func decidingRules(for url: URL) -> [(group: String, rule: Rule?)] {
        let target = PathMatching.target(of: url)
        return zip(groups, compiled).map { group, compiled in
            guard case let .matched(chosen) = compiled.rules.lookup(target, choosing: .longest) else { return (group.label, nil) }
            let rules = chosen.map { group.rules[$0] }
            return (group.label, rules.first { $0.allow } ?? rules.first)
        }
    }

    /// Whether the URL's path (and query) may be fetched.
    public func allows(_ url: URL) -> Bool {
        refusal(for: url) == nil
    }

    /// What keeps `url` out, or `nil` when every token's group lets it be fetched.
    func refusal(for url: URL) -> Refusal? {
        refusal(target: PathMatching.target(of: url))
    }

    /// What keeps the path and query `target` (``PathMatching/target(of:)``) out, or `nil`.
    func refusal(target: [UInt8]) -> Refusal? {
        guard compiled.contains(where: { !$0.rules.isEmpty }) else { return nil }
        for (group, compiled) in zip(groups, compiled) where !compiled.rules.isEmpty {
            switch compiled.rules.lookup(target, choosing: .longest) {
            case .tooCostly:
                return Refusal(rule: "its rules cost more than \(PatternSet.workLimit >> 20) MiB of matching for this URL", line: 0, group: group.label)
            case let .matched(chosen):
                let rules = chosen.map { group.rules[$0] }
                // An allow of the same length wins.
                if let rule = rules.first, !rules.contains(where: \.allow) {
                    return Refusal(rule: "Disallow: \(rule.pattern)", line: rule.line, group: group.label)
                }
            }
        }
        return nil
    }

    /// What the groups' `Content-Signal` and `Content-Usage` lines say of `url`, as evidence (none for a URL the file
    /// disallows). Two tokens that read the same group give its lines once.
    public func evidence(for url: URL) -> [ConsentEvidence] {
        let target = PathMatching.target(of: url)
        return refusal(target: target) == nil ? usageEvidence(target: target) : []
    }

    /// What the usage lines say of `target`, a path and query already known to be allowed.
    func usageEvidence(target: [UInt8]) -> [ConsentEvidence] {
        guard compiled.contains(where: { !$0.usage.isEmpty }) else { return [] }
        var evidence: [ConsentEvidence] = []
        var readGroups: Set<String> = []
        for (group, compiled) in zip(groups, compiled) where !compiled.usage.isEmpty && readGroups.insert(group.label).inserted {
            let location = "robots.txt, \(group.label)"
            for signal in [ConsentSignal.contentSignal, .contentUsage] {
                guard let set = compiled.usage[signal], case let .matched(chosen) = set.lines.lookup(target, choosing: .longest) else { continue }
                for index in chosen {
                    let line = group.usage[set.members[index]]
                    let place = location + (line.path.isEmpty ? "" : ", path \(line.path)") + ", line \(line.line)"
                    for (category, allowed) in set.terms[index] {
                        let value = signal == .contentSignal ? "\(category)=\(allowed ? "yes" : "no")" : "\(category)=\(allowed ? "y" : "n")"
                        let term: ConsentEvidence.Term = signal == .contentSignal
                            ? .contentSignal(category: category, allowed: allowed) : .usage(category: category, allowed: allowed)
                        evidence.append(ConsentEvidence(signal: signal, value: value, location: place, term: term))
                    }
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

    /// Whether `pattern` (with `*` and a final `$`) matches `path` (a URL's path and query, as sent).
    package static func matches(_ pattern: String, _ path: String) -> Bool {
        PathPattern(pattern).matches(PathMatching.target(Array(path.utf8)))
    }

    // MARK: Compiled form

    /// A group's patterns compiled, and its statements parsed, once.
    private struct Compiled: Sendable {
        struct UsageSet: Sendable {
            /// The lines' paths (the empty path for a line without one: it matches everything with length 0).
            var lines: PatternSet
            /// Each line's position in the group's usage lines.
            var members: [Int]
            /// Each line's categories.
            var terms: [[(category: String, allowed: Bool)]]
        }

        var rules: PatternSet
        var usage: [ConsentSignal: UsageSet] = [:]

        init(_ group: Group) {
            rules = PatternSet(group.rules.map { PathPattern($0.pattern) })
            for signal in [ConsentSignal.contentSignal, .contentUsage] {
                let members = group.usage.indices.filter { group.usage[$0].signal == signal }
                guard !members.isEmpty else { continue }
                usage[signal] = UsageSet(
                    lines: PatternSet(members.map { PathPattern(group.usage[$0].path) }), members: members,
                    terms: members.map { index in
                        let line = group.usage[index]
                        return signal == .contentSignal ? RobotsRules.contentSignals(line.statement) : AIPreferences.parse(line.statement)
                    }
                )
            }
        }
    }

    // MARK: Codable: the groups as read; compiled again when decoded.

    private enum CodingKeys: String, CodingKey { case groups }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(groups: try container.decode([Group].self, forKey: .groups))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(groups, forKey: .groups)
    }
}
