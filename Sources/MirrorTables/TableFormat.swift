
/// How a table of URLs is written: by its name's extension (before any `.gz`), or as `--input-format` says.
public enum TableFormat: String, Sendable, CaseIterable {
    /// One URL per line; blank lines and `#` comments are skipped; text after the URL on its line is ignored.
    case txt
    /// Comma-separated values with a header row (RFC 4180 quoting).
    case csv
    /// Tab-separated values with a header row.
    case tsv
    /// One JSON object per line.
    case jsonl

    /// The format a file's name says (`urls.csv.gz` → csv), or `nil` when it says none (`-`, `urls`).
    public init?(fileName: String) {
        var name = fileName.lowercased()
        if name.hasSuffix(".gz") { name.removeLast(3) }
        switch name.split(separator: ".").last.map(String.init) {
        case "txt", "list", "urls": self = .txt
        case "csv": self = .csv
        case "tsv", "tab": self = .tsv
        case "jsonl", "ndjson": self = .jsonl
        default: return nil
        }
    }

    /// Whether rows have named columns (`--url-col`, `--caption-col`, `--keep-cols` apply).
    public var hasColumns: Bool { self != .txt }
}
