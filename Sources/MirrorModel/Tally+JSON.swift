import Foundation

extension Tally {
    /// The version of the counts' JSON, written as `"schema"` beside them in every output that carries them (`mirror
    /// QUERY --json`, `mirror urls --json`, `mirror status --json`, each shard's `NNNNN_stats.json`).
    ///
    /// Version 2 names each count one way, in camelCase, with one meaning in every output; the README's "Counts in
    /// `--json`" lists the keys and what changed from version 1.
    public static let schemaVersion = 2

    /// Which of the schema's keys an output writes: every output writes the rows' outcomes and their details; a run's
    /// summary adds what the run passed over; shard stats and `mirror status` add schema 1's names for one release.
    package struct JSONKeys: OptionSet, Sendable {
        package let rawValue: Int
        package init(rawValue: Int) { self.rawValue = rawValue }

        /// `alreadySaved`, `failedEarlier` and `cacheHits`: what a run passed over and where it found its images. A
        /// shard's stats and a dataset's status count how the rows ended, not how a run met them.
        package static let run = JSONKeys(rawValue: 1 << 0)
        /// `bytes`: left out where the bytes are not known (a folder's `mirror status`, which counts its manifest).
        package static let bytes = JSONKeys(rawValue: 1 << 1)
        /// Schema 1's names of shard stats and `mirror status --json` (`transient`, `invalid`, `near_duplicates`,
        /// `opted_out`) beside the new ones, with the values schema 1 gave them, so that a reader of schema 1 (an
        /// earlier mirror resuming the dataset, a script) keeps working for one release.
        package static let schema1Names = JSONKeys(rawValue: 1 << 2)

        /// A job's summary (`mirror QUERY --json`, `mirror urls --json`).
        package static let summary: JSONKeys = [.run, .bytes]
        /// A shard's stats file, and `mirror status --json` of shards.
        package static let stats: JSONKeys = [.bytes, .schema1Names]
    }

    private enum Key: String, CodingKey {
        case schema
        case saved, alreadySaved, duplicates, nearDuplicates, failed, failures, transientFailures, invalidRows, filtered
        case optedOut, disallowed, refusals, generated, failedEarlier, cacheHits, bytes
        // Schema 1's names in shard stats and `mirror status --json`.
        case transient, invalid, nearDuplicates1 = "near_duplicates", optedOut1 = "opted_out"
    }

    /// Writes the counts, flat, into `encoder`'s keyed container (an output adds its own keys beside them).
    ///
    /// Every count is written, zero or not, but for the keys `keys` leaves out; `schema1Names` adds the old names as
    /// schema 1 wrote them (`near_duplicates` only when there are some).
    package func encode(to encoder: any Encoder, keys: JSONKeys) throws {
        var container = encoder.container(keyedBy: Key.self)
        try container.encode(Self.schemaVersion, forKey: .schema)
        try container.encode(saved, forKey: .saved)
        try container.encode(duplicates, forKey: .duplicates)
        try container.encode(nearDuplicates, forKey: .nearDuplicates)
        try container.encode(failed, forKey: .failed)
        try container.encode(failures, forKey: .failures)
        try container.encode(transient, forKey: .transientFailures)
        try container.encode(invalid, forKey: .invalidRows)
        try container.encode(filtered, forKey: .filtered)
        try container.encode(optedOut, forKey: .optedOut)
        try container.encode(disallowed, forKey: .disallowed)
        try container.encode(refusals, forKey: .refusals)
        try container.encode(generated, forKey: .generated)
        if keys.contains(.run) {
            try container.encode(alreadySaved, forKey: .alreadySaved)
            try container.encode(failedEarlier, forKey: .failedEarlier)
            try container.encode(cacheHits, forKey: .cacheHits)
        }
        if keys.contains(.bytes) { try container.encode(bytes, forKey: .bytes) }
        if keys.contains(.schema1Names) {
            try container.encode(transient, forKey: .transient)
            try container.encode(invalid, forKey: .invalid)
            try container.encode(optedOut, forKey: .optedOut1)
            if nearDuplicates > 0 { try container.encode(nearDuplicates, forKey: .nearDuplicates1) }
        }
    }

    /// The counts that `decoder` holds, in either schema: each count by its schema 2 name, else by its schema 1 name,
    /// else 0 (a count the file does not have: stats written before `transient` was counted read as if every failure
    /// were permanent). A failure count is never below its transient ones.
    /// - Throws: `DecodingError` when `saved` is missing or a count has the wrong type.
    package init(countsFrom decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Key.self)
        func value<Value: Decodable>(_ type: Value.Type, _ key: Key, else old: Key? = nil) throws -> Value? {
            if let value = try container.decodeIfPresent(type, forKey: key) { return value }
            return try old.flatMap { try container.decodeIfPresent(type, forKey: $0) }
        }
        func count(_ key: Key, else old: Key? = nil) throws -> Int { try value(Int.self, key, else: old) ?? 0 }
        self.init()
        saved = try container.decode(Int.self, forKey: .saved)
        (alreadySaved, duplicates, nearDuplicates) = (try count(.alreadySaved), try count(.duplicates), try count(.nearDuplicates, else: .nearDuplicates1))
        failed = try count(.failed)
        transient = min(try count(.transientFailures, else: .transient), failed)
        failures = try value([String: Int].self, .failures) ?? [:]
        (invalid, filtered) = (try count(.invalidRows, else: .invalid), try count(.filtered))
        (optedOut, disallowed) = (try count(.optedOut, else: .optedOut1), try count(.disallowed))
        refusals = try value([String: Int].self, .refusals) ?? [:]
        (generated, failedEarlier, cacheHits) = (try count(.generated), try count(.failedEarlier), try count(.cacheHits))
        bytes = try value(Int64.self, .bytes) ?? 0
    }

    /// The counts alone as an `Encodable` value (a folder's `mirror status --json`).
    package struct Encoded: Encodable {
        package var tally: Tally
        package var keys: JSONKeys

        package init(_ tally: Tally, keys: JSONKeys) {
            (self.tally, self.keys) = (tally, keys)
        }

        package func encode(to encoder: any Encoder) throws {
            try tally.encode(to: encoder, keys: keys)
        }
    }
}
