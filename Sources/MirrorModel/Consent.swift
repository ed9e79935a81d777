import Foundation

/// Where a machine-readable reservation (or a mark of how an image was made) was read: the vocabulary of records,
/// summaries, `--ignore-opt-out` and the README's table of signals. Raw values are what the files say.
public enum ConsentSignal: String, Codable, Sendable, CaseIterable, Comparable {
    /// robots.txt's `Disallow` rules for mirror's product token (RFC 9309): the image may not be fetched at all.
    case robots
    /// A `Content-Signal` line of robots.txt (Cloudflare's Content Signals Policy: `ai-train=no`, …).
    case contentSignal = "content-signal"
    /// An AI-preferences statement (IETF aipref: `train-ai=n`, …), in a robots.txt `Content-Usage` line or a
    /// `Content-Usage` response header.
    case contentUsage = "content-usage"
    /// A directive of the image response's `X-Robots-Tag` (`noai`, `noimageai`, `noml`, …).
    case xRobotsTag = "x-robots-tag"
    /// A rule of the origin's `/.well-known/tdmrep.json` (W3C TDMRep).
    case tdmrepFile = "tdmrep-file"
    /// The image response's `tdm-reservation` header (W3C TDMRep).
    case tdmrepHeader = "tdmrep-header"
    /// The image's XMP: IPTC/PLUS `plus:DataMining`, or IPTC `Iptc4xmpExt:DigitalSourceType`.
    case iptc
    /// The image's C2PA manifest (Content Credentials): a `c2pa.`/`cawg.training-mining` assertion, or the
    /// `c2pa.created` action's digital source type.
    case c2pa

    /// In the order the layers read them: the site's, the response's, the image's.
    public static func < (lhs: Self, rhs: Self) -> Bool {
        (allCases.firstIndex(of: lhs) ?? 0) < (allCases.firstIndex(of: rhs) ?? 0)
    }

    /// Parses `--ignore-opt-out`'s value: signals separated by commas, or `all`.
    /// - Throws: A message naming the word that is not a signal.
    public static func list(parsing text: String) throws(ConsentSignal.UnknownSignal) -> Set<ConsentSignal> {
        var signals: Set<ConsentSignal> = []
        for word in text.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces).lowercased() }) where !word.isEmpty {
            if word == "all" { return Set(allCases) }
            guard let signal = ConsentSignal(rawValue: word) else { throw UnknownSignal(word: word) }
            signals.insert(signal)
        }
        return signals
    }

    /// A word of `--ignore-opt-out` that names no signal.
    public struct UnknownSignal: Error, CustomStringConvertible {
        public var word: String
        public var description: String {
            "'\(word)' is not a signal: use " + ConsentSignal.allCases.map(\.rawValue).joined(separator: ", ") + " or all"
        }
    }
}

/// What the collected images are for (`--purpose`): each signal is matched against it, so a reservation of AI
/// training does not keep images out of a mirror kept for people to look at. Raw values are the option's words.
public enum UsePurpose: String, Codable, Sendable, CaseIterable {
    /// Training or fine-tuning AI models, generative ones included (the default, and the strictest: what a dataset is
    /// later trained into is not known, so a reservation of generative training alone applies too).
    case aiTrain = "ai-train"
    /// Giving the images to AI models as input (retrieval, grounding, inference), not training them.
    case aiInput = "ai-input"
    /// Building a search index that points back to where each image came from.
    case search
    /// Keeping a copy for people to look at (a gallery, an archive): only what forbids fetching or archiving applies.
    case archive
}

/// A machine-readable statement about an image that a layer read, as it was read: the evidence a record keeps.
///
/// Layers only report what they saw; ``ConsentPolicy`` (in MirrorFetch) decides what it reserves for the run's
/// purpose.
public struct ConsentEvidence: Sendable, Hashable, Codable {
    /// Which signal it is.
    public var signal: ConsentSignal
    /// What it says, as written (`ai-train=no`, `noai`, `tdm-reservation: 1`, `DMI-PROHIBITED-AIMLTRAINING`,
    /// `cawg.ai_training: notAllowed`, `Disallow: /private/`).
    public var value: String
    /// Where it was read (`robots.txt, group for mirror`, `X-Robots-Tag header`, `/.well-known/tdmrep.json rule 2
    /// (location /img/)`, `XMP plus:DataMining`, `C2PA cawg.training-mining`).
    public var location: String
    /// The term it states, for the policy's table.
    public var term: Term
    /// The TDMRep policy a licence may be had under (`tdm-policy`), when the reservation names one.
    public var policy: String?

