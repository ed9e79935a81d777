import Foundation
import MirrorCore

/// The identity of a cached resource, built from a *normalized* URL that never contains a secret.
///
/// Two URLs that name the same image get the same key even when they differ in ways that do not change
/// the bytes: letter case of scheme and host, a default port, a fragment, the order of query items, and
/// tracking, cache-busting or signature query items. Normalization, in order:
///
/// 1. the scheme and host are lowercased;
/// 2. the port is dropped when it is the scheme's default (`http` 80, `https` 443);
/// 3. the user name and password (`user:pass@host`) are dropped, because they are secrets;
/// 4. an empty path becomes `/`, and the fragment is dropped;
/// 5. query items named in ``droppedQueryItemNames``, or starting with one of
///    ``droppedQueryItemPrefixes``, or named in the `droppingQueryItems` argument, are dropped
///    (names compare case-insensitively after percent-decoding);
/// 6. the remaining query items are sorted by name, then value, keeping their original encoding, and
///    an empty query is removed.
///
/// Because secrets such as API keys and signatures are dropped *before* the key is built, neither
/// ``normalizedURL`` nor ``fileName`` ever contains one, so a key can be logged, written to an index
/// file or shown in `mirror cache stats` safely.
///
/// Keys for things that are not URLs (a search page identified by provider, query and page number, say)
/// come from ``init(namespace:string:)``; those strings are taken as given, so do not put secrets in them.
///
/// ```swift
/// let a = CacheKey(url: URL(string: "https://Example.com:443/cat.jpg?utm_source=x&w=640&api_key=SECRET")!)
/// let b = CacheKey(url: URL(string: "https://example.com/cat.jpg?w=640#top")!)
/// assert(a == b)
/// print(a.normalizedURL) // https://example.com/cat.jpg?w=640
/// ```
public struct CacheKey: Hashable, Sendable, CustomStringConvertible {
    /// The normalized string the key stands for.
    ///
    /// For a key made from a URL, the normalized URL (see the type's documentation). For a key made by
    /// ``init(namespace:string:)``, `"[<namespace>] <string>"`: the leading `[` cannot start an absolute
    /// URL, so the two kinds of key never collide.
    public let normalizedURL: String

    /// The key's name on disk: the SHA-256 of ``normalizedURL`` as 64 lowercase hex digits. Computed when asked:
    /// most keys only tell URLs apart and never name a file.
    public var fileName: String { sha256Hex(normalizedURL) }

    /// The namespace given to ``init(namespace:string:)``, or `nil` for a key made from a URL.
    public let namespace: String?

    /// Query item names that are always dropped, lowercased.
    ///
    /// - Tracking: `fbclid`, `gclid`, `dclid`, `msclkid`, `mc_cid`, `mc_eid`, `igshid`, `_ga`;
    ///   Giphy's `cid` (client id), `rid` (rendition id), `ep` (endpoint) and `ct` (content type).
    /// - Secrets and signatures: `api_key`, `apikey`, `key`, `client_id`, `client_secret`,
    ///   `access_token`, `token`, `sig`, `signature`, `auth`, `password`.
    ///
    /// Some sites use `key` or `token` for something else; dropping it can only merge two keys, which
    /// costs a wrong cache hit on such a site, never a leaked secret. Pass a narrower provider-specific
    /// list through `droppingQueryItems` rather than shrinking this one.
    public static let droppedQueryItemNames: Set<String> = [
        // Tracking and campaign parameters.
        "fbclid", "gclid", "dclid", "msclkid", "mc_cid", "mc_eid", "igshid", "_ga",
        // Giphy: client id, rendition id, endpoint, content type; they vary per request, not per image.
        "cid", "rid", "ep", "ct",
        // Secrets, credentials and signatures.
        "api_key", "apikey", "key", "client_id", "client_secret", "access_token", "token",
        "sig", "signature", "auth", "password",
    ]

    /// Query item name prefixes that are always dropped, lowercased: `utm_` (campaign tracking) and
    /// `x-amz-` (AWS SigV4 pre-signed URL parameters such as `X-Amz-Signature` and `X-Amz-Credential`).
    public static let droppedQueryItemPrefixes: [String] = ["utm_", "x-amz-"]

    /// Creates the key for a URL, normalizing it first.
    ///
    /// - Parameters:
    ///   - url: The URL of the resource, as a provider returned it.
    ///   - droppingQueryItems: More query item names to drop, for example a provider's own volatile
    ///     parameters. They are matched case-insensitively, on top of ``droppedQueryItemNames``.
    public init(url: URL, droppingQueryItems extraNames: Set<String> = []) {
        let normalized = Self.alreadyNormalized(url.absoluteString)
            ?? Self.normalize(url, extraNames: Set(extraNames.map { $0.lowercased() }))
        self.init(normalizedString: normalized, namespace: nil)
    }

    /// The normalized form of a URL's text (`absoluteString`), the same as ``init(url:droppingQueryItems:)``'s.
    package static func normalized(_ text: String) -> String? {
        if let same = alreadyNormalized(text) { return same }
        return URL(string: text).map { CacheKey(url: $0).normalizedURL }
    }

