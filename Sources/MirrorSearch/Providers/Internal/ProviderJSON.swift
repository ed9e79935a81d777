import Foundation

/// A parsed JSON value with lenient accessors, because image APIs mix types for the same field
/// (Flickr `total` is a string or an int, Giphy dimensions are strings, Wikimedia continue offsets are ints).
enum ProviderJSON: Sendable, Hashable, Decodable {
    case null
    case bool(Bool)
    case int(Int)
    case double(Double)
    case string(String)
    case array([ProviderJSON])
    case object([String: ProviderJSON])

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Int.self) {
            self = .int(value)
        } else if let value = try? container.decode(Double.self) {
            self = .double(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([ProviderJSON].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: ProviderJSON].self))
        }
    }

    /// Parses `data`, or returns `nil` when it is not JSON.
    package static func parse(_ data: Data) -> ProviderJSON? {
        try? JSONDecoder().decode(ProviderJSON.self, from: data)
    }

    subscript(key: String) -> ProviderJSON? {
        if case .object(let object) = self { return object[key] }
        return nil
    }

    subscript(index: Int) -> ProviderJSON? {
        if case .array(let array) = self, array.indices.contains(index) { return array[index] }
        return nil
    }

    package var object: [String: ProviderJSON]? {
        if case .object(let object) = self { return object }
        return nil
    }

    package var array: [ProviderJSON]? {
        if case .array(let array) = self { return array }
        return nil
    }

    var isNull: Bool { self == .null }

    /// The value as text: strings as they are, numbers and booleans printed; `nil` for null, arrays and objects.
    package var string: String? {
        switch self {
        case .string(let value): return value
        case .int(let value): return String(value)
        case .double(let value):
            return value.rounded() == value && abs(value) < 1e15 ? String(Int(value)) : String(value)
        case .bool(let value): return value ? "true" : "false"
        case .null, .array, .object: return nil
        }
    }

    /// The text, trimmed, or `nil` when absent or empty.
    var nonEmptyString: String? {
        guard let text = string?.trimmingCharacters(in: .whitespacesAndNewlines), !text.isEmpty else { return nil }
        return text
    }

    /// The value as an integer: ints, integral doubles and numeric strings such as `"480"`.
    package var int: Int? {
        switch self {
        case .int(let value): return value
        case .double(let value):
            return value.rounded() == value && abs(value) < 9e18 ? Int(value) : nil
        case .string(let value): return Int(value.trimmingCharacters(in: .whitespaces))
        case .null, .bool, .array, .object: return nil
        }
    }

    /// The value as an absolute http(s) URL, or `nil`.
    package var url: URL? { nonEmptyString.flatMap(ProviderJSON.webURL) }

    /// Parses an absolute http(s) URL; protocol-relative `//host/...` becomes `https:`.
    static func webURL(_ text: String) -> URL? {
        var text = text.trimmingCharacters(in: .whitespacesAndNewlines)
        if text.hasPrefix("//") { text = "https:" + text }
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(),
            scheme == "http" || scheme == "https", url.host != nil
        else { return nil }
        return url
    }
}