    /// The term a signal states, in its own vocabulary.
    public enum Term: Sendable, Hashable, Codable {
        /// robots.txt does not let mirror fetch the URL (a `Disallow` rule, or a file that could not be had).
        case disallow
        /// robots.txt could not be had (a 5xx, a redirect loop, a timeout, a failed connection): nothing may be fetched
        /// for now (RFC 9309 §2.3.1.4). `reason` is the row's failure key (`robots-unavailable` for an answer, the
        /// network's own for a failure: `dns`, `timeout`, `tls`, …), and `transient` whether a later run may do better
        /// (a certificate that is not trusted will not be, a 503 may).
        case unavailable(reason: String, transient: Bool)
        /// A Content Signals category (`search`, `ai-input`, `ai-train`) with `yes` (true) or `no`.
        case contentSignal(category: String, allowed: Bool)
        /// An aipref category (`train-ai`, `train-genai`, `search`, …) with `y` (true) or `n`.
        case usage(category: String, allowed: Bool)
        /// An `X-Robots-Tag` directive addressed to every agent or to mirror, lowercase.
        case robotsTag(directive: String)
        /// A TDMRep `tdm-reservation`: 1 (true) or 0.
        case tdmReservation(reserved: Bool)
        /// An IPTC/PLUS Data Mining value (`DMI-PROHIBITED-AIMLTRAINING`, the vocabulary's code).
        case dataMining(code: String)
        /// A C2PA/CAWG training-mining entry (`ai_training`, without its `c2pa.`/`cawg.` prefix) with its `use`.
        case trainingMining(entry: String, use: String)
        /// Read back from a record, which keeps the signal, its value and where it was read, not the term.
        case recorded

        /// Whether it says robots.txt could not be had.
        public var isUnavailable: Bool {
            if case .unavailable = self { return true }
            return false
        }
    }

    public init(signal: ConsentSignal, value: String, location: String, term: Term, policy: String? = nil) {
        self.signal = signal
        self.value = value
        self.location = location
        self.term = term
        self.policy = policy
    }

    /// `signal value (location)`, the form a record's list of set-aside reservations uses.
    public var summary: String { "\(signal.rawValue) \(value) (\(location))" }
}

/// A reservation that kept an image out: the evidence, and the purpose it reserves.
public struct Reservation: Sendable, Hashable {
    /// What was read, and where.
    public var evidence: ConsentEvidence
    /// The run's purpose, which the evidence reserves.
    public var purpose: UsePurpose

    public init(evidence: ConsentEvidence, purpose: UsePurpose) {
        self.evidence = evidence
        self.purpose = purpose
    }

    public var signal: ConsentSignal { evidence.signal }

    /// One line for people: `robots.txt disallows /private/b.png`, `X-Robots-Tag: noai reserves ai-train`.
    public var message: String {
        switch evidence.term {
        case .disallow, .unavailable: evidence.value
        default:
            "\(Self.label(of: evidence.signal)) \(evidence.value) reserves \(purpose.rawValue) (\(evidence.location))"
                + (evidence.policy.map { "; terms: \($0)" } ?? "")
        }
    }

    private static func label(of signal: ConsentSignal) -> String {
        switch signal {
        case .robots: "robots.txt"
        case .contentSignal: "Content-Signal:"
        case .contentUsage: "Content-Usage:"
        case .xRobotsTag: "X-Robots-Tag:"
        case .tdmrepFile, .tdmrepHeader: "TDMRep"
        case .iptc: "IPTC Data Mining"
        case .c2pa: "C2PA"
        }
    }
}

/// What a saved image's record says of its provenance and of the reservations that were read for it.
public struct ImageDeclarations: Sendable, Hashable {
    /// The purpose the run applied to the reservations it read (`--purpose`), or `nil` when none were read.
    public var purpose: UsePurpose?
    /// The digital source type the image declares (an IPTC NewsCodes URI), or `nil`.
    public var sourceType: String?
    /// Where that was declared: ``ConsentSignal/iptc`` (XMP) or ``ConsentSignal/c2pa``.
    public var sourceTypeFrom: ConsentSignal?
    /// Whether the declared type says a machine made it (``isGenerated(sourceType:)``).
    public var isGenerated: Bool { sourceType.map(Self.isGenerated(sourceType:)) ?? false }
    /// Whether the image carried a C2PA manifest store (read, its signature not validated).
    public var hasC2PAManifest = false
    /// Reservations that would have kept the image out, set aside by `--ignore-opt-out`.
    public var ignored: [ConsentEvidence] = []

    public init(
        purpose: UsePurpose? = nil, sourceType: String? = nil, sourceTypeFrom: ConsentSignal? = nil, hasC2PAManifest: Bool = false,
        ignored: [ConsentEvidence] = []
    ) {
        self.purpose = purpose
        self.sourceType = sourceType
        self.sourceTypeFrom = sourceTypeFrom
        self.hasC2PAManifest = hasC2PAManifest
        self.ignored = ignored
    }

    /// The IPTC digital source types that mean a machine made the picture: by a model trained on sampled content
    /// (`trainedAlgorithmicMedia`), a composite that includes such content (`compositeWithTrainedAlgorithmicMedia`),
    /// or purely by an algorithm (`algorithmicMedia`). Others (`digitalCapture`, `compositeSynthetic`,
    /// `algorithmicallyEnhanced`, …) are recorded as declared, not as generated.
    public static let generatedSourceTypes: Set<String> = [
        "trainedAlgorithmicMedia", "compositeWithTrainedAlgorithmicMedia", "algorithmicMedia",
    ]

    /// Whether `sourceType` (a NewsCodes URI, or its code alone) is one of ``generatedSourceTypes``.
    public static func isGenerated(sourceType: String) -> Bool {
        let code = sourceType.split(separator: "/").last.map(String.init) ?? sourceType
        return generatedSourceTypes.contains(code.trimmingCharacters(in: .whitespaces))
    }
}
