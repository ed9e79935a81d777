import Foundation
import MirrorCore
import MirrorStorage
import MirrorTransport

/// Parses `Retry-After` (RFC 9110: delay-seconds or an HTTP-date).
enum RetryAfterHeader {
    /// The delay `value` asks for, measured from `now`; `nil` when absent, unparsable, or zero or negative
    /// (Giphy sends `retry-after: 0` on every answer, which is no hint at all, so the caller's backoff decides).
    package static func delay(_ value: String?, now: Date) -> Duration? {
        guard let value = value?.trimmingCharacters(in: .whitespaces), !value.isEmpty else { return nil }
        if let seconds = Int(value) {
            return seconds > 0 ? .seconds(seconds) : nil
        }
        if let seconds = Double(value), seconds.isFinite {
            return milliseconds(seconds)
        }
        guard let date = httpDate(value) else { return nil }
        return milliseconds(date.timeIntervalSince(now))
    }

    /// The longest delay represented exactly: about 31,700 years, far beyond any retry limit, and small enough
    /// that its milliseconds fit an `Int` (`"retry-after: 1e300"` trapped the conversion; found by scripts/fuzz).
    static let longestDelay: Double = 1e12

    /// `seconds` as a positive duration with millisecond precision, clamped to ``longestDelay``; nil when not positive.
    private static func milliseconds(_ seconds: Double) -> Duration? {
        guard seconds > 0 else { return nil }
        return .milliseconds(Int((min(seconds, longestDelay) * 1000).rounded()))
    }

    /// The delay a response asks for: `Retry-After` measured from the response's own `Date` header when present
    /// (so clock skew between us and the server does not matter), otherwise from `now`.
    package static func delay(in response: APIResponse, now: Date = Date()) -> Duration? {
        let reference = response.header("date").flatMap(httpDate) ?? now
        return delay(response.header("retry-after"), now: reference)
    }

    /// Parses IMF-fixdate, and the obsolete RFC 850 and asctime forms (the transport's parser, which also refuses
    /// non-ASCII text before it reaches DateFormatter).
    package static func httpDate(_ text: String) -> Date? {
        RetryAfter.httpDate(text)
    }
}

/// The shared status classification every provider starts from, plus body-message extraction.
struct ProviderFailure {
    /// What failed when it is not the provider's search itself (say, `"token request"`), prefixed to messages;
    /// `nil` for the search. Messages never name the provider: the layer that reports them does.
    package var context: String?
    /// The variable to name on 401/403, or `nil` for a provider used without a key (then 401/403 are permanent).
    var authVariable: String?
    /// Values that must never appear in a message.
    package var secrets: [String]

    /// Whether `status` is a success.
    package static func isSuccess(_ status: Int) -> Bool { (200..<300).contains(status) }

    /// Classifies a non-2xx response with the default rules; providers handle their special cases first.
    func classify(_ response: APIResponse) -> ProviderError {
        let detail = Self.detail(from: response.body, secrets: secrets)
        let message = self.message("HTTP \(response.status)" + (detail.isEmpty ? "" : ": \(detail)"))
        switch response.status {
        case 401, 403:
            if let authVariable {
                return .authentication(variable: authVariable, message: message)
            }
            return .permanent(message: message)
        case 429:
            let hint = RetryAfterHeader.delay(in: response) ?? Self.delayMentioned(in: detail)
            return .rateLimited(retryAfter: hint, message: message)
        case 503 where RetryAfterHeader.delay(in: response) != nil:
            // DESIGN: Retry-After is honoured on 503 too; rateLimited is the case that carries the delay.
            return .rateLimited(retryAfter: RetryAfterHeader.delay(in: response), message: message)
        case 408, 500...599:
            return .transient(message: message)
        case 400...499:
            return .permanent(message: message)
        default:
            // 1xx/3xx should never reach a provider (the transport follows redirects); retrying is the safe bet.
            return .transient(message: message)
        }
    }

    /// The delay in a throttling message such as DRF's "Expected available in 12 seconds.", or `nil`.
    static func delayMentioned(in text: String) -> Duration? {
        guard let range = text.range(of: "available in ") else { return nil }
        let digits = text[range.upperBound...].prefix(while: { $0.isNumber })
        guard let seconds = Int(digits), seconds > 0 else { return nil }
        return .seconds(seconds)
    }

    /// A 2xx body that is not what the API documents.
    package func malformed(_ what: String, body: Data) -> ProviderError {
        let excerpt = ProviderText.snippet(String(decoding: body.prefix(400), as: UTF8.self), secrets: secrets, limit: 80)
        return .transient(message: message("unexpected response (\(what))" + (excerpt.isEmpty ? ", empty body" : ": \(excerpt)")))
    }

    /// Parses a 2xx body as JSON, or throws ``malformed(_:body:)``.
    package func json(_ response: APIResponse) throws(ProviderError) -> ProviderJSON {
        guard let json = ProviderJSON.parse(response.body) else {
            throw malformed("not JSON", body: response.body)
        }
        return json
    }

    /// `text` (after `"<context>: "` when there is a context), redacted.
    package func message(_ text: String) -> String {
        ProviderText.redact(context.map { "\($0): \(text)" } ?? text, secrets: secrets)
    }

    /// The most useful human text in an error body: common JSON fields (`message`, `error`, `error.message`,
    /// `errors[0]`, `detail`, `meta.msg`, `info`) or, for plain-text bodies, the text itself; redacted before
    /// it is shortened, so a key cut in half by truncation cannot leak.
    package static func detail(from body: Data, secrets: [String]) -> String {
        let text = String(decoding: body.prefix(2000), as: UTF8.self)
        guard let json = ProviderJSON.parse(body) else {
            // An HTML error page (a proxy's, a maintenance page): its text, not its markup.
            let isHTML = text.trimmingCharacters(in: .whitespacesAndNewlines).hasPrefix("<")
            return ProviderText.snippet(isHTML ? ProviderText.plainText(fromHTML: text) ?? "" : text, secrets: secrets)
        }
        return ProviderText.snippet(detail(in: json) ?? text, secrets: secrets)
    }

    private static func detail(in json: ProviderJSON) -> String? {
        if let message = json["message"]?.nonEmptyString { return message }
        if let error = json["error"] {
            if let text = error.nonEmptyString {
                // Openverse's documented form: {"error":"InputError","detail":"Invalid input …"}.
                if let detail = json["detail"]?.nonEmptyString { return "\(text): \(detail)" }
                return text
            }
            if let message = error["message"]?.nonEmptyString ?? error["info"]?.nonEmptyString { return message }
        }
        if let first = json["errors"]?[0] {
            if let text = first.nonEmptyString { return text }
            if let message = first["message"]?.nonEmptyString { return message }
        }
        if let detail = json["detail"] {
            if let text = detail.nonEmptyString { return text }
            if let object = detail.object {
                // DRF validation errors: {"detail": {"page": ["Ensure this value is less than or equal to 20."]}}
                let parts = object.keys.sorted().compactMap { key -> String? in
                    let value = object[key]?[0]?.nonEmptyString ?? object[key]?.nonEmptyString
                    return value.map { "\(key): \($0)" }
                }
                if !parts.isEmpty { return parts.joined(separator: "; ") }
            }
        }
        if let message = json["meta"]?["msg"]?.nonEmptyString { return message }
        if let info = json["info"]?.nonEmptyString { return info }
        return nil
    }
}
