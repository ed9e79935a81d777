import Foundation

/// The final response of a transfer (after redirects) and what it cost.
public struct HTTPResponse: Sendable {
    /// Durations from the start of the transfer to each milestone.
    public struct Timings: Sendable, Hashable {
        /// Name resolution done.
        public var nameLookup: Duration
        /// TCP connection made.
        public var connect: Duration
        /// TLS handshake done (zero for plain HTTP).
        public var tlsHandshake: Duration
        /// First byte of the response arrived.
        public var firstByte: Duration
        /// Everything done.
        public var total: Duration

        /// All zero: a response that took no measurable time (a stub's).
        public static let zero = Timings(nameLookup: .zero, connect: .zero, tlsHandshake: .zero, firstByte: .zero, total: .zero)
    }

    /// The HTTP status code of the final response.
    public var status: Int
    /// The final response's headers, names lowercased, in arrival order.
    public var headers: [(name: String, value: String)]
    /// The URL of the final response, after redirects.
    public var effectiveURL: URL
    /// How many redirects were followed.
    public var redirectCount: Int
    /// Body bytes received (after content decoding).
    public var bytesReceived: Int64
    /// The body for `.memory` destinations; for file and sink destinations, the first 64 KiB of a non-2xx body.
    public var body: Data
    /// Timings of the transfer.
    public var timings: Timings
    /// New TCP connections this transfer opened (0 when it reused one).
    public var connectionsOpened: Int

    /// Creates a response (transports make them; tests' stub loaders too). Header names must be lowercase.
    public init(
        status: Int, headers: [(name: String, value: String)] = [], effectiveURL: URL, redirectCount: Int = 0,
        bytesReceived: Int64 = 0, body: Data = Data(),
        timings: Timings = .zero,
        connectionsOpened: Int = 0
    ) {
        self.status = status
        self.headers = headers
        self.effectiveURL = effectiveURL
        self.redirectCount = redirectCount
        self.bytesReceived = bytesReceived
        self.body = body
        self.timings = timings
        self.connectionsOpened = connectionsOpened
    }

    /// The first value of a header, by case-insensitive name.
    public func header(_ name: String) -> String? {
        let lowered = name.lowercased()
        return headers.first { $0.name == lowered }?.value
    }

    /// The `Content-Type` header.
    public var contentType: String? { header("content-type") }
    /// The `Content-Length` header, when present and numeric.
    public var contentLength: Int64? { header("content-length").flatMap { Int64($0.trimmingCharacters(in: .whitespaces)) } }
    /// The `ETag` header.
    public var etag: String? { header("etag") }
    /// The `Last-Modified` header.
    public var lastModified: String? { header("last-modified") }
    /// The raw `Retry-After` header.
    public var retryAfterHeader: String? { header("retry-after") }

    /// How long `Retry-After` asks the client to wait: measured from the response's own `Date` header when it has one
    /// (so a server whose clock is off still gets the wait it meant), otherwise from `now`; nil if absent or unreadable.
    public func retryAfter(now: Date = Date()) -> Duration? {
        RetryAfter.delay(retryAfterHeader, date: header("date"), now: now)
    }

    /// Whether the status is 2xx.
    public var isSuccess: Bool { (200..<300).contains(status) }
}

/// Reads `Retry-After` (RFC 9110 §10.2.3): the one parser, for downloads, object storage and the search APIs alike.
public enum RetryAfter {
    /// The longest wait represented exactly: about 31,700 years, far beyond any retry limit, and small enough that its
    /// milliseconds fit an `Int64` (`"retry-after: 1e300"` and a date in the year 9999 trapped the conversion; found by
    /// scripts/fuzz/fuzz).
    public static let longestDelay: Double = 1e12

    /// The wait a `Retry-After` value asks for, measured from `now`, never negative: delay-seconds (`0` included,
    /// which asks for no wait), a decimal number of seconds (some APIs send `1.5`), or an HTTP-date (one in the past
    /// asks for no wait); nil if the value is none of these.
    public static func parse(_ value: String, now: Date = Date()) -> Duration? {
        let trimmed = value.trimmingCharacters(in: .whitespaces)
        guard !trimmed.isEmpty else { return nil }
        if let seconds = Int(trimmed) {
            return seconds >= 0 ? .seconds(seconds) : nil
        }
        if let seconds = Double(trimmed), seconds.isFinite {
            return seconds >= 0 ? milliseconds(seconds) : nil
        }
        guard let date = httpDate(trimmed) else { return nil }
        return milliseconds(max(0, date.timeIntervalSince(now)))
    }

    /// The wait a response's `Retry-After` value asks for, measured from its `Date` header when that is a date,
    /// otherwise from `now`; nil when there is no readable `Retry-After`.
    public static func delay(_ retryAfter: String?, date: String?, now: Date = Date()) -> Duration? {
        guard let retryAfter else { return nil }
        return parse(retryAfter, now: date.flatMap(httpDate) ?? now)
    }

    /// `seconds` (not negative) with millisecond precision, clamped to ``longestDelay``.
    private static func milliseconds(_ seconds: Double) -> Duration {
        .milliseconds(Int64((min(seconds, longestDelay) * 1000).rounded(.up)))
    }

    /// Parses the IMF-fixdate form and the two obsolete forms an HTTP-date may take.
    public static func httpDate(_ value: String) -> Date? {
        // HTTP-dates are printable ASCII. Anything else never reaches DateFormatter, whose Linux implementation traps
        // on some non-ASCII text ("Incorrect range CFRange" for "We\u{301}h,stps"; found by scripts/fuzz/fuzz).
        guard !value.isEmpty, value.utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) else { return nil }
        for format in ["EEE, dd MMM yyyy HH:mm:ss zzz", "EEEE, dd-MMM-yy HH:mm:ss zzz", "EEE MMM d HH:mm:ss yyyy"] {
            let formatter = DateFormatter()
            formatter.locale = Locale(identifier: "en_US_POSIX")
            formatter.timeZone = TimeZone(identifier: "GMT")
            formatter.dateFormat = format
            if let date = formatter.date(from: value) { return date }
        }
        return nil
    }

    /// Formats a date as an IMF-fixdate, as servers send it.
    public static func format(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return formatter.string(from: date)
    }
}
