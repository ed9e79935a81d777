import Foundation

/// Builds request URLs with strict query encoding and derives cache keys without secrets.
///
/// Query values are percent-encoded by hand: `URLComponents` leaves `+` alone, which servers read as a space
/// (a search for "c++" would become "c  "), so only RFC 3986 unreserved characters stay literal.
struct ProviderURLBuilder: Sendable {
    /// The query parameters, in order.
    package var items: [(name: String, value: String)] = []

    package mutating func add(_ name: String, _ value: String) {
        items.append((name, value))
    }

    package mutating func add(_ name: String, _ value: Int) {
        items.append((name, String(value)))
    }

    /// Adds or replaces `name` (used to echo continuation tokens over the base parameters).
    package mutating func set(_ name: String, _ value: String) {
        if let index = items.firstIndex(where: { $0.name == name }) {
            items[index].value = value
        } else {
            items.append((name, value))
        }
    }

    /// The endpoint with these items appended after any query the endpoint already has.
    package func url(endpoint: URL) throws(ProviderError) -> URL {
        try Self.url(endpoint: endpoint, items: items)
    }

    /// The cache key: the URL without the parameters named in `secretNames` or holding one of `secretValues`.
    package func cacheKey(endpoint: URL, secretNames: Set<String>, secretValues: [String]) throws(ProviderError) -> String {
        let kept = items.filter { item in
            !secretNames.contains(item.name) && !secretValues.contains(where: { !$0.isEmpty && item.value.contains($0) })
        }
        return try Self.url(endpoint: endpoint, items: kept).absoluteString
    }

    package static func url(endpoint: URL, items: [(name: String, value: String)]) throws(ProviderError) -> URL {
        guard var components = URLComponents(url: endpoint, resolvingAgainstBaseURL: true) else {
            throw .configuration(message: "the endpoint \(endpoint.absoluteString) is not a valid URL")
        }
        var query = components.percentEncodedQuery ?? ""
        for item in items {
            if !query.isEmpty { query += "&" }
            query += encode(item.name) + "=" + encode(item.value)
        }
        components.percentEncodedQuery = query.isEmpty ? nil : query
        guard let url = components.url else {
            throw .configuration(message: "cannot build a request URL from the endpoint \(endpoint.absoluteString)")
        }
        return url
    }

    /// Percent-encodes everything but RFC 3986 unreserved characters.
    package static func encode(_ text: String) -> String {
        var result = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."),
                UInt8(ascii: "_"), UInt8(ascii: "~"):
                result.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                result += String(format: "%%%02X", byte)
            }
        }
        return result
    }

    /// `application/x-www-form-urlencoded` body for `items`, with the same strict encoding.
    static func formBody(_ items: [(name: String, value: String)]) -> Data {
        Data(items.map { encode($0.name) + "=" + encode($0.value) }.joined(separator: "&").utf8)
    }
}

/// A short, stable, non-cryptographic fingerprint (64-bit FNV-1a, hex) for ids and cache keys.
///
/// Used where an API has no id (Google results are keyed by their link) and to keep a value such as a Google
/// engine id distinguishable in a cache key without printing it. It is not a secret-safe hash of a key:
/// keys are removed from cache keys, never hashed into them.
enum StableFingerprint {
    package static func hex(_ text: String) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in text.utf8 {
            hash ^= UInt64(byte)
            hash &*= 0x0000_0100_0000_01b3
        }
        let digits = String(hash, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }
}