    /// `text` itself when it is normalized already, read from its bytes alone: `http(s)://host[:port]/path` with a
    /// lowercase scheme and host, a port that is not the scheme's default, no user, query or fragment, and a path of
    /// plain URL characters without dot segments — what nearly every image URL of a table looks like. Nil for anything
    /// else, which `URLComponents` normalizes (measured: 2 % of a run's samples, for text that stays as it was).
    package static func alreadyNormalized(_ text: String) -> String? {
        let fast = text.utf8.withContiguousStorageIfAvailable { bytes -> Bool in
            let https: [UInt8] = Array("https://".utf8), http = Array("http://".utf8)
            let start: Int, defaultPort: Int
            if bytes.starts(with: https) {
                (start, defaultPort) = (https.count, 443)
            } else if bytes.starts(with: http) {
                (start, defaultPort) = (http.count, 80)
            } else {
                return false
            }
            guard let slash = bytes[start...].firstIndex(of: UInt8(ascii: "/")), slash > start else { return false }
            // The authority: a lowercase host name or IPv4 address, then perhaps a port.
            var index = start
            while index < slash, isHostByte(bytes[index]) { index += 1 }
            guard index > start else { return false }
            if index < slash {
                guard bytes[index] == UInt8(ascii: ":") else { return false }
                let digits = bytes[(index + 1)..<slash]
                guard (1...5).contains(digits.count), digits.first != UInt8(ascii: "0"),
                      digits.allSatisfy({ (0x30...0x39).contains($0) }) else { return false }
                let port = digits.reduce(0) { $0 * 10 + Int($1 - 0x30) }
                guard port <= 65_535, port != defaultPort else { return false }
            }
            // The path: plain characters, no query, no fragment, no `.` or `..` segment.
            var previous: UInt8 = 0
            for byte in bytes[slash...] {
                guard isPathByte(byte), !(previous == UInt8(ascii: "/") && byte == UInt8(ascii: ".")) else { return false }
                previous = byte
            }
            return true
        }
        return fast == true ? text : nil
    }

    private static func isHostByte(_ byte: UInt8) -> Bool {
        (0x61...0x7A).contains(byte) || (0x30...0x39).contains(byte) || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "-")
    }

    /// Unreserved characters, sub-delimiters, `:`, `@`, `%` (of an escape) and `/`; not `?` or `#`.
    private static func isPathByte(_ byte: UInt8) -> Bool {
        switch byte {
        case 0x61...0x7A, 0x41...0x5A, 0x30...0x39: true
        case UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"), UInt8(ascii: "!"), UInt8(ascii: "$"),
             UInt8(ascii: "&"), UInt8(ascii: "'"), UInt8(ascii: "("), UInt8(ascii: ")"), UInt8(ascii: "*"), UInt8(ascii: "+"),
             UInt8(ascii: ","), UInt8(ascii: ";"), UInt8(ascii: "="), UInt8(ascii: ":"), UInt8(ascii: "@"), UInt8(ascii: "%"),
             UInt8(ascii: "/"): true
        default: false
        }
    }

    /// What `URLComponents` makes of `url` (``init(url:droppingQueryItems:)`` without its shortcut), for tests that
    /// check the shortcut against it.
    package static func normalizedByComponents(_ url: URL) -> String {
        normalize(url, extraNames: [])
    }

    /// Creates a key for something that is not a URL, such as a page of search results.
    ///
    /// - Parameters:
    ///   - namespace: What kind of thing the key names, for example `"openverse-search"`.
    ///   - string: The identity within the namespace, for example `"q=kittens&page=2"`. It is stored
    ///     as given: it must not contain secrets.
    public init(namespace: String, string: String) {
        self.init(normalizedString: "[\(namespace)] \(string)", namespace: namespace)
    }

    private init(normalizedString: String, namespace: String?) {
        self.normalizedURL = normalizedString
        self.namespace = namespace
    }

    public var description: String { normalizedURL }

    // The other two properties are derived from `normalizedURL` (the namespace is part of its text).
    public static func == (lhs: CacheKey, rhs: CacheKey) -> Bool {
        lhs.normalizedURL == rhs.normalizedURL
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(normalizedURL)
    }

    /// Whether a query item with this (percent-encoded) name is dropped from keys.
    static func isDropped(queryItemName encodedName: String, extraNames: Set<String>) -> Bool {
        let name = (encodedName.removingPercentEncoding ?? encodedName).lowercased()
        return droppedQueryItemNames.contains(name)
            || extraNames.contains(name)
            || droppedQueryItemPrefixes.contains { name.hasPrefix($0) }
    }

    /// Orders query items by name, then value; `?a` (no value) sorts before `?a=`.
    private static func sortKey(_ item: URLQueryItem) -> (String, String, Int) {
        (item.name, item.value ?? "", item.value == nil ? 0 : 1)
    }

    private static func normalize(_ url: URL, extraNames: Set<String>) -> String {
        guard var components = URLComponents(url: url, resolvingAgainstBaseURL: true) else {
            // Unparsable in pieces: the raw text may hold a secret, so the key is a digest of it. Such a
            // URL still gets a stable key; it just is not normalized.
            return "[unparsable] " + sha256Hex(url.absoluteString)
        }
        let scheme = components.scheme?.lowercased()
        components.scheme = scheme
        components.percentEncodedHost = components.percentEncodedHost?.lowercased()
        if let port = components.port, (scheme == "http" && port == 80) || (scheme == "https" && port == 443) {
            components.port = nil
        }
        components.percentEncodedUser = nil
        components.percentEncodedPassword = nil
        components.fragment = nil
        if components.host != nil, components.percentEncodedPath.isEmpty {
            components.percentEncodedPath = "/"
        }
        if let items = components.percentEncodedQueryItems {
            let kept = items
                .filter { !isDropped(queryItemName: $0.name, extraNames: extraNames) }
                .sorted { sortKey($0) < sortKey($1) }
            components.percentEncodedQueryItems = kept.isEmpty ? nil : kept
        }
        return components.string ?? "[unparsable] " + sha256Hex(url.absoluteString)
    }
}
