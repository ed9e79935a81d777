import Foundation
import MirrorImages
import MirrorModel

/// The one place that decides whether an image's owner reserved it against what the run collects it for.
///
/// The layers only report what they read, as ``ConsentEvidence``: the site's robots.txt and TDMRep file
/// (``SiteGate``, ``RobotsRules``, ``TDMRep``), the image response's headers (``ResponseSignals``), the image's own XMP and C2PA marks
/// (``ImageMarks``). This value holds the run's ``purpose``, the signals set aside (`--ignore-opt-out`) and the
/// table of what each term reserves, and gives one verdict: the first piece of evidence, in the order the layers
/// read them, that reserves the purpose and is not set aside. An explicit yes refuses nothing, and an absent
/// signal is no preference.
///
/// What each term reserves (``purposes(reservedBy:)``):
///
/// | term | reserves |
/// |---|---|
/// | robots.txt `Disallow` (or a file that could not be had) | every purpose: the image is not fetched |
/// | Content-Signal `ai-train=no` / `ai-input=no` / `search=no` | ai-train / ai-input / search |
/// | aipref `train-ai=n`, `train-genai=n` | ai-train (a dataset may train a generative model) |
/// | aipref `ai-output=n`, `ai-use=n` | ai-input; `search=n`: search; `bots=n`: every purpose |
/// | X-Robots-Tag `noai`, `noimageai`, `noml` | ai-train, ai-input |
/// | X-Robots-Tag `noindex`, `noimageindex` | ai-train, ai-input, search |
/// | X-Robots-Tag `noarchive` | archive |
/// | TDMRep `tdm-reservation: 1` (file or header) | ai-train, ai-input, search (text and data mining) |
/// | IPTC `DMI-PROHIBITED`, `-SEECONSTRAINT`, `-SEEEMBEDDEDRIGHTSEXPR`, `-SEELINKEDRIGHTSEXPR` | ai-train, ai-input, search |
/// | IPTC `DMI-PROHIBITED-AIMLTRAINING`, `-GENAIMLTRAINING` | ai-train |
/// | IPTC `DMI-PROHIBITED-EXCEPTSEARCHENGINEINDEXING` | ai-train, ai-input |
/// | C2PA/CAWG `ai_training`, `ai_generative_training` `notAllowed` or `constrained` | ai-train |
/// | C2PA/CAWG `data_mining` `notAllowed` or `constrained` | ai-train, ai-input, search |
/// | C2PA/CAWG `ai_inference` `notAllowed` or `constrained` | ai-input |
///
/// `constrained` reserves: the constraint is prose (`constraint_info`) a machine cannot check. `DMI-ALLOWED`,
/// `DMI-UNSPECIFIED`, `allowed`, `y`, `yes`, `tdm-reservation: 0` and unknown values reserve nothing.
public struct ConsentPolicy: Sendable, Hashable {
    /// What the images are for (`--purpose`). Default ``UsePurpose/aiTrain``.
    public var purpose: UsePurpose = .aiTrain
    /// Signals whose reservations are set aside (`--ignore-opt-out`): read and recorded, never refusing. Default none.
    public var ignored: Set<ConsentSignal> = []
    /// Which `X-Robots-Tag` directives are read, and for which product token.
    public var robotsTag = XRobotsTag()
    /// `X-Robots-Tag` directives and the purposes each reserves. Default ``defaultRobotsTagTable``; `--opt-out-tokens`
    /// replaces it with directives that reserve every purpose.
    public var robotsTagTable: [String: Set<UsePurpose>] = ConsentPolicy.defaultRobotsTagTable
    /// Whether an image that declares it was generated (``ImageDeclarations/isGenerated``) is kept out, as
    /// `filtered` (`--skip-generated`). Default false: it is saved and marked.
    public var skipsGenerated = false

    /// The directives read by default: DeviantArt's `noai` and `noimageai` (img2dataset's defaults with `noindex`
    /// and `noimageindex`), `noml` (img2dataset #365), and `noarchive` for a mirror kept for people.
    public static let defaultRobotsTagTable: [String: Set<UsePurpose>] = [
        "noai": [.aiTrain, .aiInput], "noimageai": [.aiTrain, .aiInput], "noml": [.aiTrain, .aiInput],
        "noindex": [.aiTrain, .aiInput, .search], "noimageindex": [.aiTrain, .aiInput, .search],
        "noarchive": [.archive],
    ]

