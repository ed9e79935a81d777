import Foundation

/// How a row (a table's, or a search's candidate) ended: the one vocabulary the sinks record, the ``Tally`` counts, the
/// pipeline's events carry and the front end prints.
///
/// ```swift
/// switch outcome {
/// case let .saved(record, _): print("saved \(record.file)")
/// case let .failed(reason, message, isTransient): print("\(reason): \(message)\(isTransient ? " (may pass later)" : "")")
/// default: print(outcome.message ?? "")
/// }
/// ```
public enum RowOutcome: Sendable, Hashable {
    /// Published by the sink: its record, and where the bytes came from (the network, or a cache).
    case saved(ManifestRecord, source: CacheType)
    /// The output already held it (a folder by URL, shards by the row of a complete shard); nothing was fetched.
    case alreadySaved
    /// Passed over: it failed for good on an earlier run (404, not an image, refused), and nothing was fetched.
    case failedEarlier
    /// The URL came up earlier in this run (`of` nil), or the same bytes are already saved (`of` names them).
    case duplicate(of: String?)
    /// The same picture to the eye is already saved (`of` names it; their PDQ hashes `distance` bits apart).
    case nearDuplicate(of: String, distance: Int)
    /// The download gave no image: `reason` is its key (`http-404`, `timeout`, `transform-failed`, …), `message` says
    /// it for people, and `isTransient` whether it may succeed on a later run (`--retry-failed` retries those).
    case failed(reason: String, message: String, isTransient: Bool)
    /// The row gave no URL (why).
    case invalid(String)
    /// A valid image that a filter turned away (why).
    case filtered(String)
    /// Its owner reserved it against the run's purpose (the reservation: the signal, what it said, where).
    case optedOut(Reservation)
    /// Its host's robots.txt disallows it (the reservation: the rule, or why the file could not be had).
    case disallowed(Reservation)

    /// The word a record, a shard's stats and the folder's state database write for it, or `nil` for the rows that are
    /// never recorded again (``alreadySaved``, ``failedEarlier``).
    public var status: Status? {
        switch self {
        case .saved: .saved
        case .alreadySaved, .failedEarlier: nil
        case .duplicate: .duplicate
        case .nearDuplicate: .nearDuplicate
        case .failed: .failed
        case .invalid: .invalid
        case .filtered: .filtered
        case .optedOut: .optedOut
        case .disallowed: .disallowed
        }
    }

    /// Why, in a few words, for a row that ended without an image; `nil` for a saved one and for a repeat of a URL.
    public var message: String? {
        switch self {
        case .saved, .duplicate(of: nil): nil
        case .alreadySaved: "already saved"
        case .failedEarlier: "failed for good on an earlier run"
        case let .duplicate(existing?): "same image as \(existing)"
        case let .nearDuplicate(existing, distance): "looks the same as \(existing) (PDQ distance \(distance))"
        case let .failed(_, message, _): message
        case let .invalid(reason), let .filtered(reason): reason
        case let .optedOut(reservation), let .disallowed(reservation): reservation.message
        }
    }

    /// The refusal (an opt-out, or robots.txt), if it is one.
    public var reservation: Reservation? {
        switch self {
        case let .optedOut(reservation), let .disallowed(reservation): reservation
        default: nil
        }
    }

    /// How a row ended, as files write it: shard records (`status`), stats, the folder's state database. Raw values are
    /// what the files say.
    public enum Status: String, Codable, Sendable, CaseIterable {
        /// An image was saved (`success` in a shard's records).
        case saved = "success"
        /// The download gave no image (its reason says why: `http-404`, `truncated`, …).
        case failed
        /// The row gave no URL.
        case invalid
        /// The URL came up earlier in the run, or the same bytes are already saved.
        case duplicate
        /// The same picture to the eye is already saved: resized, re-encoded, trimmed (`--dedup near`).
        case nearDuplicate = "near_duplicate"
        /// A valid image that a filter turned away.
        case filtered
        /// Its owner reserved it against the run's purpose.
        case optedOut = "opted_out"
        /// Its host's robots.txt disallows it.
        case disallowed

        /// The statuses a folder's state database keeps as a row's failure reason, beside the failures' own reasons.
        package static let recordedAsReasons: [Status] = [.filtered, .optedOut, .disallowed, .nearDuplicate]

        /// The status a folder's recorded reason stands for: one of ``recordedAsReasons``, or else a failure.
        package init(recordedReason reason: String) {
            self = Status(rawValue: reason).flatMap { Self.recordedAsReasons.contains($0) ? $0 : nil } ?? .failed
        }
    }
}

extension RowOutcome {
    /// A row as a file recorded it, read back to be counted again (a rewritten shard's records, a folder's state
    /// database): what the file keeps, so a refusal's reservation holds its signal, value and location, its term
    /// ``ConsentEvidence/Term/recorded``, and a saved row needs its record.
    ///
    /// - Parameters:
    ///   - status: The recorded word.
    ///   - reason: A failure's key, or a refusal's signal (a refusal recorded before signals were: `nil`, read as
    ///     robots.txt for `disallowed` and `X-Robots-Tag` for `opted_out`, the only signals there were).
    ///   - record: A saved row's record; without one, a saved row is not read (`nil`).
    package init?(
        recorded status: Status, reason: String?, message: String? = nil, isTransient: Bool, record: ManifestRecord? = nil,
        value: String? = nil, location: String? = nil, purpose: UsePurpose? = nil
    ) {
        let text = message ?? ""
        switch status {
        case .saved:
            guard let record else { return nil }
            self = .saved(record, source: .none)
        case .failed: self = .failed(reason: reason ?? "unknown", message: text, isTransient: isTransient)
        case .invalid: self = .invalid(text)
        case .duplicate: self = .duplicate(of: nil)
        case .nearDuplicate: self = .nearDuplicate(of: "", distance: 0)
        case .filtered: self = .filtered(text)
        case .optedOut, .disallowed:
            let fallback: ConsentSignal = status == .disallowed ? .robots : .xRobotsTag
            let signal = reason.flatMap(ConsentSignal.init(rawValue:)) ?? fallback
            let evidence = ConsentEvidence(signal: signal, value: value ?? "", location: location ?? "", term: .recorded)
            let reservation = Reservation(evidence: evidence, purpose: purpose ?? .aiTrain)
            self = status == .disallowed ? .disallowed(reservation) : .optedOut(reservation)
        }
    }
}
