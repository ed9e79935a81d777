/// Why a Parquet file, or a part of it, cannot be read: the one error every API of MirrorParquet throws.
///
/// Its `description` is one line naming what is wrong or unsupported and where (the column, the row group, the offset),
/// for a user to read: names and text taken from the file are quoted, cut to 64 characters and stripped of control
/// characters. A reader that throws has yielded only correct rows before it: it never guesses.
public enum ParquetError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The bytes could not be read: the file could not be opened, or a read failed or came back short.
    case unreadable(String)
    /// Not a Parquet file: no `PAR1` magic at one end, or a footer length that cannot be.
    case notParquet(String)
    /// A Parquet file whose structure is inconsistent: a size past its container, a count that disagrees, a value the
    /// format cannot hold, data that ends early.
    case corrupt(String)
    /// A valid file, or column, that uses something this reader does not read (encryption, a codec, an encoding, a
    /// nested type), named.
    case unsupported(String)
    /// A size the file asks for that is over one of `ParquetFile.Configuration`'s limits.
    case overLimit(String)
    /// Columns were asked for by a name the file does not have.
    case noSuchColumn(String, available: [String])

    public var description: String {
        switch self {
        case .unreadable(let message): "cannot read the Parquet file: \(message)"
        case .notParquet(let message): "not a Parquet file: \(message)"
        case .corrupt(let message): "corrupt Parquet file: \(message)"
        case .unsupported(let message): "unsupported Parquet file: \(message)"
        case .overLimit(let message): "Parquet file over the reader's limits: \(message)"
        case .noSuchColumn(let name, let available):
            "no column \(quoted(name)) in the Parquet file (it has \(available.prefix(20).map(quoted).joined(separator: ", "))"
                + (available.count > 20 ? " and \(available.count - 20) more)" : ")")
        }
    }

    /// The same error with `context` (a column, a row group) before its message.
    func within(_ context: String) -> ParquetError {
        switch self {
        case .unreadable(let message): .unreadable("\(context): \(message)")
        case .notParquet(let message): .notParquet("\(context): \(message)")
        case .corrupt(let message): .corrupt("\(context): \(message)")
        case .unsupported(let message): .unsupported("\(context): \(message)")
        case .overLimit(let message): .overLimit("\(context): \(message)")
        case .noSuchColumn: self
        }
    }
}

/// A name from the file for a one-line message: in quotes, control characters replaced, at most 64 characters.
func quoted(_ name: String) -> String {
    var text = ""
    for character in name.unicodeScalars.prefix(64) {
        text.unicodeScalars.append(character.properties.generalCategory == .control
            || character == "\u{2028}" || character == "\u{2029}" ? "?" : character)
    }
    return "'" + text + (name.unicodeScalars.count > 64 ? "…'" : "'")
}
