import Foundation
import MirrorTransport

extension APIResponse {
    /// The wait this response's `Retry-After` asks for (``RetryAfter``, measured from its own `Date` header), when it
    /// asks for one: a zero or past value is no hint at all (Giphy sends `retry-after: 0` on every answer), so the
    /// caller's backoff decides.
    package var retryAfterHint: Duration? {
        RetryAfter.delay(header("retry-after"), date: header("date")).flatMap { $0 > .zero ? $0 : nil }
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
            let hint = response.retryAfterHint ?? Self.delayMentioned(in: detail)
            return .rateLimited(retryAfter: hint, message: message)
        case 503 where response.retryAfterHint != nil:
            // DESIGN: Retry-After is honoured on 503 too; rateLimited is the case that carries the delay.
            return .rateLimited(retryAfter: response.retryAfterHint, message: message)
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
