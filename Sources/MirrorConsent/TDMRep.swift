import Foundation
import MirrorCore
import MirrorModel

/// The W3C TDM Reservation Protocol (TDMRep), as its Community Group's final report of 10 May 2024 specifies it
/// (https://www.w3.org/community/reports/tdmrep/CG-FINAL-tdmrep-20240510/): an origin's `/.well-known/tdmrep.json`,
/// and the `tdm-reservation` and `tdm-policy` headers of a response.
///
/// Sections followed (anchors of the report):
/// - `#sec-tdm-reservation`: `1` reserves, `0` does not; any other value is a protocol error, read as unset.
/// - `#sec-tdm-policy`: the policy URL is recorded, not fetched; with `0` it is not processed.
/// - `#sec-tdm-file`: the file is a JSON array of rules (`location`, `tdm-reservation`, optional `tdm-policy`); a URL's
///   path is matched against each `location`, case-sensitively, with percent-encoded unreserved characters decoded
///   first; "the most specific match found MUST be used. The most specific match is the first in sequence" — so the
///   first rule whose location matches applies (the file's author orders the rules), and no match leaves the
///   reservation unset. "Failure to provide access to such a representation implies that the origin server does not
///   implement this protocol": a missing, unreachable or unreadable file reserves nothing (an unreadable one is
///   reported once per origin).
/// - `#sec-tdm-file-regexp`: `*` matches any run of characters and a final `$` anchors the end, as in robots.txt
///   (Google's reading, which the report recommends).
/// - `#sec-processing-priority`: the file is read first and a response's header supersedes it. One deliberate
///   departure, towards keeping the reservation: an image the file reserves is not requested at all, so no header of
///   its response can lift the file's reservation; a header can only reserve what the file leaves open.
public enum TDMRep {
    /// The path of the well-known file.
    public static let wellKnownPath = "/.well-known/tdmrep.json"
    /// The largest file read: a file is a list of path rules (the report's examples are a few hundred bytes); 1 MiB
    /// leaves room for tens of thousands of rules and bounds what one origin can make mirror hold.
    static let maximumFileBytes = 1 << 20
    /// Rules read at most; the rest of a longer file is ignored (and reported).
    static let maximumRules = 10_000

    /// One rule of the file.
    public struct Rule: Sendable, Hashable, Codable {
        /// The path pattern.
        public var location: String
        /// `true` for 1, `false` for 0, `nil` when the value is missing or not 0 or 1 (unset).
        public var reserved: Bool?
        /// The rule's `tdm-policy`, or `nil`.
        public var policy: String?
    }

    /// An origin's file, read; its locations compiled once (``PatternSet``).
    public struct Rules: Sendable, Hashable, Codable {
        public var rules: [Rule] {
            didSet { locations = PatternSet(rules.map { PathPattern($0.location) }) }
        }
        private var locations: PatternSet

        /// No file (404, or none could be had): no reservation by file.
        public static let none = Rules(rules: [])

        public init(rules: [Rule]) {
            self.rules = rules
            locations = PatternSet(rules.map { PathPattern($0.location) })
        }

        public static func == (lhs: Rules, rhs: Rules) -> Bool { lhs.rules == rhs.rules }
        public func hash(into hasher: inout Hasher) { hasher.combine(rules) }

        private enum CodingKeys: String, CodingKey { case rules }

        public init(from decoder: any Decoder) throws {
            self.init(rules: try decoder.container(keyedBy: CodingKeys.self).decode([Rule].self, forKey: .rules))
        }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(rules, forKey: .rules)
        }

