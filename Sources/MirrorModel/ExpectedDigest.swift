import Foundation

/// What a row says the served bytes hash to (`--verify-hash COLUMN`, `--hash sha256|md5`): img2dataset's
/// `verify_hash`. The bytes are hashed as they arrive (SHA-256 always, MD5 only when asked for); a verified image
/// whose digest differs fails its row, ``DownloadError/hashMismatch(expected:served:)``, for good.
public struct ExpectedDigest: Sendable, Hashable {
    /// A hash a table may give.
    public enum Algorithm: String, Sendable, Hashable, CaseIterable {
        case sha256, md5

        /// Hex digits of a digest.
        public var hexLength: Int {
            switch self {
            case .sha256: 64
            case .md5: 32
            }
        }
    }

    public var algorithm: Algorithm
    /// The digest the row gives, lowercase, surrounding space trimmed.
    public var hex: String

    /// The digest a row's `value` gives, or `nil` when it is empty (not checked). Case is ignored and surrounding space
    /// trimmed; a value that is not hex of the algorithm's length is kept as given and matches no bytes.
    public init?(algorithm: Algorithm, value: String) {
        let trimmed = value.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !trimmed.isEmpty else { return nil }
        self.algorithm = algorithm
        hex = trimmed.lowercased()
    }

    /// Whether `hex` (lowercase) is this digest.
    public func matches(_ hex: String) -> Bool { self.hex == hex }
}
