import Foundation
import MirrorModel

/// Every signal mirror consults for one URL, and what ``ConsentPolicy`` decides on them: what `mirror why` prints.
///
/// Made by ``ConsentInspector``. `--json` prints it as it encodes (`null` for a site file that says nothing of the URL;
/// `headers`, `marks` and `image` only when the image was asked for); ``lines`` is the same for people.
public struct ConsentExplanation: Sendable, Encodable {
    /// What the policy decides.
    public enum Decision: String, Sendable, Encodable {
        /// Nothing read reserves the purpose, or what does is set aside.
        case allowed
        /// A reservation that counts keeps the URL out (``ConsentExplanation/refusedBy``).
        case refused
        /// A file (or, when asked for, the image) could not be had: nothing may be decided until it can
        /// (``ConsentExplanation/unavailable``).
        case unknown
    }

    /// What robots.txt says of the URL.
    public struct Robots: Sendable, Encodable {
        /// What one product token reads: the group chosen for it and its rule that decides the URL.
        public struct Group: Sendable, Encodable, Hashable {
            /// The token, lowercase.
            public var token: String
            /// Whose group it reads: the token, `*`, or `nil` when the file has neither (everything allowed).
            public var group: String?
            /// The deciding rule as written (`Disallow: /private/`), or `nil` when no rule matches.
            public var rule: String?
            /// The rule's line in the file.
            public var line: Int?
            /// Whether the token may fetch the URL.
            public var allowed: Bool
        }

        /// The group, rule and line that decide: the first token's that keeps the URL out, else the first with a
        /// matching rule, else the first token's.
        public var group: String?
        public var rule: String?
        public var line: Int?
        /// Whether every token may fetch the URL.
        public var allowed: Bool
        /// Why the file could not be had (then nothing may be fetched for now), or `nil`.
        public var unavailable: String?
        /// Each token's group, in the run's order of tokens.
        public var groups: [Group]
    }

    /// One piece of evidence, with what it comes to for the purpose.
    public struct Signal: Sendable, Encodable, Hashable {
        public var signal: ConsentSignal
        /// What it says (`ai-train=no`, `noai`, `tdm-reservation: 1`).
        public var value: String
        /// Where it was read, with its line or rule number.
        public var location: String
        /// The terms a licence may be had under (`tdm-policy`), or `nil`.
        public var policy: String?
        /// Whether it reserves the purpose.
        public var reserves: Bool
        /// Whether that reservation is set aside (`--ignore-opt-out`).
        public var setAside: Bool

        init(_ evidence: ConsentEvidence, policy consent: ConsentPolicy) {
            signal = evidence.signal
            value = evidence.value
            location = evidence.location
            policy = evidence.policy
            reserves = consent.reserves(evidence)
            setAside = reserves && consent.ignored.contains(evidence.signal)
        }
    }

    /// The TDMRep file's rule for the URL: the first whose location matches.
    public struct TDMRepRule: Sendable, Encodable, Hashable {
        /// The file (`/.well-known/tdmrep.json`).
        public var file: String
        /// Its position in the file, from 1.
        public var number: Int
        /// Its `location` pattern.
        public var location: String
        /// `tdm-reservation`: 1, 0, or `nil` when missing or neither.
        public var reservation: Int?
        /// Its `tdm-policy`, or `nil`.
        public var policy: String?
        /// Whether it reserves the purpose.
        public var reserves: Bool
    }

    /// The image's response, when it was asked for (`--fetch`).
    public struct Image: Sendable, Encodable, Hashable {
        /// The response's status, or `nil` when none came.
        public var status: Int?
        /// The format and size its bytes declare, or `nil` when they are not an image.
        public var format: String?
        public var width: Int?
        public var height: Int?
        /// Why there is no image to read (a transport error, a status, bytes that are not an image), or `nil`.
        public var problem: String?
    }

    public var url: URL
    public var purpose: UsePurpose
    /// The product tokens robots.txt and `X-Robots-Tag` are read for.
    public var agents: [String]
    /// Which site files the purpose and the signals set aside let count (the pipeline reads the same).
    public var siteFiles: SiteGate.Files
    /// robots.txt's say, or `nil` when it was not read or the origin has none (a 4xx).
    public var robots: Robots?
    /// Its `Content-Signal` and `Content-Usage` lines that apply to the URL.
    public var usage: [Signal] = []
    /// The TDMRep file's rule for the URL, or `nil` (no file, no rule matching, or not read).
    public var tdmrep: TDMRepRule?
    /// The image response's signals and the image's own marks, when it was asked for (`nil` otherwise).
    public var headers: [Signal]?
    public var marks: [Signal]?
    public var image: Image?
    /// The decision, and the reservation behind a refusal.
    public var decision: Decision = .allowed
    public var refusedBy: Signal?
    /// Why no decision could be made, for ``Decision/unknown``.
    public var unavailable: String?
    /// The reservations `--ignore-opt-out` set aside.
    public var setAside: [Signal] = []
    /// What else was said on the way (a TDMRep file that is not one, an image not asked for and why).
    public var notes: [String] = []

