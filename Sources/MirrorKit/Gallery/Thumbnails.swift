import Foundation
import MirrorSync
import MirrorCore
import MirrorFetch
import MirrorImages
import MirrorStorage

/// 256-pixel JPEG thumbnails of a collection's images, made with libvips once and kept in `.mirror/thumbs/`, named by
/// the image's SHA-256 (so an image saved twice has one thumbnail, and a changed file gets a new one).
public struct Thumbnails: Sendable {
    public let directory: URL
    public var size = 256
    private let transform: ImageTransform

    public init(root: URL, size: Int = 256) {
        directory = root.appendingPathComponent(".mirror/thumbs", isDirectory: true)
        self.size = size
        transform = ImageTransform(fit: .longerSide, size: size, onlyIfBigger: true, encoding: .jpeg, quality: 80)
    }

    /// The thumbnail's file name for an item.
    public func name(for item: SavedImages.Item) -> String { item.record.sha256 + ".jpg" }

    /// What making the thumbnails did.
    public struct Report: Sendable, Hashable {
        public var made = 0
        public var existing = 0
        /// Images libvips could not read (the gallery shows their tile without a picture).
        public var failed = 0
    }

    /// Makes the thumbnails that do not exist yet, on every core.
    public func make(for items: [SavedImages.Item]) throws -> Report {
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        } catch {
            throw FileError(operation: "create", path: directory.path, code: EACCES)
        }
        let existing = Set((try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? [])
        var wanted: [String: SavedImages.Item] = [:]
        var report = Report()
        for item in items {
            let name = name(for: item)
            if existing.contains(name) { report.existing += 1 } else if wanted[name] == nil { wanted[name] = item }
        }
        // Files one by one; a shard's members in one pass over its tar.
        var fileList: [(String, URL)] = []
        var tars: [URL: [String: String]] = [:]  // tar → member → thumbnail name
        for (name, item) in wanted {
            switch item.location {
            case let .file(url): fileList.append((name, url))
            case let .tarMember(tar, member): tars[tar, default: [:]][member] = name
            }
        }
        let files = fileList
        let tarList = Array(tars)
        let counts = Locked((made: 0, failed: 0))
        let next = Locked(0)
        let jobs = files.count + tarList.count
        DispatchQueue.concurrentPerform(iterations: max(1, min(jobs, ProcessInfo.processInfo.activeProcessorCount))) { _ in
            while true {
                let index = next.withLock { value -> Int in
                    defer { value += 1 }
                    return value
                }
                guard index < jobs else { return }
                if index < files.count {
                    let (name, url) = files[index]
                    let ok = (try? Data(contentsOf: url)).map { write($0, as: name) } ?? false
                    counts.withLock { ok ? ($0.made += 1) : ($0.failed += 1) }
                } else {
                    let (tar, members) = tarList[index - files.count]
                    var left = members
                    try? TarReader.forEachFile(in: tar) { member, contents in
                        if let name = left.removeValue(forKey: member) {
                            let ok = write(contents, as: name)
                            counts.withLock { ok ? ($0.made += 1) : ($0.failed += 1) }
                        }
                        return !left.isEmpty
                    }
                    counts.withLock { $0.failed += left.count }
                }
            }
        }
        let (made, failed) = counts.withLock { $0 }
        report.made = made
        report.failed = failed
        return report
    }

    private func write(_ image: Data, as name: String) -> Bool {
        guard let format = ImageValidator.sniff(image), let thumbnail = try? transform.transform(image, format: format) else { return false }
        return (try? AtomicFile.writeFile(thumbnail, to: directory.appendingPathComponent(name), sync: false)) != nil
    }
}
