import Foundation

/// A request as ``TestServer`` received it, recorded once its body is complete.
public struct RecordedRequest: Sendable {
    /// The method, as sent (`GET`, `HEAD`, `POST`, …).
    public var method: String
    /// The path without the query, still percent-encoded as sent (`/bytes/100`).
    public var path: String
    /// The query's items, percent-decoded. A repeated name keeps its last value; a name without `=` maps to "".
    public var query: [String: String]
    /// The request target exactly as sent (`/bytes/100?x=1`).
    public var rawURI: String
    /// The headers in the order sent, names in their original case.
    public var headers: [(String, String)]
    /// The body, empty for requests without one.
    public var body: Data
    /// When the request head arrived.
    public var arrivedAt: ContinuousClock.Instant
    /// The TCP connection it came on; IDs count up from 1 per server and are never reused.
    public var connectionID: Int

    public init(
        method: String,
        path: String,
        query: [String: String] = [:],
        rawURI: String,
        headers: [(String, String)] = [],
        body: Data = Data(),
        arrivedAt: ContinuousClock.Instant = .now,
        connectionID: Int = 0
    ) {
        self.method = method
        self.path = path
        self.query = query
        self.rawURI = rawURI
        self.headers = headers
        self.body = body
        self.arrivedAt = arrivedAt
        self.connectionID = connectionID
    }

    /// The first value of the header `name`, compared case-insensitively, or `nil`.
    public func header(_ name: String) -> String? {
        headers.first { $0.0.caseInsensitiveCompare(name) == .orderedSame }?.1
    }

    /// Every value of the header `name`, in order, compared case-insensitively.
    public func headerValues(_ name: String) -> [String] {
        headers.filter { $0.0.caseInsensitiveCompare(name) == .orderedSame }.map(\.1)
    }
}

extension RecordedRequest {
    /// Splits a request target into its path and decoded query. Absolute-form targets
    /// (`http://host/path`) are reduced to their path.
    static func split(uri: String) -> (path: String, query: [String: String]) {
        var target = Substring(uri)
        if let schemeEnd = target.range(of: "://"), target[..<schemeEnd.lowerBound].allSatisfy(\.isLetter) {
            let afterAuthority = target[schemeEnd.upperBound...]
            target = afterAuthority.firstIndex(where: { $0 == "/" || $0 == "?" }).map { afterAuthority[$0...] } ?? "/"
        }
        if let hash = target.firstIndex(of: "#") { target = target[..<hash] }
        guard let mark = target.firstIndex(of: "?") else { return (String(target), [:]) }
        var query: [String: String] = [:]
        for item in target[target.index(after: mark)...].split(separator: "&", omittingEmptySubsequences: true) {
            let parts = item.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = String(parts[0]).removingPercentEncoding ?? String(parts[0])
            let value = parts.count > 1 ? (String(parts[1]).removingPercentEncoding ?? String(parts[1])) : ""
            query[name] = value
        }
        let path = target[..<mark]
        return (path.isEmpty ? "/" : String(path), query)
    }
}
