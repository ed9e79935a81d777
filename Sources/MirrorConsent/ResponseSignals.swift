import Foundation
import MirrorCore
import MirrorModel
import RawStructuredFieldValues

/// Reads the `X-Robots-Tag` headers of a response: the directives addressed to every agent or to one of the run's
/// product tokens (`X-Robots-Tag: mirror: noai`). Directives addressed to another agent (`googlebot: noindex`) do not
/// apply.
///
/// As Google reads the header: a value is a list of comma-separated directives, and a directive of the form
/// `agent: directive` addresses that directive and those after it, up to the next such, to `agent` — so one header
/// `googlebot: noindex, mirror: noai` (what a proxy or HTTP/2 may make of two) gives mirror `noai`. A directive with a
/// value of its own (`unavailable_after: …`, `max-snippet: …`) is not an agent. `none` is `noindex, nofollow`.
public struct XRobotsTag: Sendable, Hashable {
    /// The product tokens directives may be addressed to, lowercase. Default `mirror`.
    public var agents: [String]

    public init(agent: String = "mirror") {
        agents = [agent.lowercased()]
    }

    public init(agents: [String]) {
        self.agents = agents.map { $0.lowercased() }
    }

    /// The directives of every `X-Robots-Tag` header that apply to mirror, lowercase, in order.
    public func directives(headers: [(name: String, value: String)]) -> [String] {
        headers.filter { $0.name.equalsIgnoringASCIICase("x-robots-tag") }.flatMap { directives(value: $0.value) }
    }

    /// The directives of one `X-Robots-Tag` value that apply to mirror.
    package func directives(value: String) -> [String] {
        var applies = true  // until a directive names an agent, the value is for every agent
        var result: [String] = []
        for part in value.split(separator: ",") {
            var directive = part.trimmingCharacters(in: .whitespaces).lowercased()
            if let colon = directive.firstIndex(of: ":") {
                let head = directive[..<colon].trimmingCharacters(in: .whitespaces)
                if !head.isEmpty, !head.contains(" "), !Self.directivesWithValues.contains(head) {
                    applies = agents.contains(head)
                    directive = directive[directive.index(after: colon)...].trimmingCharacters(in: .whitespaces)
                }
            }
            guard applies, !directive.isEmpty else { continue }
            if directive == "none" {
                result += ["noindex", "nofollow"]
            } else {
                result.append(directive)
            }
        }
        return result
    }

    private static let directivesWithValues: Set<String> = ["unavailable_after", "max-snippet", "max-image-preview", "max-video-preview"]
}

/// What an image response's headers say about its use: `X-Robots-Tag` directives, an AI-preferences `Content-Usage`
/// field, and TDMRep's `tdm-reservation` and `tdm-policy`, as evidence for ``ConsentPolicy``.
public enum ResponseSignals {
    /// The evidence in `headers`, in that order: X-Robots-Tag directives, Content-Usage categories, the TDMRep
    /// reservation.
    public static func evidence(headers: [(name: String, value: String)], robotsTag: XRobotsTag) -> [ConsentEvidence] {
        // Nearly every response has none of the three: one pass, by length first, and nothing allocated then.
        guard headers.contains(where: { header in
            header.name.equalsIgnoringASCIICase("x-robots-tag") || header.name.equalsIgnoringASCIICase("content-usage")
                || header.name.equalsIgnoringASCIICase("tdm-reservation")
        }) else { return [] }
        var evidence: [ConsentEvidence] = robotsTag.directives(headers: headers).map {
            ConsentEvidence(signal: .xRobotsTag, value: $0, location: "X-Robots-Tag header", term: .robotsTag(directive: $0))
        }
        // Several Content-Usage fields combine into one, as RFC 9110 §5.3 joins repeated fields with commas.
        let usage = headers.filter { $0.name.equalsIgnoringASCIICase("content-usage") }.map(\.value)
        if !usage.isEmpty {
            for (category, allowed) in AIPreferences.parse(usage.joined(separator: ", ")) {
                evidence.append(ConsentEvidence(
                    signal: .contentUsage, value: "\(category)=\(allowed ? "y" : "n")", location: "Content-Usage header",
                    term: .usage(category: category, allowed: allowed)
                ))
            }
        }
        if let reservation = TDMRep.reservation(headers: headers) {
            evidence.append(ConsentEvidence(
                signal: .tdmrepHeader, value: "tdm-reservation: \(reservation.reserved ? 1 : 0)", location: "tdm-reservation header",
                term: .tdmReservation(reserved: reservation.reserved), policy: reservation.policy
            ))
        }
        return evidence
    }
}

/// The IETF AI-preferences vocabulary's statements (`draft-ietf-aipref-vocab`, §6 "Exemplary Serialization Format"):
/// an RFC 9651 structured-field Dictionary of categories, each `y` or `n`.
public enum AIPreferences {
    /// The categories a statement states, with `true` for `y` and `false` for `n`, in the order written; the last
    /// value of a repeated key applies (RFC 9651 §4.2.2).
    ///
    /// The draft's processing (§6.6): a value that is not the Token `y` or `n` states nothing; parameters are ignored;
    /// a statement that does not parse as a Dictionary — uppercase keys included, the format is case-sensitive —
    /// states nothing at all. Every label is kept, known or not (`train-ai`, `train-genai`, `search` from the drafts
    /// of 2025 and 2026, `bots`, `ai-output`, `ai-use`); which reserve what is ``ConsentPolicy``'s table. Read with
    /// swift-http-structured-headers, the RFC 9651 parser of the Swift server ecosystem.
    public static func parse(_ statement: String) -> [(category: String, allowed: Bool)] {
        var parser = StructuredFieldValueParser(Array(statement.utf8))
        guard let dictionary = try? parser.parseDictionaryFieldValue() else { return [] }
        var result: [(category: String, allowed: Bool)] = []
        for (key, member) in dictionary {
            guard case let .item(item) = member, case let .token(token) = item.rfc9651BareItem else { continue }
            switch token {
            case "y": result.append((key, true))
            case "n": result.append((key, false))
            default: continue
            }
        }
        return result
    }
}
