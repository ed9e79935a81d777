import Foundation
import MirrorSync
import MirrorCore

/// The images being decoded right now, kept in the output's state folder, so that a run a decoder kills names them to
/// the next: a poison image costs a run once, never every rerun.
///
/// Every byte from the web is hostile and the decoders are C (TurboJPEG, libpng, libwebp, giflib, libvips and its
/// dozens of libraries): whatever is checked first, a crafted image may still crash the process, and then every rerun
/// of the job would download it again and crash again. So before an image is decoded, its URL is written to a slot of
/// `decoding` in the state folder, and the slot is cleared when the decode returns. The decoding thread arms a crash
/// mark on its slot (`mirror_codecs_arm_crash_mark`): if it dies of a fault or an abort inside the decode, its slot is
/// flagged as the culprit's on the way down. A run that opens the journal and finds slots still written knows that
/// the run before it died while decoding them, and moves them to `decoder-crashes` (a line each: `culprit`, `alone` or
/// `shared`, and the URL; `cat` shows them):
///
/// - **the culprit** (its own thread crashed inside the decode) is filed as failed, `decoder-crash` and permanent, and
///   never decoded again: one crash, one lost run;
/// - an image decoded **alone** (no other decode in flight from its start to the death) or **beside others**, with no
///   culprit named (the process was killed from outside — SIGKILL, the OOM killer, a preempted job — or died where no
///   handler could run, as in a stack overflow), is a suspect: it is decoded alone when it comes again (taking the
///   whole ``DecodeBudget``), and saved if nothing happens; one that was alone at two deaths is taken as the cause.
///
/// The cost is two `pwrite`s per decoded image (three when another decode is in flight alone): no fsync, as a process
/// that dies leaves its writes in the page cache (power loss is not a decoder crash, and loses only the mark).
///
/// Thread safety: every method may be called from any thread; slots are taken under a lock and written with `pwrite`
/// at their own offsets.
public final class DecodeJournal: Sendable {
    /// What to do with an image about to be decoded.
    public enum Verdict: Sendable, Equatable {
        /// Decode it as usual.
        case decode
        /// A run died while it was being decoded, with no decoder named the cause: decode it with nothing else at the
        /// same time.
        case decodeAlone
        /// A decoder crashed on it (or a run died twice while it was being decoded alone): do not decode it.
        case crashed
    }

    /// A slot in use, to hand back to ``end(_:)``.
    public struct Mark: Sendable {
        fileprivate let slot: Int
    }

    /// The file of slots, and the file of crashes found.
    public let decodingURL: URL
    public let crashesURL: URL
    /// Leftover marks found when the journal was opened: the images of a run that died while decoding them.
    public let foundOnOpen: Int

    private static let slotSize = 4096
    private static let headerSize = 8
    private static let magic: [UInt8] = Array("MDEC".utf8)

    private let descriptor: Int32
    /// The URLs runs died decoding, and how.
    private let crashes: [String: Deaths]

    /// How the runs that died while an image was being decoded had it.
    private struct Deaths {
        var asCulprit = 0, alone = 0, beside = 0
    }

    /// How a slot's image was decoded: beside others, alone, or the thread that crashed (the crash handler writes the
    /// culprit byte, the one after the flag, so that a decode beginning elsewhere while the process is dying cannot
    /// overwrite it).
    private enum Flag: UInt8 {
        case beside = 0, alone = 1, culprit = 2
        var word: String {
            switch self {
            case .beside: "shared"
            case .alone: "alone"
            case .culprit: "culprit"
            }
        }
    }
    private let slots = Locked<Slots>(Slots())

    private struct Slots {
        var free: [Int] = []
        var next = 0
        /// The slots written now, and whether each is still the only decode since it began.
        var active: [Int: Bool] = [:]
    }

    /// Opens (or creates) the journal in `directory`, moving any marks a dead run left to the list of crashes.
    /// - Throws: ``FileError`` when the state folder cannot be written.
    public init(directory: URL) throws(FileError) {
        decodingURL = directory.appendingPathComponent("decoding")
        crashesURL = directory.appendingPathComponent("decoder-crashes")
        let descriptor = open(decodingURL.path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o644)
        guard descriptor >= 0 else { throw FileError(operation: "open", path: decodingURL.path, code: errno) }
        do throws(FileError) {
            let leftovers = try Self.readMarks(descriptor, path: decodingURL.path)
            if !leftovers.isEmpty {
                let lines = leftovers.map { "\($0.flag.word)\t\($0.key)\n" }.joined()
                try Self.append(Data(lines.utf8), to: crashesURL)
                guard ftruncate(descriptor, 0) == 0 else { throw FileError(operation: "write", path: decodingURL.path, code: errno) }
            }
            foundOnOpen = leftovers.count
            crashes = Self.readCrashes(crashesURL)
        } catch {
            close(descriptor)
            throw error
        }
        self.descriptor = descriptor
    }

    deinit {
        close(descriptor)
    }

    /// Whether any image is to be decoded alone or not at all (when none is, ``verdict(for:)`` costs nothing).
    public var isEmpty: Bool { crashes.isEmpty }

