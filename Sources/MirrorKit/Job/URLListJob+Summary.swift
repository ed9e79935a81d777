import Foundation
import MirrorModel

extension URLListJob {
    /// What a run did; `--json` prints it, the tally's counts flat beside the rest.
    public struct Summary: Sendable, Hashable, Encodable {
        /// Rows of the table that gave a URL.
        public var total = 0
        /// How the rows ended (``Tally/alreadySaved``: URLs the output already had; ``Tally/invalid``: rows that gave
        /// no URL).
        public var tally = Tally()
        /// Wall time.
        public var seconds: Double = 0
        /// WebDataset shards complete in the folder (this run's and earlier ones'), or `nil` for a folder.
        public var shards: Int?
        /// WebDataset shards this run wrote, or `nil` for a folder.
        public var shardsWritten: Int?
        /// Rows of the table read, when this run is one copy of a sharded job (it reads them all and takes its share).
        public var tableRows: Int?
        /// Complete shards written anew because a retried row gained a sample (`--retry-failed`), or `nil` for a folder.
        public var shardsRewritten: Int?
        /// Rows the output still lacks whose failure may pass on another try (`--retry-failed` downloads them again),
        /// earlier runs' included.
        public var missingTransient = 0
        /// Rows the output lacks for good (404 and 410, not an image, too big; bad rows), earlier runs' included;
        /// `--retry-failed all` tries the failed ones again.
        public var missingPermanent = 0
        /// The purpose reservations were matched against (`--purpose`), or `nil` when none were read.
        public var purpose: UsePurpose?
        /// The signals whose reservations were set aside (`--ignore-opt-out`).
        public var ignoredOptOuts: Set<ConsentSignal> = []
        /// The product tokens the run answered to (robots.txt groups, `X-Robots-Tag` directives): `--user-agent`'s, then
        /// `mirror`.
        public var agents: [String] = ["mirror"]

        public init() {}

        /// The keys of `--json` beside the tally's (``Tally/encode(to:keys:)``, the schema every output shares):
        /// where the shards stand and the run's settings. `skipped` is ``Tally/alreadySaved`` under its name before
        /// 0.40 (a word the tally used for rows that failed for good earlier): written until 1.0, then gone.
        enum CodingKeys: String, CodingKey {
            case total, skipped, purpose, ignoredOptOuts, agents, seconds, hasTransientFailures, shards, shardsWritten
            case tableRows, shardsRewritten, missingTransient, missingPermanent
        }

        public func encode(to encoder: any Encoder) throws {
            try tally.encode(to: encoder, keys: .summary)
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(total, forKey: .total)
            try container.encode(tally.alreadySaved, forKey: .skipped)
            try container.encodeIfPresent(purpose?.rawValue, forKey: .purpose)
            try container.encode(ignoredOptOuts.map(\.rawValue).sorted(), forKey: .ignoredOptOuts)
            try container.encode(agents, forKey: .agents)
            try container.encode(tally.hasTransientFailures, forKey: .hasTransientFailures)
            try container.encode(seconds, forKey: .seconds)
            try container.encodeIfPresent(shards, forKey: .shards)
            try container.encodeIfPresent(shardsWritten, forKey: .shardsWritten)
            try container.encodeIfPresent(tableRows, forKey: .tableRows)
            try container.encodeIfPresent(shardsRewritten, forKey: .shardsRewritten)
            try container.encode(missingTransient, forKey: .missingTransient)
            try container.encode(missingPermanent, forKey: .missingPermanent)
        }
    }
}

extension URLListJob.Summary {
    /// The counts of a pipeline run; where the shards stand and the wall time are the job's to add.
    init(tally: Pipeline.Tally) {
        self.init()
        self.tally = tally
        total = tally.saved + tally.alreadySaved + tally.duplicates + tally.nearDuplicates + tally.failed + tally.filtered + tally.failedEarlier
            + tally.optedOut + tally.disallowed
    }
}
