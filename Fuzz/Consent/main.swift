// libFuzzer harness for the readers of site owners' reservations: robots.txt (its rules, groups and Content-Signal /
// Content-Usage lines), the TDMRep file, AI-preferences statements, X-Robots-Tag values, and the compiled path matcher.
//
// Not part of Package.swift: `scripts/fuzz/fuzz` compiles it with `-sanitize=fuzzer,address -parse-as-library` against
// MirrorKit's closure built in `.build-fuzz` with testing enabled.
//
// The first byte picks the reader (mod 5); the rest is its input. Besides "no trap":
// - robots.txt: a URL built from the input's own text is decided the same way twice, through the compiled rules and
//   after a JSON round trip (what the site memory stores); a disallowed URL has no usage evidence.
// - the matcher: the input's lines are patterns and its last line a path; the set's longest and first choices must
//   equal what trying each pattern alone gives (a differential check of the prefix search and the pruning).
import Foundation
@testable import MirrorConsent

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzConsent(_ start: UnsafeRawPointer?, _ count: Int) -> CInt {
    guard count > 0, let start else { return 0 }
    let bytes = Array(UnsafeRawBufferPointer(start: start, count: count))
    let selector = bytes[0]
    let input = Array(bytes.dropFirst())
    let text = String(decoding: input, as: UTF8.self)

    switch selector % 5 {
    case 0:
        let rules = RobotsRules(parsing: input, agents: ["mirror", "testbot"])
        // URLs from the file's own words, so that its rules meet paths they may match
        let words = text.split(whereSeparator: { $0 == " " || $0 == "\n" || $0 == "\r" || $0 == "\t" }).prefix(8)
        let decoded = (try? JSONEncoder().encode(rules)).flatMap { try? JSONDecoder().decode(RobotsRules.self, from: $0) }
        precondition(decoded != nil, "robots rules do not survive a JSON round trip")
        for word in words {
            var path = String(word)
            if !path.hasPrefix("/") { path = "/" + path }
            guard let url = URL(string: "http://h.test" + path.replacingOccurrences(of: "$", with: "")) else { continue }
            let allowed = rules.allows(url)
            precondition(decoded!.allows(url) == allowed, "a decoded copy decides \(url) otherwise")
            if !allowed { precondition(rules.evidence(for: url).isEmpty, "usage evidence for a disallowed URL") }
            _ = rules.decidingRules(for: url)
        }
    case 1:
        if let file = try? TDMRep.Rules(parsing: Data(input)) {
            for path in ["/", "/a.png", "/" + text.prefix(64)] {
                if let url = URL(string: "http://h.test" + path) { _ = file.evidence(for: url) }
            }
        }
        _ = TDMRep.reservation(headers: [(name: "tdm-reservation", value: text), (name: "tdm-policy", value: text)])
    case 2:
        _ = AIPreferences.parse(text)
        _ = RobotsRules.contentSignals(text)
    case 3:
        _ = XRobotsTag(agents: ["mirror", "testbot"]).directives(value: text)
    default:
        let lines = input.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).prefix(64)
        guard lines.count >= 2 else { return 0 }
        let patterns = lines.dropLast().map { PathPattern(String(decoding: $0, as: UTF8.self)) }
        let target = PathMatching.target(Array(lines.last!))
        let set = PatternSet(patterns)
        let matching = patterns.indices.filter { patterns[$0].matches(target) }
        let longest = matching.map { patterns[$0].length }.max()
        let expectedLongest = matching.filter { patterns[$0].length == longest }
        if case let .matched(chosen) = set.lookup(target, choosing: .longest) {
            precondition(chosen == expectedLongest, "longest: \(chosen) against \(expectedLongest)")
        }
        if case let .matched(chosen) = set.lookup(target, choosing: .first) {
            precondition(chosen == Array(matching.prefix(1)), "first: \(chosen) against \(matching.prefix(1))")
        }
    }
    return 0
}