    /// What to do with the image at `url`.
    public func verdict(for url: URL) -> Verdict {
        guard !crashes.isEmpty, let deaths = crashes[Self.key(url)] else { return .decode }
        return deaths.asCulprit > 0 || deaths.alone >= 2 ? .crashed : .decodeAlone
    }

    /// Where the crash handler writes a mark's culprit flag, and the byte it writes (`mirror_codecs_arm_crash_mark`).
    package func culpritFlag(of mark: Mark) -> (descriptor: Int32, offset: Int, byte: UInt8) {
        (descriptor, mark.slot * Self.slotSize + 5, 1)
    }

    /// Marks the image at `url` as being decoded: alone when no other decode is in flight, and until another begins
    /// (which makes every mark in flight, its own too, one decoded beside others).
    public func begin(_ url: URL) -> Mark {
        let key = Array(Self.key(url).utf8)
        return slots.withLock { slots -> Mark in
            let alone = slots.active.isEmpty
            for (slot, wasAlone) in slots.active where wasAlone {
                slots.active[slot] = false
                write([Flag.beside.rawValue], at: slot * Self.slotSize + 4)
            }
            let slot: Int
            if let free = slots.free.popLast() {
                slot = free
            } else {
                slot = slots.next
                slots.next += 1
            }
            slots.active[slot] = alone
            let flag = alone ? Flag.alone : Flag.beside
            write(Self.magic + [flag.rawValue, 0, UInt8(key.count >> 8), UInt8(key.count & 0xFF)] + key, at: slot * Self.slotSize)
            return Mark(slot: slot)
        }
    }

    /// Clears the mark: the decode returned.
    public func end(_ mark: Mark) {
        slots.withLock { slots in
            write([0, 0, 0, 0], at: mark.slot * Self.slotSize)
            slots.active[mark.slot] = nil
            slots.free.append(mark.slot)
        }
    }

    /// Best effort: a journal that cannot be written costs only the protection, never the image. (Under the slots'
    /// lock: a `pwrite` to the page cache takes about a microsecond.)
    private func write(_ bytes: [UInt8], at offset: Int) {
        _ = bytes.withUnsafeBytes { pwrite(descriptor, $0.baseAddress, $0.count, off_t(offset)) }
    }

    /// How an image is named in the journal: its normalised URL, or (past what a slot holds, or holding a line break)
    /// `sha256:` and that URL's hash.
    static func key(_ url: URL) -> String {
        let normalized = CacheKey(url: url).normalizedURL
        if normalized.utf8.count <= slotSize - headerSize, !normalized.utf8.contains(where: { $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }) {
            return normalized
        }
        return "sha256:" + sha256Hex(normalized)
    }

    /// The marks in the file of slots: those whose magic is still written.
    private static func readMarks(_ descriptor: Int32, path: String) throws(FileError) -> [(key: String, flag: Flag)] {
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { throw FileError(operation: "read", path: path, code: errno) }
        guard status.st_size > 0 else { return [] }
        var bytes = [UInt8](repeating: 0, count: Int(status.st_size))
        let read = bytes.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, $0.count, 0) }
        guard read >= 0 else { throw FileError(operation: "read", path: path, code: errno) }
        var marks: [(key: String, flag: Flag)] = []
        var offset = 0
        while offset + headerSize <= read {
            defer { offset += slotSize }
            guard Array(bytes[offset..<offset + 4]) == magic else { continue }
            let length = Int(bytes[offset + 6]) << 8 | Int(bytes[offset + 7])
            guard offset + headerSize + length <= read else { continue }
            let key = String(decoding: bytes[offset + headerSize..<offset + headerSize + length], as: UTF8.self)
            marks.append((key, bytes[offset + 5] == 1 ? .culprit : Flag(rawValue: bytes[offset + 4]) ?? .beside))
        }
        return marks
    }

    /// The deaths recorded so far, by URL.
    private static func readCrashes(_ url: URL) -> [String: Deaths] {
        guard let text = try? String(contentsOf: url, encoding: .utf8) else { return [:] }
        var crashes: [String: Deaths] = [:]
        for line in text.split(separator: "\n") {
            let parts = line.split(separator: "\t", maxSplits: 1)
            guard parts.count == 2 else { continue }
            switch parts[0] {
            case "culprit": crashes[String(parts[1]), default: Deaths()].asCulprit += 1
            case "alone": crashes[String(parts[1]), default: Deaths()].alone += 1
            default: crashes[String(parts[1]), default: Deaths()].beside += 1
            }
        }
        return crashes
    }

    private static func append(_ data: Data, to url: URL) throws(FileError) {
        let descriptor = open(url.path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o644)
        guard descriptor >= 0 else { throw FileError(operation: "open", path: url.path, code: errno) }
        defer { close(descriptor) }
        try AtomicFile.writeAll(data, to: descriptor, path: url.path)
        guard fsync(descriptor) == 0 else { throw FileError(operation: "sync", path: url.path, code: errno) }
    }
}