    public init(purpose: UsePurpose = .aiTrain, ignored: Set<ConsentSignal> = []) {
        self.purpose = purpose
        self.ignored = ignored
    }

    /// The product tokens a run whose requests carry `userAgent` answers to, for ``robotsTag`` (whose agents the
    /// pipeline reads robots.txt's groups for too): the agent's own (`MyCrawler/1.0 (+mailto:ops@example.org)` is
    /// `mycrawler`, ``RobotsRules/productToken(ofUserAgent:)``), then `mirror`, which a site may address whatever the
    /// agent calls itself.
    public static func agents(forUserAgent userAgent: String) -> [String] {
        guard let token = RobotsRules.productToken(ofUserAgent: userAgent), token != "mirror" else { return ["mirror"] }
        return [token, "mirror"]
    }

    /// A policy whose `X-Robots-Tag` reservations are exactly `directives`, each reserving every purpose.
    public mutating func setRobotsTagDirectives(_ directives: Set<String>) {
        robotsTagTable = Dictionary(uniqueKeysWithValues: directives.map { ($0.lowercased(), Set(UsePurpose.allCases)) })
    }

    /// The site files whose signals count for this policy, which the pipeline's ``SiteGate`` reads: robots.txt unless
    /// its three signals (`robots`, `content-signal`, `content-usage`) are all set aside; the TDMRep file where its
    /// reservation counts for the purpose and is not set aside.
    public var siteFiles: SiteGate.Files {
        var files: SiteGate.Files = []
        if !ignored.isSuperset(of: [.robots, .contentSignal, .contentUsage]) { files.insert(.robots) }
        if !ignored.contains(.tdmrepFile), purposes(reservedBy: .tdmReservation(reserved: true)).contains(purpose) {
            files.insert(.tdmrep)
        }
        return files
    }

    // MARK: Deciding

    /// How the evidence read for one image comes out for the run's purpose.
    public enum Verdict: Sendable, Hashable {
        /// Nothing read reserves the purpose, or what does is set aside (those reservations, for the record).
        case allowed(setAside: [ConsentEvidence])
        /// The first reservation that counts.
        case refused(Reservation)
    }

    /// The verdict on `evidence`, in the order the layers read it.
    public func verdict(_ evidence: [ConsentEvidence]) -> Verdict {
        var setAside: [ConsentEvidence] = []
        for item in evidence where reserves(item) {
            if ignored.contains(item.signal) {
                setAside.append(item)
            } else {
                return .refused(Reservation(evidence: item, purpose: purpose))
            }
        }
        return .allowed(setAside: setAside)
    }

    /// Whether `evidence` reserves the run's purpose (set aside or not).
    public func reserves(_ evidence: ConsentEvidence) -> Bool {
        purposes(reservedBy: evidence.term).contains(purpose)
    }

    /// The purposes a term reserves: the table in this type's documentation.
    public func purposes(reservedBy term: ConsentEvidence.Term) -> Set<UsePurpose> {
        let every = Set(UsePurpose.allCases)
        let mining: Set<UsePurpose> = [.aiTrain, .aiInput, .search]
        switch term {
        case .disallow, .unavailable:
            return every
        case let .contentSignal(category, allowed):
            guard !allowed else { return [] }
            switch category {
            case "ai-train": return [.aiTrain]
            case "ai-input": return [.aiInput]
            case "search": return [.search]
            default: return []
            }
        case let .usage(category, allowed):
            guard !allowed else { return [] }
            switch category {
            case "train-ai", "train-genai": return [.aiTrain]
            case "ai-output", "ai-use": return [.aiInput]
            case "search": return [.search]
            case "bots", "all": return every
            default: return []
            }
        case let .robotsTag(directive):
            return robotsTagTable[directive] ?? []
        case .recorded:
            return []  // a record read back is counted, never decided on again
        case let .tdmReservation(reserved):
            return reserved ? mining : []
        case let .dataMining(code):
            switch code.uppercased() {
            case "DMI-PROHIBITED-AIMLTRAINING", "DMI-PROHIBITED-GENAIMLTRAINING": return [.aiTrain]
            case "DMI-PROHIBITED-EXCEPTSEARCHENGINEINDEXING": return [.aiTrain, .aiInput]
            case "DMI-PROHIBITED", "DMI-PROHIBITED-SEECONSTRAINT", "DMI-PROHIBITED-SEEEMBEDDEDRIGHTSEXPR",
                 "DMI-PROHIBITED-SEELINKEDRIGHTSEXPR":
                return mining
            default: return []  // DMI-ALLOWED, DMI-UNSPECIFIED, and values the vocabulary does not have
            }
        case let .trainingMining(entry, use):
            guard use == "notAllowed" || use == "constrained" else { return [] }
            switch entry {
            case "ai_training", "ai_generative_training": return [.aiTrain]
            case "data_mining": return mining
            case "ai_inference": return [.aiInput]
            default: return []
            }
        }
    }

