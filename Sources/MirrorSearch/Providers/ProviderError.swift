import Foundation

/// Why a provider could not build a request or turn a response into a page.
///
/// Messages never contain API keys or tokens: providers redact their own secrets before building one, and
/// authentication errors name the environment variable to fix instead. The CLI maps these cases to exit codes
/// (authentication and configuration → 4, the others → 5 once retries are spent).
public enum ProviderError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A key is missing or was rejected; `variable` is the environment variable that holds it, such as `FLICKR_API_KEY`.
    case authentication(variable: String, message: String)
    /// The provider is misconfigured (bad endpoint, unknown provider name, a request the API will always refuse).
    case configuration(message: String)
    /// The API asked us to slow down; `retryAfter` is its hint (from `Retry-After` or the body), `nil` if none.
    case rateLimited(retryAfter: Duration?, message: String)
    /// A failure worth retrying: 5xx, 408, a malformed or truncated body, a temporarily unavailable service.
    case transient(message: String)
    /// A failure that retrying will not fix: other 4xx answers and API errors about the request itself.
    case permanent(message: String)

    /// The human-readable message, without the case name.
    public var message: String {
        switch self {
        case .authentication(_, let message), .configuration(let message), .rateLimited(_, let message),
            .transient(let message), .permanent(let message):
            return message
        }
    }

    /// Whether retrying the same request later may succeed (`rateLimited` and `transient`).
    public var isRetryable: Bool {
        switch self {
        case .rateLimited, .transient: return true
        case .authentication, .configuration, .permanent: return false
        }
    }

    public var description: String {
        switch self {
        case .authentication(let variable, let message):
            return "authentication failed (check \(variable)): \(message)"
        case .configuration(let message):
            return "configuration error: \(message)"
        case .rateLimited(let retryAfter, let message):
            if let retryAfter {
                return "rate limited (retry after \(retryAfter.formattedSeconds)): \(message)"
            }
            return "rate limited: \(message)"
        case .transient(let message):
            return "temporary failure: \(message)"
        case .permanent(let message):
            return "request failed: \(message)"
        }
    }
}
