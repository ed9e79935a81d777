/// What an image's own metadata says about data mining and about how it was made — never a decision: the caller's
/// consent policy decides what a value means for it.
///
/// ``ImageValidator`` fills ``ImageInfo/marks`` when its ``ImageValidator/readsMarks`` is set, from the payloads its
/// structural walk passes anyway (no pixel is decoded, nothing is fetched):
/// - **XMP** packets (JPEG APP1 with extended XMP, PNG `iTXt`, WebP `XMP `, GIF's `XMP DataXMP` application
///   extension): PLUS's `plus:DataMining` (IPTC Photo Metadata 2023.1) and IPTC's `Iptc4xmpExt:DigitalSourceType`,
///   matched by namespace URI.
/// - **C2PA** manifest stores (JPEG APP11, PNG `caBX`, WebP `C2PA`, GIF `C2PA_GIF`): the active manifest's
///   `c2pa.training-mining` / `cawg.training-mining` entries and its `c2pa.created` actions' `digitalSourceType`.
///   Signatures are not validated: a manifest says what its signer claims, whoever that is.
///
/// Values are kept as written (a vocabulary URI such as `http://ns.useplus.org/ldf/vocab/DMI-PROHIBITED`, or a code
/// such as `notAllowed`), each with where it was read. A mark that is present but cannot be read (malformed, over a
/// bound, compressed) adds a line to ``notes`` and nothing else: a broken mark never stands for a value.
public struct ImageMarks: Sendable, Hashable {
    /// One value as written, and where it was read: `"XMP plus:DataMining"`, `"extended XMP plus:DataMining"`.
    public struct Mark: Sendable, Hashable {
        /// The value as written, whitespace trimmed (usually a vocabulary URI).
        public var value: String
        /// Where it was read, for a person: the container (`XMP`, `extended XMP`) and the property.
        public var location: String

        public init(value: String, location: String) {
            self.value = value
            self.location = location
        }
    }

    /// Which standard a digital source type was read from.
    public enum Source: String, Sendable, Hashable {
        /// IPTC's `Iptc4xmpExt:DigitalSourceType` in an XMP packet.
        case xmp
        /// A `c2pa.created` action's `digitalSourceType` in the active C2PA manifest.
        case c2pa
    }

    /// An IPTC digital source type (`http://cv.iptc.org/newscodes/digitalsourcetype/trainedAlgorithmicMedia`, …).
    public struct SourceType: Sendable, Hashable {
        /// The value as written, whitespace trimmed.
        public var value: String
        /// The standard it came from.
        public var source: Source
        /// Where it was read: `"XMP Iptc4xmpExt:DigitalSourceType"`, `"C2PA c2pa.actions.v2 c2pa.created"`.
        public var location: String

        public init(value: String, source: Source, location: String) {
            self.value = value
            self.source = source
            self.location = location
        }
    }

    /// One entry of a training-and-data-mining assertion.
    public struct TrainingMiningEntry: Sendable, Hashable {
        /// The assertion's label as stored: `c2pa.training-mining`, `cawg.training-mining`, possibly with a `__N`
        /// suffix.
        public var label: String
        /// The entry's name as stored: `c2pa.ai_training`, `c2pa.ai_generative_training`, `c2pa.data_mining`,
        /// `c2pa.ai_inference`, or the `cawg.` names.
        public var entry: String
        /// The entry's `use` as stored: `allowed`, `notAllowed` or `constrained` in the specifications.
        public var use: String
        /// The entry's `constraint_info` when it is a text string.
        public var constraintInfo: String?

        public init(label: String, entry: String, use: String, constraintInfo: String? = nil) {
            self.label = label
            self.entry = entry
            self.use = use
            self.constraintInfo = constraintInfo
        }
    }

    /// `plus:DataMining` values (`http://ns.useplus.org/ldf/vocab/DMI-…`).
    public var dataMining: [Mark]
    /// Digital source types, from XMP and from C2PA actions.
    public var digitalSourceTypes: [SourceType]
    /// The active C2PA manifest's training-and-data-mining entries.
    public var trainingMining: [TrainingMiningEntry]
    /// Whether a C2PA manifest store (a JUMBF superbox labelled `c2pa`) was found, readable or not.
    public var hasC2PAManifest: Bool
    /// Marks that are present but were not read — malformed, over a bound, compressed — one short line each.
    public var notes: [String]

    public init(
        dataMining: [Mark] = [], digitalSourceTypes: [SourceType] = [], trainingMining: [TrainingMiningEntry] = [],
        hasC2PAManifest: Bool = false, notes: [String] = []
    ) {
        self.dataMining = dataMining
        self.digitalSourceTypes = digitalSourceTypes
        self.trainingMining = trainingMining
        self.hasC2PAManifest = hasC2PAManifest
        self.notes = notes
    }

    /// Whether no value was read and nothing was noted (an XMP packet without either property, say).
    public var isEmpty: Bool {
        dataMining.isEmpty && digitalSourceTypes.isEmpty && trainingMining.isEmpty && !hasC2PAManifest && notes.isEmpty
    }
}