    // MARK: The image's own marks

    /// What an image's XMP and C2PA marks state, as evidence: IPTC Data Mining values, then C2PA/CAWG training-mining
    /// entries (of the active manifest).
    public static func evidence(of marks: ImageMarks?) -> [ConsentEvidence] {
        guard let marks else { return [] }
        var evidence: [ConsentEvidence] = []
        for mark in marks.dataMining {
            let code = mark.value.split(separator: "/").last.map(String.init) ?? mark.value
            evidence.append(ConsentEvidence(signal: .iptc, value: code, location: mark.location, term: .dataMining(code: code)))
        }
        for entry in marks.trainingMining {
            let name = entry.entry.split(separator: ".", maxSplits: 1).last.map(String.init) ?? entry.entry
            evidence.append(ConsentEvidence(
                signal: .c2pa, value: "\(entry.entry): \(entry.use)" + (entry.constraintInfo.map { " (\($0))" } ?? ""),
                location: "C2PA \(entry.label)", term: .trainingMining(entry: name, use: entry.use)
            ))
        }
        return evidence
    }

    /// What a saved image's record says of the run's purpose, of its marks (the source type it declares: a generated
    /// one first, from XMP before C2PA) and of the reservations `setAside`.
    public func declarations(of marks: ImageMarks?, setAside: [ConsentEvidence]) -> ImageDeclarations {
        var declarations = ImageDeclarations(purpose: purpose, hasC2PAManifest: marks?.hasC2PAManifest ?? false, ignored: setAside)
        let declared = marks?.digitalSourceTypes.first { ImageDeclarations.isGenerated(sourceType: $0.value) } ?? marks?.digitalSourceTypes.first
        if let declared {
            declarations.sourceType = declared.value
            declarations.sourceTypeFrom = declared.source == .c2pa ? .c2pa : .iptc
        }
        return declarations
    }

    /// The verdict on a verified image's own marks, and with `setAside` (the reservations of the site and the response
    /// the run set aside) what its record says: a reservation that counts ends it opted out; with ``skipsGenerated``,
    /// a declared generated image ends filtered.
    package func judge(marks: ImageMarks?, setAside: [ConsentEvidence]) -> MarksJudgement {
        // Most images carry no marks at all: nothing to read, nothing declared.
        guard let marks else { return .kept(ImageDeclarations(purpose: purpose, ignored: setAside)) }
        var setAside = setAside
        switch verdict(Self.evidence(of: marks)) {
        case let .refused(reservation): return .keptOut(.optedOut(reservation))
        case let .allowed(ignored): setAside += ignored
        }
        let declarations = declarations(of: marks, setAside: setAside)
        if skipsGenerated, declarations.isGenerated, let type = declarations.sourceType {
            let code = type.split(separator: "/").last.map(String.init) ?? type
            return .keptOut(.filtered("declares it was generated: \(code) (\(declarations.sourceTypeFrom?.rawValue ?? "iptc"))"))
        }
        return .kept(declarations)
    }

    /// What an image's own marks decide: it is kept, with what its record declares, or the row ends here.
    package enum MarksJudgement: Sendable {
        case kept(ImageDeclarations)
        /// Opted out by a mark, or filtered as generated (``skipsGenerated``).
        case keptOut(RowOutcome)
    }
}
