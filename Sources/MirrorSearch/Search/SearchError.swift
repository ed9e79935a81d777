import Foundation

/// Why a search could not go on: what ``SearchFeed/next()`` and ``APIClient`` throw.
///
/// The CLI maps the cases to exit codes: ``authentication(provider:variable:message:)`` and
/// ``configuration(provider:message:)`` to 4 (the user must fix something), ``unavailable(provider:message:)`` to 5
/// (retries could not overcome a provider or network failure), ``cancelled`` to 130. Messages never contain a key:
/// providers redact their secrets, and authentication errors name the environment variable instead.
public enum SearchError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A key is missing or was rejected; `variable` is the environment variable to fix, such as `FLICKR_API_KEY`.
    case authentication(provider: String, variable: String, message: String)
    /// The provider is misconfigured (bad endpoint, a request the API will always refuse).
    case configuration(provider: String, message: String)
    /// The provider failed in a way retries could not overcome: network errors, 5xx, rate limits that lasted too
    /// long, or a refusal of the request itself (other 4xx).
    case unavailable(provider: String, message: String)
    /// The calling task was cancelled.
    case cancelled

    /// The registry name of the provider concerned, or `nil` for ``cancelled``.
    public var provider: String? {
        switch self {
        case .authentication(let provider, _, _), .configuration(let provider, _), .unavailable(let provider, _):
            return provider
        case .cancelled:
            return nil
        }
    }

    /// The message alone, without the case's wording (never containing a key).
    public var message: String {
        switch self {
        case .authentication(_, _, let message), .configuration(_, let message), .unavailable(_, let message):
            return message
        case .cancelled:
            return "cancelled"
        }
    }

    public var description: String {
        switch self {
        case .authentication(_, let variable, let message):
            return "authentication failed (check \(variable)): \(message)"
        case .configuration(_, let message):
            return "configuration error: \(message)"
        case .unavailable(_, let message):
            return "search failed: \(message)"
        case .cancelled:
            return "cancelled"
        }
    }

    /// The search error for a provider error that ended a provider's walk.
    package init(_ error: ProviderError, provider: String) {
        switch error {
        case .authentication(let variable, let message):
            self = .authentication(provider: provider, variable: variable, message: message)
        case .configuration(let message):
            self = .configuration(provider: provider, message: message)
        case .rateLimited(let retryAfter, let message):
            if let retryAfter {
                self = .unavailable(provider: provider, message: "\(message) (asked to wait \(retryAfter.formattedSeconds))")
            } else {
                self = .unavailable(provider: provider, message: message)
            }
        case .transient(let message), .permanent(let message):
            self = .unavailable(provider: provider, message: message)
        }
    }

    /// Whether the user must fix a key or a setting (exit 4) rather than wait or move on.
    var needsUserAction: Bool {
        switch self {
        case .authentication, .configuration: return true
        case .unavailable, .cancelled: return false
        }
    }
}
