import Crypto
import Foundation

/// The SHA-256 digest of `data`, as 64 lowercase hex digits.
///
/// Used for content addresses and cache file names. On Linux there is no CryptoKit, so this uses
/// swift-crypto's `SHA256`, which has the same API.
package func sha256Hex(_ data: Data) -> String {
    SHA256.hash(data: data).hexString
}

/// The SHA-256 digest of a string's UTF-8 bytes, as 64 lowercase hex digits.
package func sha256Hex(_ string: String) -> String {
    sha256Hex(Data(string.utf8))
}

/// The SHA-256 digest of the file at `url`, as 64 lowercase hex digits.
///
/// Reads the file in 1 MiB chunks, so memory use stays flat however large the file is.
///
/// - Parameter url: A `file:` URL of a regular file.
/// - Returns: The hex digest of the file's bytes.
/// - Throws: The `FileHandle` error when the file cannot be opened or read.
package func sha256Hex(fileAt url: URL) throws -> String {
    try digestHex(of: url, SHA256())
}

/// The MD5 digest of the file at `url`, as 32 lowercase hex digits, read as ``sha256Hex(fileAt:)`` reads it (a row's
/// `--verify-hash` with `--hash md5`, for a download the disk cache had).
package func md5Hex(fileAt url: URL) throws -> String {
    try digestHex(of: url, Insecure.MD5())
}

private func digestHex(of url: URL, _ function: some HashFunction) throws -> String {
    let handle = try FileHandle(forReadingFrom: url)
    defer { try? handle.close() }
    var hasher = function
    let chunkSize = 1 << 20
    while let chunk = try handle.read(upToCount: chunkSize), !chunk.isEmpty {
        hasher.update(data: chunk)
    }
    return hasher.finalize().hexString
}

extension Sequence<UInt8> {
    /// The bytes as lowercase hex, two digits each.
    package var hexString: String {
        let digits: StaticString = "0123456789abcdef"
        let bytes = Array(self)
        return String(unsafeUninitializedCapacity: bytes.count * 2) { out in
            digits.withUTF8Buffer { digits in
                for (index, byte) in bytes.enumerated() {
                    out[2 * index] = digits[Int(byte >> 4)]
                    out[2 * index + 1] = digits[Int(byte & 0x0F)]
                }
            }
            return bytes.count * 2
        }
    }
}

/// A 128-bit fingerprint of a string: two SipHash values (the process's random key, two different salts).
package struct Fingerprint: Hashable {
    package let high: Int
    package let low: Int

    package init(_ text: String) {
        var first = Hasher()
        first.combine(0x6D69_7272_6F72_0001 as UInt64)
        first.combine(text)
        var second = Hasher()
        second.combine(0x6D69_7272_6F72_0002 as UInt64)
        second.combine(text)
        high = first.finalize()
        low = second.finalize()
    }

    private init(high: Int, low: Int) {
        self.high = high
        self.low = low
    }

    /// This fingerprint moved into a namespace: distinct namespaces map one text to unrelated keys, so several kinds
    /// of key can share one table.
    package func namespaced(_ namespace: UInt8) -> Fingerprint {
        Fingerprint(high: high ^ Int(bitPattern: UInt(namespace) &* 0x9E37_79B9_7F4A_7C15), low: low)
    }
}