    private enum CodingKeys: String, CodingKey {
        case url, purpose, agents, robots, usage, tdmrep, headers, marks, image, decision, refusedBy, unavailable, setAside, notes
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(url.absoluteString, forKey: .url)
        try container.encode(purpose, forKey: .purpose)
        try container.encode(agents, forKey: .agents)
        try container.encode(robots, forKey: .robots)
        try container.encode(usage, forKey: .usage)
        try container.encode(tdmrep, forKey: .tdmrep)
        try container.encodeIfPresent(headers, forKey: .headers)
        try container.encodeIfPresent(marks, forKey: .marks)
        try container.encodeIfPresent(image, forKey: .image)
        try container.encode(decision, forKey: .decision)
        try container.encode(refusedBy, forKey: .refusedBy)
        try container.encode(unavailable, forKey: .unavailable)
        try container.encode(setAside, forKey: .setAside)
        try container.encode(notes, forKey: .notes)
    }

    // MARK: For people

    /// The URL, then one indented line per signal consulted, the decision last.
    public var lines: [String] {
        var lines = [url.absoluteString, "  for \(purpose.rawValue), as \(agents.joined(separator: ", "))"]
        func say(_ signal: Signal) -> String {
            let verdict = signal.setAside ? "reserves \(purpose.rawValue), set aside by --ignore-opt-out"
                : signal.reserves ? "reserves \(purpose.rawValue)" : "reserves nothing for \(purpose.rawValue)"
            return "\(Self.label(signal.signal)) \(signal.value) (\(signal.location)\(signal.policy.map { "; terms: \($0)" } ?? "")): \(verdict)"
        }
        if !siteFiles.contains(.robots) {
            lines.append("  robots.txt: not read (its signals are all set aside)")
        } else if let robots, let unavailable = robots.unavailable {
            lines.append("  robots.txt: could not be had (\(unavailable)): RFC 9309 says assume disallow for now")
        } else if let robots {
            for group in robots.groups {
                let chosen = group.group.map { $0 == "*" ? "group *" : "group for \($0)" } ?? "no group"
                let rule = group.rule.map { "\($0) (line \(group.line ?? 0))" } ?? "no rule matches"
                lines.append("  robots.txt for \(group.token): \(chosen), \(rule): \(group.allowed ? "allowed" : "disallowed")")
            }
        } else {
            lines.append("  robots.txt: none (no file, or a 4xx for it): everything allowed")
        }
        for signal in usage { lines.append("  " + say(signal)) }
        if !siteFiles.contains(.tdmrep) {
            lines.append("  \(TDMRep.wellKnownPath): not read (set aside by --ignore-opt-out, or TDMRep reserves nothing for \(purpose.rawValue))")
        } else if let tdmrep {
            let reservation = tdmrep.reservation.map { "tdm-reservation: \($0)" } ?? "no tdm-reservation"
            let verdict = tdmrep.reserves ? "reserves \(purpose.rawValue)" : "reserves nothing"
            lines.append("  \(tdmrep.file) rule \(tdmrep.number) (location \(tdmrep.location)): \(reservation)\(tdmrep.policy.map { ", policy \($0)" } ?? ""): \(verdict)")
        } else if robots?.unavailable == nil {
            lines.append("  \(TDMRep.wellKnownPath): no rule for this URL (or no file)")
        }
        if let image {
            var line = "  image: " + (image.status.map { "HTTP \($0)" } ?? "no response")
            if let format = image.format, let width = image.width, let height = image.height { line += ", \(format) \(width)×\(height)" }
            if let problem = image.problem { line += ": \(problem)" }
            lines.append(line)
        }
        if let headers {
            lines += headers.isEmpty ? ["  headers: no signal"] : headers.map { "  " + say($0) }
        }
        if let marks {
            lines += marks.isEmpty ? ["  marks: none"] : marks.map { "  " + say($0) }
        }
        for note in notes { lines.append("  note: \(note)") }
        switch decision {
        case .allowed:
            lines.append("  decision: allowed")
        case .refused:
            if let signal = refusedBy { lines.append("  decision: refused by \(signal.signal.rawValue) \(signal.value) (\(signal.location))") }
        case .unknown:
            lines.append("  decision: not known: \(unavailable ?? "a file could not be had")")
        }
        if !setAside.isEmpty {
            lines.append("  set aside by --ignore-opt-out: " + setAside.map { "\($0.signal.rawValue) \($0.value) (\($0.location))" }.joined(separator: "; "))
        }
        return lines
    }

    private static func label(_ signal: ConsentSignal) -> String {
        switch signal {
        case .robots: "robots.txt"
        case .contentSignal: "Content-Signal"
        case .contentUsage: "Content-Usage"
        case .xRobotsTag: "X-Robots-Tag"
        case .tdmrepFile, .tdmrepHeader: "TDMRep"
        case .iptc: "IPTC Data Mining"
        case .c2pa: "C2PA"
        }
    }
}
