import Foundation

/// Splits a table's bytes into records and their fields, as bytes: RFC 4180 for CSV and TSV, lines for text lists and
/// JSONL. Nothing is decoded here, so no byte can end a field or a record early: row N of the table is record N.
///
/// - **Delimited** (CSV with `,`, TSV with a tab): a field that begins with `"` is quoted; inside it a doubled `""` is
///   one quote, and delimiters, CR and LF are data. Text after a closing quote is kept as it stands (`"Best" cat` →
///   `Best cat`, as Python's `csv` reads it). A quote inside an unquoted field is an ordinary byte. Outside quotes a
///   record ends at LF, CRLF or a lone CR (old Mac exports). TSV takes quotes as CSV does: that is what CSV.swift did
///   with a tab as its delimiter, and what pandas' `to_csv(sep="\t")` and Python's `excel-tab` dialect write (a caption
///   holding a tab, a newline or a quote is quoted); a TSV written without quoting reads the same unless a field
///   *begins* with a quote.
/// - **Lines** (text lists, JSONL): a record is a line, ended by LF; no fields, no quotes (a trailing CR is the
///   reader's to drop).
///
/// A UTF-8 byte order mark at the very start is skipped.
///
/// Memory is flat whatever a record holds: at most ``recordLimit`` bytes of a record are kept. A longer record is read
/// to its end without being kept (``isOverLimit``) and is its reader's bad row. A quoted field cannot be skipped that
/// way, because only its closing quote ends it: a quoted field longer than ``recordLimit``, or still open at the end of
/// the table, throws ``TableError/openQuote(table:line:lastLine:limit:)`` naming the line where it opened (almost always
/// a quote left open, which would otherwise swallow every row after it).
///
/// Why not CSV.swift (yaslab/CSV.swift 2.5.2): it decodes the stream through a
/// `UnicodeCodec` before splitting, and a byte that is not UTF-8 ends its decoding as if the file ended there: the
/// field is cut at the byte, its row ends, and the rest of the field comes back as a row of its own, so every later
/// row's key moved by one (a cp1252 `é` in a quoted caption: 4 rows read as 7). A quote left open reads to the end of
/// the file as one field, with no error (300 rows read as 1, held whole in memory); a field or line of any length is
/// held whole; text after a closing quote loses its first character and leaves the field open (`"Best" cat` swallowed
/// the rest of the table into `Best"cat…`); and it reports neither line numbers nor a size bound. Feeding it records
/// already split would have left it nothing to do but split on the delimiter: the scanning is the parser.
final class RecordScanner {
    /// How records and fields are told apart.
    enum Syntax: Equatable {
        /// One record per line, ended by LF; one field.
        case lines
        /// Fields split by `delimiter`, RFC 4180 quoting, records ended by LF, CRLF or CR outside quotes.
        case delimited(UInt8)
    }

    let syntax: Syntax
    /// The most bytes of one record kept, and the longest quoted field read.
    let recordLimit: Int
    /// The table's name in errors (its path, or "standard input").
    let table: String

    private let chunks: ByteChunks
    private var chunk: [UInt8] = []
    private var offset = 0
    private var started = false
    /// The line of the next byte, from 1.
    private var line = 1
    /// A record just ended at a CR: an LF right after it is part of the same line end.
    private var skipsLF = false

    /// The current record's bytes, fields one after another (empty when it is over the limit).
    private var bytes: [UInt8] = []
    /// Where each field of the current record ends in ``bytes``.
    private var fieldEnds: [Int] = []
    /// The line the current record starts on.
    private(set) var recordLine = 0
    /// Whether the current record is longer than ``recordLimit`` (and so not kept).
    private(set) var isOverLimit = false
    /// The most bytes a record ever held at once (the buffer's capacity): the reader's memory, whatever a line holds.
    private(set) var peakHeldBytes = 0

    private static let lf = UInt8(ascii: "\n")
    private static let cr = UInt8(ascii: "\r")
    private static let quote = UInt8(ascii: "\"")

    init(_ chunks: ByteChunks, syntax: Syntax, recordLimit: Int, table: String) {
        self.chunks = chunks
        self.syntax = syntax
        self.recordLimit = recordLimit
        self.table = table
    }

    /// The current record's number of fields (0 when it is over the limit).
    var fieldCount: Int { fieldEnds.count }

    /// The bytes of the current record's field at `index` (`0..<fieldCount`).
    func field(_ index: Int) -> ArraySlice<UInt8> {
        bytes[(index == 0 ? 0 : fieldEnds[index - 1])..<fieldEnds[index]]
    }

    /// Reads the next record.
    /// - Returns: `false` at the end of the table.
    /// - Throws: ``TableError/openQuote(table:line:lastLine:limit:)`` for a quoted field that never closes, or runs past
    ///   ``recordLimit``; ``TableError/unreadable(_:)`` when reading fails.
    func next() throws(TableError) -> Bool {
        if !started { try start() }
        bytes.removeAll(keepingCapacity: true)
        fieldEnds.removeAll(keepingCapacity: true)
        isOverLimit = false
        recordLine = line
        switch syntax {
        case .lines: return try nextLine()
        case let .delimited(delimiter): return try nextRecord(delimiter: delimiter)
        }
    }

