import Foundation

/// The path matching of robots.txt (RFC 9309 §2.2.2–2.2.3), shared by its rules, its `Content-Signal` and
/// `Content-Usage` lines and TDMRep's locations: one reading of a pattern, compiled once per origin.
///
/// - A pattern and a URL are compared as octets, each normalised the same way (``PathMatching/normalised(_:)``):
///   octets outside printable ASCII percent-encoded, escapes of unreserved characters decoded, the hex digits of
///   other escapes uppercased. So `Disallow: /été/` stops `/%C3%A9t%C3%A9/a.png`, and `/%7Efred/` is `/~fred/`.
/// - `*` matches any run of octets, anywhere in the pattern, the end included (`/private/*` is `/private/`); `$`
///   anchors the end when it is the pattern's last octet and is an ordinary octet elsewhere; a pattern otherwise
///   matches the start of the path.
/// - Its length, in the longest-match rule, is the normalised pattern's octets, operators included (what Google's
///   reference parser counts).
package struct PathPattern: Sendable, Hashable {
    /// As written in the file.
    package let source: String
    /// The normalised octets, operators included.
    let octets: [UInt8]
    /// The literal octets before the first `*` (the whole pattern when it has none), without a final `$`.
    let prefix: [UInt8]
    /// The literal runs after each `*`, in order (empty runs included: `/a*` has one, empty).
    let pieces: [Piece]
    /// Whether a final `$` anchors the end.
    let anchored: Bool

    /// A literal run after a `*`, with its Knuth–Morris–Pratt failure table, so that finding it costs the octets it
    /// passes over and no more.
    struct Piece: Sendable, Hashable {
        let octets: [UInt8]
        let failure: [Int32]

        init(_ octets: [UInt8]) {
            self.octets = octets
            var failure = [Int32](repeating: 0, count: octets.count)
            var k = 0
            for index in octets.indices.dropFirst() {
                while k > 0, octets[index] != octets[k] { k = Int(failure[k - 1]) }
                if octets[index] == octets[k] { k += 1 }
                failure[index] = Int32(k)
            }
            self.failure = failure
        }

        /// Where the first occurrence in `text[from...]` ends, or `nil`; `work` grows by the octets looked at.
        func end(in text: [UInt8], from start: Int, work: inout Int) -> Int? {
            guard !octets.isEmpty else { return start }
            guard start < text.count else { return nil }
            // Unchecked reads in the loop (each index is below its buffer's count by the loop's conditions): the checked
            // ones made a lookup that reached the work limit take 20 times longer.
            let end = text.withUnsafeBufferPointer { text in
                octets.withUnsafeBufferPointer { octets in
                    failure.withUnsafeBufferPointer { failure -> Int? in
                        var k = 0
                        var index = start
                        let first = octets[0]
                        while index < text.count {
                            if k == 0 {
                                // Skip to the next place the run's first octet is.
                                while index < text.count, text[index] != first { index += 1 }
                                guard index < text.count else { return nil }
                            }
                            while k > 0, text[index] != octets[k] { k = Int(failure[k - 1]) }
                            if text[index] == octets[k] { k += 1 }
                            index += 1
                            if k == octets.count { return index }
                        }
                        return nil
                    }
                }
            }
            work += (end ?? text.count) - start
            return end
        }
    }

    package init(_ source: String) {
        self.source = source
        let octets = PathMatching.normalised(Array(source.utf8))
        self.octets = octets
        var body = octets[...]
        anchored = body.last == UInt8(ascii: "$")
        if anchored { body = body.dropLast() }
        // A `$` before the end is an ordinary octet, compared as the URL's `$` is: escaped (``PathMatching/target(_:)``).
        let literal = PathMatching.escaping(body, operators: [UInt8(ascii: "$")])
        let runs = literal.split(separator: UInt8(ascii: "*"), omittingEmptySubsequences: false)
        prefix = Array(runs[0])
        pieces = runs.dropFirst().map { Piece(Array($0)) }
    }

    /// The length that counts in the longest-match rule.
    package var length: Int { octets.count }

    /// Whether the pattern matches `target` (``PathMatching/target(of:)``), given that its ``prefix``
    /// is already known to start it; `work` grows by the octets looked at.
    func matchesAfterPrefix(_ target: [UInt8], work: inout Int) -> Bool {
        guard !pieces.isEmpty else { return !anchored || target.count == prefix.count }
        var position = prefix.count
        // Each run but an anchored last one is found at its first place after the one before: the earliest end leaves
        // the most room for the rest, so if this finds no match, none exists.
        for piece in anchored ? pieces.dropLast() : pieces[...] {
            guard let end = piece.end(in: target, from: position, work: &work) else { return false }
            position = end
        }
        guard anchored, let last = pieces.last else { return true }
        work += last.octets.count
        return target.count - position >= last.octets.count && target.suffix(last.octets.count).elementsEqual(last.octets)
    }

    /// Whether the pattern matches `target` (``PathMatching/target(_:)``), however long it takes: for tests and one-off
    /// checks.
    package func matches(_ target: [UInt8]) -> Bool {
        var work = 0
        return target.starts(with: prefix) && matchesAfterPrefix(target, work: &work)
    }
}

