import Foundation
import MirrorCore

extension DiskCache {
    /// The first 8 bytes of every page file; a file without them is corrupt.
    static let pageMagic = Data("mirrorP1".utf8)

    /// Magic plus the expiry time in milliseconds since 1970 as a little-endian `Int64`.
    static let pageHeaderSize = 16

    /// Stores an API response for `key`, to be returned by ``page(for:)`` until `ttl` has passed.
    ///
    /// The file is `pages/<CacheKey.fileName>`: a 16-byte header (magic, expiry time) and then `data`,
    /// written to a temporary file in `tmp/` and renamed into place, through ``AtomicFile``.
    ///
    /// - Parameters:
    ///   - data: The response body.
    ///   - key: The key; usually made from the request URL, whose secrets the key drops.
    ///   - ttl: How long the page stays valid, from now.
    /// - Throws: ``DiskCacheError/fileSystem(_:)`` if the file cannot be written.
    public func storePage(_ data: Data, for key: CacheKey, ttl: Duration) throws(DiskCacheError) {
        let expiresAt = now().addingTimeInterval(ttl.seconds)
        var file = Self.pageMagic
        let milliseconds = Int64((expiresAt.timeIntervalSince1970 * 1000).rounded(.up))
        withUnsafeBytes(of: milliseconds.littleEndian) { file.append(contentsOf: $0) }
        file.append(data)
        do throws(FileError) {
            try replaceFile(file, at: pageURL(for: key))
        } catch {
            throw .fileSystem(error)
        }
    }

    /// The page stored for `key`, or `nil` if there is none or it has expired. An expired or corrupt page
    /// file is removed.
    public func page(for key: CacheKey) -> Data? {
        pageWithExpiry(for: key)?.data
    }

    /// The page stored for `key` with its expiry date; see ``page(for:)``.
    func pageWithExpiry(for key: CacheKey) -> (data: Data, expiresAt: Date)? {
        let file = pageURL(for: key)
        guard let contents = try? Data(contentsOf: file) else {
            return nil
        }
        guard let expiresAt = Self.pageExpiry(of: contents), now() < expiresAt else {
            CacheFileSystem.removeFile(file)
            return nil
        }
        // Rebased copy, so callers can index it from 0.
        return (Data(contents.dropFirst(Self.pageHeaderSize)), expiresAt)
    }

    /// The expiry date in a page file's header, or `nil` if the header is missing or damaged.
    static func pageExpiry(of contents: Data) -> Date? {
        guard contents.count >= pageHeaderSize, contents.prefix(pageMagic.count).elementsEqual(pageMagic) else {
            return nil
        }
        var milliseconds: Int64 = 0
        for (shift, byte) in contents.dropFirst(pageMagic.count).prefix(8).enumerated() {
            milliseconds |= Int64(byte) << (8 * shift)
        }
        return Date(timeIntervalSince1970: Double(milliseconds) / 1000)
    }

    /// Reads just the header of the page file at `url`.
    static func pageExpiry(ofFileAt url: URL) -> Date? {
        guard let handle = try? FileHandle(forReadingFrom: url) else {
            return nil
        }
        defer { try? handle.close() }
        return (try? handle.read(upToCount: pageHeaderSize)).flatMap { pageExpiry(of: $0) }
    }
}
