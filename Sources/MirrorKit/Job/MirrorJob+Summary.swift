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
        /// How the candidates ended: ``Tally/saved`` by this run, and what did not count (see ``duplicates`` and
        /// ``filtered`` for how the search reports them).
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

        /// Candidates whose URL or bytes the folder already had: ``Tally/duplicates`` and ``Tally/alreadySaved``,
        /// which the search reports as one.
        public var duplicates: Int { tally.duplicates + tally.alreadySaved }
        /// Valid images turned away: by the filters, or by a reservation of their owner's (`optedOut` and `disallowed`,
        /// counted per signal in ``Tally/refusals``), which the search reports as one.
        public var filtered: Int { tally.filtered + tally.optedOut + tally.disallowed }

        /// The keys of `--json`, a contract: the tally's counts are named as they always were.
        enum CodingKeys: String, CodingKey {
            case saved, total, target, exhausted, upToDate, interrupted, failed, duplicates, nearDuplicates, filtered, failures, label
            case crossLabelDuplicates, providers, providerStatus, pages, apiRequests, downloadNotifications
            case downloadNotificationsFailed, bytes, seconds, optedOut, refusals, generated, purpose, ignoredOptOuts, agents
        }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(tally.saved, forKey: .saved)
            try container.encode(total, forKey: .total)
            try container.encode(target, forKey: .target)
            try container.encode(exhausted, forKey: .exhausted)
            try container.encode(upToDate, forKey: .upToDate)
            try container.encode(interrupted, forKey: .interrupted)
            try container.encode(tally.failed, forKey: .failed)
            try container.encode(duplicates, forKey: .duplicates)
            try container.encode(tally.nearDuplicates, forKey: .nearDuplicates)
            try container.encode(filtered, forKey: .filtered)
            try container.encode(tally.failures, forKey: .failures)
            try container.encodeIfPresent(label, forKey: .label)
            try container.encode(crossLabelDuplicates, forKey: .crossLabelDuplicates)
            try container.encode(providers, forKey: .providers)
            try container.encode(providerStatus, forKey: .providerStatus)
            try container.encode(pages, forKey: .pages)
            try container.encode(apiRequests, forKey: .apiRequests)
            try container.encode(downloadNotifications, forKey: .downloadNotifications)
            try container.encode(downloadNotificationsFailed, forKey: .downloadNotificationsFailed)
            try container.encode(tally.bytes, forKey: .bytes)
            try container.encode(seconds, forKey: .seconds)
            try container.encode(tally.optedOut + tally.disallowed, forKey: .optedOut)
            try container.encode(tally.refusals, forKey: .refusals)
            try container.encode(tally.generated, forKey: .generated)
            try container.encode(purpose.rawValue, forKey: .purpose)
            try container.encode(ignoredOptOuts.map(\.rawValue).sorted(), forKey: .ignoredOptOuts)
            try container.encode(agents, forKey: .agents)
        }
    }
}