    /// Reads the first bytes and skips a UTF-8 byte order mark.
    private func start() throws(TableError) {
        started = true
        while chunk.count < 3, let more = try chunks.next() { chunk += more }
        if chunk.starts(with: [0xEF, 0xBB, 0xBF]) { offset = 3 }
    }

    /// Makes bytes available at ``offset``; `false` at the end of the table.
    private func refill() throws(TableError) -> Bool {
        while offset >= chunk.count {
            guard let more = try chunks.next() else { return false }
            (chunk, offset) = (more, 0)
        }
        return true
    }

    private func nextLine() throws(TableError) -> Bool {
        var sawAny = false
        while try refill() {
            sawAny = true
            let (end, found) = chunk.withUnsafeBufferPointer { buffer in
                let start = buffer.baseAddress! + offset
                guard let hit = memchr(start, Int32(Self.lf), buffer.count - offset) else { return (buffer.count, false) }
                return (UnsafeRawPointer(buffer.baseAddress!).distance(to: hit), true)
            }
            keep(offset..<end)
            offset = found ? end + 1 : end
            if found {
                line += 1
                endField()
                return true
            }
        }
        guard sawAny else { return false }
        endField()
        return true
    }

    private enum State { case fieldStart, unquoted, quoted, afterQuote }

    private func nextRecord(delimiter: UInt8) throws(TableError) -> Bool {
        var state = State.fieldStart
        var sawAny = false
        var quoteLine = 0
        var quotedLength = 0
        var endedOnNewline = false
        while try refill() {
            if skipsLF {
                skipsLF = false
                if chunk[offset] == Self.lf {
                    offset += 1
                    continue
                }
            }
            sawAny = true
            switch state {
            case .fieldStart:
                if chunk[offset] == Self.quote {
                    state = .quoted
                    quoteLine = line
                    quotedLength = 0
                    endedOnNewline = false
                    offset += 1
                } else {
                    state = .unquoted
                }
            case .unquoted:
                let end = chunk.withUnsafeBufferPointer { buffer in
                    var index = offset
                    while index < buffer.count {
                        let byte = buffer[index]
                        if byte == delimiter || byte == Self.lf || byte == Self.cr { break }
                        index += 1
                    }
                    return index
                }
                keep(offset..<end)
                offset = end
                guard end < chunk.count else { continue }
                let byte = chunk[end]
                offset += 1
                endField()
                if byte == delimiter {
                    state = .fieldStart
                } else {
                    line += 1
                    skipsLF = byte == Self.cr
                    return true
                }
            case .quoted:
                let (end, newlines) = chunk.withUnsafeBufferPointer { buffer in
                    var index = offset
                    var newlines = 0
                    while index < buffer.count {
                        let byte = buffer[index]
                        if byte == Self.quote { break }
                        if byte == Self.lf { newlines += 1 }
                        index += 1
                    }
                    return (index, newlines)
                }
                if end > offset { endedOnNewline = chunk[end - 1] == Self.lf }
                line += newlines
                quotedLength += end - offset
                if quotedLength > recordLimit {
                    throw .openQuote(table: table, line: quoteLine, lastLine: line, limit: recordLimit)
                }
                keep(offset..<end)
                offset = end
                if end < chunk.count {
                    offset += 1
                    state = .afterQuote
                }
            case .afterQuote:
                if chunk[offset] == Self.quote {
                    // A doubled quote: one quote in the field, which stays open.
                    keep(offset..<(offset + 1))
                    quotedLength += 1
                    endedOnNewline = false
                    offset += 1
                    state = .quoted
                } else {
                    // The closing quote: what follows up to the delimiter or the line end is kept as it stands.
                    state = .unquoted
                }
            }
        }
        if state == .quoted {
            throw .openQuote(table: table, line: quoteLine, lastLine: endedOnNewline ? line - 1 : line, limit: nil)
        }
        guard sawAny else { return false }
        endField()
        return true
    }

    /// Keeps `range` of the current chunk as part of the current field, unless the record is over the limit.
    private func keep(_ range: Range<Int>) {
        guard !isOverLimit, !range.isEmpty else { return }
        let needed = bytes.count + range.count
        guard needed <= recordLimit else {
            // Over the limit: forget what was kept (the record is a bad row) and keep nothing more of it.
            isOverLimit = true
            bytes.removeAll(keepingCapacity: true)
            fieldEnds.removeAll(keepingCapacity: true)
            return
        }
        if needed > bytes.capacity {
            // Grown by hand so that the buffer never passes the limit (an array doubles past it).
            bytes.reserveCapacity(min(recordLimit, max(needed, bytes.capacity * 2)))
            peakHeldBytes = max(peakHeldBytes, bytes.capacity)
        }
        bytes.append(contentsOf: chunk[range])
    }

    private func endField() {
        if !isOverLimit { fieldEnds.append(bytes.count) }
    }
}
