import ArgumentParser
import MirrorKit

// The options whose values are a fixed set are typed: argument-parser checks them, names the values in `--help` and
// in its error ("Please provide one of 'exact', 'near' and 'none'"), and the commands use them without re-checking.

/// `--dedup exact|near|none`.
extension Deduplication: ExpressibleByArgument {
    public init?(argument: String) {
        self.init(name: argument.lowercased())
    }

    public static var allValueStrings: [String] { ["exact", "near", "none"] }

    public var defaultValueDescription: String {
        switch self {
        case .exact: "exact"
        case .near: "near"
        case .none: "none"
        }
    }
}

/// `--retry-failed [transient|all]` (a bare `--retry-failed` is made `--retry-failed=transient` before parsing:
/// argument-parser has no option whose value may be left out; see `Mirror.main`).
extension RetryFailed: ExpressibleByArgument {}

/// `--input-format txt|csv|tsv|jsonl`, in any case.
extension TableFormat: ExpressibleByArgument {
    public init?(argument: String) {
        self.init(rawValue: argument.lowercased())
    }
}

/// `--resize no|longer-side|shorter-side|center-crop|pad|border|fixed`, and `keep-ratio`, `longer-side`'s earlier name
/// (not listed).
extension ImageTransform.Fit: ExpressibleByArgument {
    public init?(argument: String) {
        self.init(name: argument.lowercased())
    }
}

/// `--pad-color white|black|#RRGGBB`.
extension ImageTransform.Color: ExpressibleByArgument {
    public init?(argument: String) {
        self.init(name: argument)
    }

    public static var allValueStrings: [String] { ["white", "black", "#RRGGBB"] }

    public var defaultValueDescription: String {
        switch self {
        case .white: "white"
        case .black: "black"
        default: description
        }
    }
}

/// `--hash sha256|md5`.
extension ExpectedDigest.Algorithm: ExpressibleByArgument {
    public init?(argument: String) {
        self.init(rawValue: argument.lowercased())
    }
}

/// `--encode keep|jpeg|png|webp`.
extension ImageTransform.Encoding: ExpressibleByArgument {}

/// `--shard-by row|host`.
extension WorkShard.Split: ExpressibleByArgument {}

/// `--format folder|webdataset`: what `mirror urls` writes.
enum OutputFormat: String, CaseIterable, ExpressibleByArgument {
    /// The files and `manifest.jsonl`.
    case folder
    /// Tar shards with records and stats.
    case webdataset
}
