import Foundation
@testable import MirrorCore
import MirrorImages
@testable import MirrorModel
@testable import MirrorStorage
import MirrorTestSupport

/// What the output folder's suites share: images published into a folder through its sink, one batch each, and
/// looks at the files they leave.
protocol PublishingToFolders {}

extension PublishingToFolders {
    /// `data` as a verified download in a temporary file of `folder`.
    func verified(_ data: Data, in folder: URL, url: String) throws -> VerifiedImage {
        let temporary = try AtomicFile.makeTemporary(in: folder)
        _ = data.withUnsafeBytes { write(temporary.descriptor, $0.baseAddress, $0.count) }
        close(temporary.descriptor)
        return VerifiedImage(
            url: URL(string: url)!, effectiveURL: URL(string: url)!, temporaryFile: temporary.url, info: try ImageValidator().validate(data),
            bytes: Int64(data.count), sha256: sha256Hex(data), source: .none, attempts: 1, fetchedAt: Date()
        )
    }

    /// Opens the folder again once the lock the last opening released is free: a test beside this one that starts a
    /// process shares the lock's descriptor with it between its fork and its exec (`O_CLOEXEC` closes it only then).
    func reopen(_ directory: TemporaryFolder) async throws -> OutputFolder {
        var opened: OutputFolder?
        var failure: (any Error)?
        _ = await eventually {
            do {
                opened = try OutputFolder(directory: directory.url)
            } catch let error as FolderLock.Held {
                failure = error
                return false
            } catch {
                failure = error
            }
            return true
        }
        if let opened { return opened }
        throw failure ?? FileError(operation: "open", path: directory.path, code: EIO)
    }

    /// Publishes images `seeds` (4×4 PNGs from `http://x/<seed>.png`) one at a time, each its own batch, into the folder
    /// opened anew, and returns their outcomes.
    func publish(_ seeds: Range<Int>, into directory: TemporaryFolder, layout: FolderLayout = FolderLayout(), label: String? = nil) async throws -> [Publication] {
        let folder = try await reopen(directory)
        defer { folder.releaseLock() }
        let sink = try FolderSink(folder: folder, label: label.map { ($0, $0) }, layout: layout)
        var outcomes: [Publication] = []
        for seed in seeds {
            let image = try verified(TestImages.png(width: 4, height: 4, seed: UInt64(seed)), in: directory.url, url: "http://x/\(seed).png")
            let outcome = await withCheckedContinuation { continuation in
                sink.publish(image, stem: "\(seed)", provenance: ImageProvenance()) { continuation.resume(returning: $0) }
            }
            outcomes.append(outcome)
        }
        await sink.drain()
        return outcomes
    }

    /// The files the outcomes saved, in order.
    func files(_ outcomes: [Publication]) -> [String] {
        outcomes.compactMap { if case let .success(.saved(record, _)) = $0 { record.file } else { nil } }
    }

    /// The file's bytes, or `nil` if there is none.
    func bytes(_ url: URL) -> Data? { FileManager.default.contents(atPath: url.path) }

    /// Whether `url` is a regular file (not a link, not missing).
    func isRegularFile(_ url: URL) -> Bool {
        var info = stat()
        return lstat(url.path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFREG
    }
}
