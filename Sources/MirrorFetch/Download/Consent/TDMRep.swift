import Foundation
import MirrorCore
import MirrorStorage

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

    /// An origin's file, read.
    public struct Rules: Sendable, Hashable, Codable {
        public var rules: [Rule]

        /// No file (404, or none could be had): no reservation by file.
        public static let none = Rules(rules: [])

        public init(rules: [Rule]) {
            self.rules = rules
        }

        /// Reads the file's JSON; throws a short reason when it is not a TDMRep file.
        public init(parsing data: Data) throws(Unreadable) {
            guard data.count <= TDMRep.maximumFileBytes else { throw Unreadable(reason: "over \(TDMRep.maximumFileBytes >> 10) KiB") }
            do {
                rules = try JSONDecoder().decode(File.self, from: data).rules
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
        public func rule(for url: URL) -> (number: Int, rule: Rule)? {
            guard !rules.isEmpty else { return nil }
            let path = PathMatching.target(of: url)
            for (index, rule) in rules.enumerated() where PathMatching.matches(PathMatching.decodingUnreserved(rule.location), path) {
                return (index + 1, rule)
            }
            return nil
        }

        /// What the file says of `url`, as evidence: the first matching rule's reservation, when it sets one.
        public func evidence(for url: URL) -> ConsentEvidence? {
            guard let (number, rule) = rule(for: url), let reserved = rule.reserved else { return nil }
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

/// robots.txt's path matching (RFC 9309 §2.2.2, Google's reading), shared by robots.txt's rules, its Content-Usage
/// and Content-Signal lines, and TDMRep's locations.
enum PathMatching {
    /// The path and query of `url` as it is matched: percent-encoded, with percent-encoded unreserved characters
    /// decoded (RFC 9309 §2.2.2 and TDMRep `#sec-tdm-file`: "it MUST be unencoded prior to comparison, unless it is a
    /// reserved character").
    static func target(of url: URL) -> String {
        var target = url.path(percentEncoded: true)
        if target.isEmpty { target = "/" }
        if let query = url.query(percentEncoded: true) { target += "?" + query }
        return decodingUnreserved(target)
    }

    /// `text` with every `%XX` that encodes an unreserved character (`A-Z a-z 0-9 - . _ ~`) decoded; other escapes,
    /// and `%` not followed by two hex digits, are kept as they are.
    static func decodingUnreserved(_ text: String) -> String {
        guard text.utf8.contains(UInt8(ascii: "%")) else { return text }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count)
        let source = Array(text.utf8)
        var index = 0
        while index < source.count {
            if source[index] == UInt8(ascii: "%"), index + 2 < source.count,
               let high = hexValue(source[index + 1]), let low = hexValue(source[index + 2]) {
                let byte = high << 4 | low
                if isUnreserved(byte) {
                    bytes.append(byte)
                    index += 3
                    continue
                }
            }
            bytes.append(source[index])
            index += 1
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    private static func isUnreserved(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
            true
        default:
            false
        }
    }

    /// Whether `pattern` (with `*` for any run of characters and a final `$` for the end) matches the start of `path`.
    static func matches(_ pattern: String, _ path: String) -> Bool {
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

    /// The length a pattern counts for in robots.txt's longest-match rule (its bytes, with `%XX` unreserved decoded).
    static func specificity(_ pattern: String) -> Int {
        decodingUnreserved(pattern).utf8.count
    }
}
