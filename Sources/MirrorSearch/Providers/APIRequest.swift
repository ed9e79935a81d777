import Foundation

/// An HTTP request a provider wants sent; the provider itself never performs I/O.
///
/// `cacheKey` is the URL with every secret removed, so a search page can be cached and logged without
/// leaking keys; keys sent in headers (`Authorization`) never appear in it at all.
public struct APIRequest: Sendable, Hashable {
    /// The HTTP method; providers use `GET` for searches and `POST` only for token requests.
    public enum Method: String, Sendable, Hashable {
        /// `GET`.
        case get = "GET"
        /// `POST`.
        case post = "POST"
    }

    /// The full URL, including any key sent as a query parameter.
    public var url: URL
    /// The method; defaults to `GET`.
    public var method: Method
    /// Extra request headers (for example `Authorization`); defaults to none. The caller adds `User-Agent`.
    public var headers: [String: String]
    /// The request body, or `nil` (the default).
    public var body: Data?
    /// A stable key for caching and logging this request: the URL without secret query parameters.
    public var cacheKey: String

    /// Creates a request; `method` defaults to `GET`, `headers` to empty, `body` to `nil`, `cacheKey` to the URL.
    public init(url: URL, method: Method = .get, headers: [String: String] = [:], body: Data? = nil, cacheKey: String? = nil) {
        self.url = url
        self.method = method
        self.headers = headers
        self.body = body
        self.cacheKey = cacheKey ?? url.absoluteString
    }
}

/// An HTTP response handed to a provider for parsing.
///
/// Header names are lowercased on creation so lookups are case-insensitive; when names collide, the last wins.
public struct APIResponse: Sendable, Hashable {
    /// The HTTP status code.
    public var status: Int
    /// The response headers, names lowercased.
    public private(set) var headers: [String: String]
    /// The response body, possibly empty.
    public var body: Data

    /// Creates a response, lowercasing header names; `headers` defaults to none.
    public init(status: Int, headers: [String: String] = [:], body: Data) {
        self.status = status
        var lowered: [String: String] = [:]
        for (name, value) in headers { lowered[name.lowercased()] = value }
        self.headers = lowered
        self.body = body
    }

    /// The value of the header `name`, matched case-insensitively, or `nil`.
    public func header(_ name: String) -> String? {
        headers[name.lowercased()]
    }
}