/// A list of patterns compiled for lookups, each URL costing what its own octets and the patterns that could match it
/// cost, not the whole list: the literal prefixes are kept sorted, so that those that start a path are found by
/// binary search; a pattern with a `*` is tried only when its prefix starts the path, and only while it could still
/// beat the match in hand.
package struct PatternSet: Sendable {
    /// The patterns, in the order given.
    package let patterns: [PathPattern]
    /// Every distinct literal prefix, sorted by octets, with the patterns that have it.
    private let prefixes: [(octets: [UInt8], members: [Int32])]
    /// Each pattern's ``PathPattern/length``.
    private let lengths: [Int]

    /// How a lookup chooses among the patterns that match.
    package enum Choice: Sendable {
        /// Every matching pattern of the greatest length (robots.txt's rules and usage lines).
        case longest
        /// The first matching pattern in the list (TDMRep: "the most specific match is the first in sequence").
        case first
    }

    /// What a lookup found.
    package enum Lookup: Sendable, Hashable {
        /// The chosen patterns' positions in ``patterns``, in increasing order; empty when none matches.
        case matched([Int])
        /// The lookup gave up after ``workLimit`` octets: the file's patterns cost too much to match this URL.
        case tooCostly
    }

    /// The octets a lookup may look at before it gives up. A real file's patterns cost a few thousand at most; a file
    /// written to be slow (thousands of `*` patterns over a long path) stops here (SECURITY.md, 7: tens of milliseconds).
    package static let workLimit = 1 << 22

    package init(_ patterns: [PathPattern]) {
        self.patterns = patterns
        lengths = patterns.map(\.length)
        var byPrefix: [[UInt8]: [Int32]] = [:]
        for (index, pattern) in patterns.enumerated() { byPrefix[pattern.prefix, default: []].append(Int32(index)) }
        prefixes = byPrefix.map { ($0.key, $0.value) }.sorted { $0.octets.lexicographicallyPrecedes($1.octets) }
    }

    package var isEmpty: Bool { patterns.isEmpty }

    /// The patterns that match `target` (normalised: ``PathMatching/target(of:)``), chosen by `choice`.
    package func lookup(_ target: [UInt8], choosing choice: Choice) -> Lookup {
        var work = 0
        return lookup(target, choosing: choice, work: &work)
    }

    /// ``lookup(_:choosing:)``, adding to `work` the octets it looked at.
    package func lookup(_ target: [UInt8], choosing choice: Choice, work: inout Int) -> Lookup {
        guard !patterns.isEmpty else { return .matched([]) }
        var candidates: [Int] = []
        forEachPrefix(of: target) { members in candidates += members.lazy.map(Int.init) }
        let limit = work + Self.workLimit
        work += target.count
        switch choice {
        case .longest:
            // The longest first; stop once what is left is shorter than a match in hand.
            candidates.sort { lengths[$0] > lengths[$1] || (lengths[$0] == lengths[$1] && $0 < $1) }
            var chosen: [Int] = []
            for index in candidates {
                if let best = chosen.first, lengths[index] < lengths[best] { break }
                if patterns[index].matchesAfterPrefix(target, work: &work) { chosen.append(index) }
                if work > limit { return .tooCostly }
            }
            return .matched(chosen.sorted())
        case .first:
            candidates.sort()
            for index in candidates {
                if patterns[index].matchesAfterPrefix(target, work: &work) { return .matched([index]) }
                if work > limit { return .tooCostly }
            }
            return .matched([])
        }
    }

    /// Calls `body` with the patterns of each distinct prefix that starts `target`.
    ///
    /// The largest prefix not after `target[..<bound]` either starts it (found; look below it, one octet shorter) or
    /// shares its first `l` octets with it, and then no prefix longer than `l` can start it (it would sort between the
    /// two); so `bound` falls at every step, and each step is one binary search.
    private func forEachPrefix(of target: [UInt8], _ body: ([Int32]) -> Void) {
        var bound = target.count
        while true {
            let limit = target[..<bound]
            var low = 0
            var high = prefixes.count
            while low < high {
                let middle = (low + high) / 2
                if limit.lexicographicallyPrecedes(prefixes[middle].octets) { high = middle } else { low = middle + 1 }
            }
            guard low > 0 else { return }
            let candidate = prefixes[low - 1].octets
            var shared = 0
            while shared < candidate.count, shared < bound, candidate[shared] == target[shared] { shared += 1 }
            if shared == candidate.count {
                body(prefixes[low - 1].members)
                guard shared > 0 else { return }
                bound = shared - 1
            } else {
                bound = shared
            }
        }
    }
}

