import Foundation
import MirrorModel

extension MirrorJob {
    /// What a run did; `--json` prints it, the tally's counts flat beside the rest.
    public struct Summary: Sendable, Hashable, Encodable {
        // MARK: The count

        /// Images in the folder at the end, and the count asked for.
        public var total = 0, target = 0
        /// Whether every source ran dry before the count; whether the folder already held it (nothing fetched);
        /// whether the run was cancelled.
        public var exhausted = false, upToDate = false, interrupted = false
        /// How the candidates ended: ``Tally/saved`` by this run, and what did not count.
        public var tally = Tally()
        /// For a `--queries` run: the query (its label), and images saved that another query's folder holds too.
        public var label: String?
        public var crossLabelDuplicates = 0

        // MARK: The search

        /// Providers of the chain, in order, and how each fared.
        public var providers: [String] = []
        public var providerStatus: [ProviderReport] = []
        /// Search pages fetched (from the network or the page cache); API requests sent over the network (pages,
        /// tokens, download notifications).
        public var pages = 0, apiRequests = 0
        /// Download notifications sent for saved images (Unsplash's `download_location`), and those that failed for
        /// good (logged; the images stay saved).
        public var downloadNotifications = 0, downloadNotificationsFailed = 0

        // MARK: Cost

        /// The run's wall time in seconds (the bytes saved are the tally's).
        public var seconds: Double = 0

        // MARK: Consent

        /// The purpose reservations were matched against (`--purpose`).
        public var purpose: UsePurpose = .aiTrain
        /// The signals whose reservations were set aside (`--ignore-opt-out`).
        public var ignoredOptOuts: Set<ConsentSignal> = []
        /// The product tokens the run answered to (robots.txt groups, `X-Robots-Tag` directives): `--user-agent`'s, then
        /// `mirror`.
        public var agents: [String] = ["mirror"]

        public init() {}

        /// The keys of `--json` beside the tally's (``Tally/encode(to:keys:)``, the schema every output shares): the
        /// count asked for, the providers and the run's settings.
        enum CodingKeys: String, CodingKey {
            case total, target, exhausted, upToDate, interrupted, label, crossLabelDuplicates, providers, providerStatus, pages
            case apiRequests, downloadNotifications, downloadNotificationsFailed, seconds, purpose, ignoredOptOuts, agents
        }

        public func encode(to encoder: any Encoder) throws {
            try tally.encode(to: encoder, keys: .summary)
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(total, forKey: .total)
            try container.encode(target, forKey: .target)
            try container.encode(exhausted, forKey: .exhausted)
            try container.encode(upToDate, forKey: .upToDate)
            try container.encode(interrupted, forKey: .interrupted)
            try container.encodeIfPresent(label, forKey: .label)
            try container.encode(crossLabelDuplicates, forKey: .crossLabelDuplicates)
            try container.encode(providers, forKey: .providers)
            try container.encode(providerStatus, forKey: .providerStatus)
            try container.encode(pages, forKey: .pages)
            try container.encode(apiRequests, forKey: .apiRequests)
            try container.encode(downloadNotifications, forKey: .downloadNotifications)
            try container.encode(downloadNotificationsFailed, forKey: .downloadNotificationsFailed)
            try container.encode(seconds, forKey: .seconds)
            try container.encode(purpose.rawValue, forKey: .purpose)
            try container.encode(ignoredOptOuts.map(\.rawValue).sorted(), forKey: .ignoredOptOuts)
            try container.encode(agents, forKey: .agents)
        }
    }
}
