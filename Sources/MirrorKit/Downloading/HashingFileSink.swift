import Crypto
import Foundation
import MirrorImages
import MirrorTransport

/// Writes a body to a temporary file while hashing it, and stops early when the first bytes are
/// plainly not an image (an HTML error page served as `image/jpeg`), so no bandwidth is spent on it.
///
/// Used only on the driver thread while the transfer runs, and read by the completion that follows
/// it; the transfer's completion orders those accesses, which is what makes `@unchecked Sendable` true.
final class HashingFileSink: TransferSink, @unchecked Sendable {
    /// Bytes looked at before deciding that a body is not an image.
    static let sniffLength = 64

    private let descriptor: Int32
    private var hasher = SHA256()
    private var head = Data()
    private var decided = false
    private(set) var written: Int64 = 0
    /// Set when the body was refused from its first bytes.
    private(set) var earlyRejection: ImageRejection?
    /// Set when writing the body to the temporary file failed (the disk is full, the file size limit, …).
    private(set) var writeError: FileError?

    /// Where the file is, for messages.
    private let folder: String

    init(descriptor: Int32, folder: String = "a folder") {
        self.descriptor = descriptor
        self.folder = folder
    }

    func write(_ chunk: UnsafeRawBufferPointer) throws {
        if !decided {
            head.append(contentsOf: chunk.prefix(Self.sniffLength - head.count))
            if head.count >= Self.sniffLength {
                decided = true
                if ImageValidator.sniff(head) == nil {
                    let rejection = Self.rejection(for: head)
                    earlyRejection = rejection
                    throw rejection
                }
            }
        }
        hasher.update(bufferPointer: chunk)
        do {
            try AtomicFile.writeAll(chunk, to: descriptor, operation: "write an image into", path: folder)
        } catch {
            writeError = error
            throw error
        }
        written += Int64(chunk.count)
    }

    /// The SHA-256 of everything written, lowercase hex.
    func digest() -> String {
        hasher.finalize().hexString
    }

    private static func rejection(for head: Data) -> ImageRejection {
        do {
            _ = try ImageValidator().validate(head)
            return .unknownFormat(prefix: "")
        } catch {
            return error
        }
    }
}
