import Foundation

extension MirrorJob {
    /// Why a run could not start or go on.
    public enum Failure: Error, Sendable, CustomStringConvertible {
        /// A provider name that does not exist.
        case unknownProvider(String)
        /// `--endpoint` given with more than one provider.
        case ambiguousEndpoint
        /// A missing or rejected key, or a bad endpoint (exit 4).
        case configuration(String)
        /// No provider delivered: at least one failed and retries could not overcome it, the others (if any) had
        /// nothing; each provider's report in chain order, and the run's summary (exit 5).
        case unavailable(providers: [ProviderReport], summary: Summary)

        public var description: String {
            switch self {
            case let .unknownProvider(name):
                "unknown provider '\(name)'; run 'mirror providers' to see the \(ProviderRegistry.names.count) there are"
            case .ambiguousEndpoint:
                "--endpoint needs exactly one --provider, since each provider has its own endpoint"
            case let .configuration(message):
                message
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

    /// The job's error for a search error: keys and settings → ``Failure/configuration(_:)``, a search that no
    /// provider could serve → ``Failure/unavailable(providers:summary:)`` with every provider's report.
    static func failure(from error: any Error, summary: Summary) -> any Error {
        switch error {
        case let search as SearchError:
            switch search {
            case let .authentication(provider, variable, message):
                return Failure.configuration("\(provider) rejected the key in \(variable): \(message); check the variable")
            case let .configuration(provider, message):
                return Failure.configuration("\(provider): \(message)")
            case .unavailable:
                return Failure.unavailable(providers: summary.providerStatus, summary: summary)
            case .cancelled:
                return CancellationError()
            }
        default:
            return error
        }
    }

    static func describe(_ error: ProviderError, provider: String) -> String {
        switch error {
        case let .authentication(variable, _):
            return "\(provider) needs an API key: set \(variable) in the environment"
        default:
            return "\(provider): \(error.description)"
        }
    }
}
