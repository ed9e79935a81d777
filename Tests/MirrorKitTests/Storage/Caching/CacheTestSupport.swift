import Foundation
import MirrorTestSupport

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Runs `body` with a fresh, empty directory named by a UUID under the system's temporary directory,
/// and removes the directory afterwards, whatever happened.
func withCacheTestDirectory<T>(_ body: (URL) throws -> T) throws -> T {
    let folder = TemporaryFolder()
    return try withExtendedLifetime(folder) { try body(folder.url) }
}

/// The async variant of ``withCacheTestDirectory(_:)``.
func withCacheTestDirectory<T>(_ body: (URL) async throws -> T) async throws -> T {
    let folder = TemporaryFolder()
    defer { withExtendedLifetime(folder) {} }
    return try await body(folder.url)
}

/// A clock that stands still until a test moves it.
///
/// `@unchecked Sendable`: `date` is only read and written while holding `lock`.
final class CacheTestClock: @unchecked Sendable {
    private let lock = NSLock()
    private var date: Date

    init(_ date: Date = Date(timeIntervalSince1970: 1_900_000_000)) {
        self.date = date
    }

    /// The current time on this clock.
    func now() -> Date {
        lock.withLock { date }
    }

    /// Moves the clock forward.
    func advance(by seconds: TimeInterval) {
        lock.withLock { date.addTimeInterval(seconds) }
    }
}

/// File helpers for the cache tests, namespaced so they cannot clash with other suites' helpers.
enum CacheFixture {
    /// Writes `bytes` to a new file `name` in `directory` and returns its URL.
    @discardableResult
    static func writeFile(_ bytes: Data, named name: String, in directory: URL) throws -> URL {
        let url = directory.appendingPathComponent(name)
        try bytes.write(to: url)
        return url
    }

    /// `count` bytes of a repeating pattern that starts at `seed`, so different seeds give different bodies.
    static func bytes(_ count: Int, seed: UInt8 = 0) -> Data {
        Data((0..<count).map { UInt8(truncatingIfNeeded: $0 &+ Int(seed) &* 31) })
    }

    /// The inode number of the file at `url`, from `stat(2)`.
    static func inode(of url: URL) -> UInt64? {
        var info = stat()
        guard stat(url.path, &info) == 0 else {
            return nil
        }
        return UInt64(info.st_ino)
    }

    /// The modification date of the file at `url`.
    static func modificationDate(of url: URL) -> Date? {
        (try? FileManager.default.attributesOfItem(atPath: url.path))?[.modificationDate] as? Date
    }

    /// Sets the modification date of the file at `url`.
    static func setModificationDate(_ date: Date, of url: URL) throws {
        try FileManager.default.setAttributes([.modificationDate: date], ofItemAtPath: url.path)
    }

    /// Every regular file under `directory`, as paths relative to it, sorted.
    static func files(under directory: URL) -> [String] {
        guard let enumerator = FileManager.default.enumerator(atPath: directory.path) else {
            return []
        }
        var files: [String] = []
        while let path = enumerator.nextObject() as? String {
            var isDirectory: ObjCBool = false
            let fullPath = directory.appendingPathComponent(path).path
            if FileManager.default.fileExists(atPath: fullPath, isDirectory: &isDirectory), !isDirectory.boolValue {
                files.append(path)
            }
        }
        return files.sorted()
    }
}
