import Foundation
import MirrorSearch

extension MirrorJob {
    /// Why a run could not start or go on: typed, so the CLI maps each case to its exit code and its one line
    /// without reading messages.
    public enum Failure: Error, Sendable, CustomStringConvertible {
        /// A provider name that does not exist (usage, exit 64).
        case unknownProvider(String)
        /// `--endpoint` given with more than one provider (usage, exit 64).
        case ambiguousEndpoint
        /// A provider's key is not set (exit 4).
        case missingKey(provider: String, variable: String)
        /// A provider refused the key it was given (exit 4).
        case rejectedKey(provider: String, variable: String, reason: String)
        /// A provider's endpoint or another setting is wrong (exit 4).
        case misconfigured(provider: String, reason: String)
        /// No provider delivered: at least one failed and retries could not overcome it, the others (if any) had
        /// nothing; each provider's report in chain order, and the run's summary (exit 5).
        case unavailable(providers: [ProviderReport], summary: Summary)

        public var description: String {
            switch self {
            case let .unknownProvider(name):
                "unknown provider '\(name)'; run 'mirror providers' to see the \(ProviderRegistry.names.count) there are"
            case .ambiguousEndpoint:
                "--endpoint needs exactly one --provider, since each provider has its own endpoint"
            case let .missingKey(provider, variable):
                "\(provider) needs an API key: set \(variable) in the environment"
            case let .rejectedKey(provider, variable, reason):
                "\(provider) rejected the key in \(variable): \(reason); check the variable"
            case let .misconfigured(provider, reason):
                "\(provider): \(reason)"
            case let .unavailable(providers, _):
                "the search failed: " + providers.map(\.phrase).joined(separator: "; ")
                    + "; try again later, or another --provider"
            }
        }

        /// The run's summary, when the run got far enough to have one.
        public var summary: Summary? {
            if case let .unavailable(_, summary) = self { return summary }
            return nil
        }
    }

    /// The job's error for a search error, converted once here: keys and settings → ``Failure/rejectedKey(provider:variable:reason:)``
    /// or ``Failure/misconfigured(provider:reason:)``, a search no provider could serve →
    /// ``Failure/unavailable(providers:summary:)`` with every provider's report, cancellation → `CancellationError`.
    static func failure(from error: any Error, summary: Summary) -> any Error {
        guard let search = error as? SearchError else { return error }
        switch search {
        case let .authentication(provider, variable, message):
            return Failure.rejectedKey(provider: provider, variable: variable, reason: message)
        case let .configuration(provider, message):
            return Failure.misconfigured(provider: provider, reason: message)
        case .unavailable:
            return Failure.unavailable(providers: summary.providerStatus, summary: summary)
        case .cancelled:
            return CancellationError()
        }
    }

    /// The job's error for a provider that could not be built from the environment.
    static func failure(building provider: String, _ error: ProviderError) -> Failure {
        switch error {
        case let .authentication(variable, _):
            return .missingKey(provider: provider, variable: variable)
        default:
            return .misconfigured(provider: provider, reason: error.message)
        }
    }
}