        /// Reads the file's JSON; throws a short reason when it is not a TDMRep file.
        public init(parsing data: Data) throws(Unreadable) {
            guard data.count <= TDMRep.maximumFileBytes else { throw Unreadable(reason: "over \(TDMRep.maximumFileBytes >> 10) KiB") }
            do {
                self.init(rules: try JSONDecoder().decode(File.self, from: data).rules)
            } catch {
                throw Unreadable(reason: (try? JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed])) == nil ? "not JSON" : "not a JSON array of rules")
            }
        }

        /// The file's JSON: an array whose members that are not rules (no `location`, not an object) are skipped.
        private struct File: Decodable {
            var rules: [Rule] = []

            init(from decoder: any Decoder) throws {
                var array = try decoder.unkeyedContainer()
                while !array.isAtEnd, rules.count < TDMRep.maximumRules {
                    // A member that does not decode is not consumed: skip it.
                    if let member = try? array.decode(Member.self) {
                        if let rule = member.rule { rules.append(rule) }
                    } else {
                        _ = try array.decode(Skipped.self)
                    }
                }
            }
        }

        /// One member of the array: a rule when it has a non-empty `location`.
        private struct Member: Decodable {
            var rule: Rule?

            private enum Keys: String, CodingKey {
                case location
                case reservation = "tdm-reservation"
                case policy = "tdm-policy"
            }

            init(from decoder: any Decoder) throws {
                let object = try decoder.container(keyedBy: Keys.self)
                guard let location = try? object.decode(String.self, forKey: .location), !location.isEmpty else { return }
                // 1 or 0 as a number; the text "1" or "0" is read too; anything else (true, 2, "yes") is unset.
                let reserved: Bool? = if let number = try? object.decode(Int.self, forKey: .reservation) {
                    number == 1 ? true : number == 0 ? false : nil
                } else if let text = try? object.decode(String.self, forKey: .reservation) {
                    TDMRep.reservation(text: text)
                } else {
                    nil
                }
                rule = Rule(location: location, reserved: reserved, policy: try? object.decode(String.self, forKey: .policy))
            }
        }

        /// Whatever a member that is not a rule is.
        private struct Skipped: Decodable {
            init(from decoder: any Decoder) throws {}
        }

        /// The first rule whose location matches `url`'s path, with its position in the file (from 1), or `nil`.
        /// A file whose locations cost more than ``PatternSet/workLimit`` to match the URL reserves it, as its
        /// first reserving rule, if it has one.
        public func rule(for url: URL) -> (number: Int, rule: Rule)? {
            rule(target: PathMatching.target(of: url))
        }

        /// ``rule(for:)`` for a path and query already made a target (``PathMatching/target(of:)``).
        func rule(target: [UInt8]) -> (number: Int, rule: Rule)? {
            guard !rules.isEmpty else { return nil }
            switch locations.lookup(target, choosing: .first) {
            case let .matched(chosen):
                return chosen.first.map { ($0 + 1, rules[$0]) }
            case .tooCostly:
                return rules.firstIndex { $0.reserved == true }.map { ($0 + 1, rules[$0]) }
            }
        }

        /// What the file says of `url`, as evidence: the first matching rule's reservation, when it sets one.
        public func evidence(for url: URL) -> ConsentEvidence? {
            evidence(target: PathMatching.target(of: url))
        }

        /// ``evidence(for:)`` for a path and query already made a target.
        func evidence(target: [UInt8]) -> ConsentEvidence? {
            guard let (number, rule) = rule(target: target), let reserved = rule.reserved else { return nil }
            return ConsentEvidence(
                signal: .tdmrepFile, value: "tdm-reservation: \(reserved ? 1 : 0)",
                location: "\(TDMRep.wellKnownPath) rule \(number) (location \(rule.location))",
                term: .tdmReservation(reserved: reserved), policy: reserved ? rule.policy : nil
            )
        }
    }

    /// Why a file could not be read as TDMRep.
    public struct Unreadable: Error, Sendable, Hashable {
        public var reason: String
    }

    /// A response's `tdm-reservation` (and its `tdm-policy` when it reserves), or `nil` when it has none or its
    /// value is not 0 or 1.
    public static func reservation(headers: [(name: String, value: String)]) -> (reserved: Bool, policy: String?)? {
        for header in headers where header.name.equalsIgnoringASCIICase("tdm-reservation") {
            guard let reserved = reservation(text: header.value.trimmingCharacters(in: .whitespaces)) else { continue }
            let policy = headers.first { $0.name.equalsIgnoringASCIICase("tdm-policy") }?.value.trimmingCharacters(in: .whitespaces)
            return (reserved, reserved ? policy.flatMap { $0.isEmpty ? nil : $0 } : nil)
        }
        return nil
    }

    /// `1` or `0`; anything else is unset.
    static func reservation(text: String) -> Bool? {
        text == "1" ? true : text == "0" ? false : nil
    }
}