/// The octets that are compared: a URL's path and query, and patterns, normalised alike (RFC 9309 §2.2.2).
package enum PathMatching {
    /// The path and query of `url` as libcurl sends them (percent-encoded, `/` for an empty path), as compared.
    package static func target(of url: URL) -> [UInt8] {
        var target = url.path(percentEncoded: true)
        if target.isEmpty { target = "/" }
        if let query = url.query(percentEncoded: true) { target += "?" + query }
        return self.target(Array(target.utf8))
    }

    /// A path and query as compared: normalised, with its `*` and `$` escaped (`%2A`, `%24`), since in a pattern those
    /// are operators and the escapes stand for the octets themselves (RFC 9309 §2.2.3; TDMRep `#sec-tdm-file-regexp`:
    /// `/path/foo-%24` matches `/path/foo-$`).
    package static func target(_ octets: [UInt8]) -> [UInt8] {
        escaping(normalised(octets), operators: [UInt8(ascii: "*"), UInt8(ascii: "$")])
    }

    /// `octets` with each of `operators` written as its `%XX` escape.
    static func escaping(_ octets: some Collection<UInt8>, operators: [UInt8]) -> [UInt8] {
        guard octets.contains(where: operators.contains) else { return Array(octets) }
        var output: [UInt8] = []
        output.reserveCapacity(octets.count + 8)
        for octet in octets {
            if operators.contains(octet) {
                output += [UInt8(ascii: "%"), hexDigits[Int(octet >> 4)], hexDigits[Int(octet & 0xF)]]
            } else {
                output.append(octet)
            }
        }
        return output
    }

    /// `octets` as they are compared: every octet outside printable ASCII (and the space) percent-encoded, every
    /// `%XX` of an unreserved character (`A-Z a-z 0-9 - . _ ~`) decoded, and the hex digits of every other escape
    /// uppercased; a `%` not followed by two hex digits is kept as it is.
    package static func normalised(_ octets: [UInt8]) -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(octets.count)
        var index = 0
        while index < octets.count {
            let octet = octets[index]
            if octet == UInt8(ascii: "%"), index + 2 < octets.count,
               let high = hexValue(octets[index + 1]), let low = hexValue(octets[index + 2]) {
                let decoded = high << 4 | low
                if isUnreserved(decoded) {
                    output.append(decoded)
                } else {
                    output += [octet, hexDigits[Int(high)], hexDigits[Int(low)]]
                }
                index += 3
                continue
            }
            if octet <= 0x20 || octet >= 0x7F {
                output += [UInt8(ascii: "%"), hexDigits[Int(octet >> 4)], hexDigits[Int(octet & 0xF)]]
            } else {
                output.append(octet)
            }
            index += 1
        }
        return output
    }

    private static let hexDigits = Array("0123456789ABCDEF".utf8)

    private static func hexValue(_ octet: UInt8) -> UInt8? {
        switch octet {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): octet - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): octet - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): octet - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    private static func isUnreserved(_ octet: UInt8) -> Bool {
        switch octet {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
            true
        default:
            false
        }
    }
}
