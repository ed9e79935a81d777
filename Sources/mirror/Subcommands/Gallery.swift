import ArgumentParser
import Foundation
import MirrorKit

/// `mirror gallery DIR`: a static contact sheet of what a folder (or its shards) holds, and its attribution.
struct Gallery: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Write DIR/gallery/index.html (thumbnails, titles, creators, licences, filters) and DIR/ATTRIBUTION.md.",
        discussion: """
        Reads a folder, labelled subfolders (--queries), WebDataset shards or a sharded job's shard-I-of-N folders. \
        Thumbnails (256 px, libvips) are made once and kept in DIR/.mirror/thumbs/. The page opens from file:// \
        with no server and no network request; it is paged (--page-size) so a folder of 100,000 images opens at once.

        Exit codes: 0 written · 1 the folder cannot be read or written · 64 usage.
        """
    )

    @Argument(help: "The output folder.")
    var directory: String

    @Option(help: "Tiles per page.")
    var pageSize = 500

    func validate() throws {
        guard pageSize >= 1 else { throw ValidationError("--page-size must be at least 1") }
    }

    func run() throws {
        do {
            let line = try Self.write(URL(fileURLWithPath: directory), pageSize: pageSize)
            FileHandle.standardError.write(Data((line + "\n").utf8))
        } catch {
            let (message, status) = describe(error)
            printError(message)
            throw status.exitCode
        }
    }

    /// Writes the gallery and the attribution; returns the line that says what was written.
    static func write(_ root: URL, pageSize: Int = 500) throws -> String {
        let started = ContinuousClock.now
        let collection = try SavedImages(root: root)
        let thumbnails = Thumbnails(root: root)
        let report = try thumbnails.make(for: collection.items)
        let page = GalleryPage(collection: collection, thumbnails: thumbnails, pageSize: pageSize)
        let index = try page.write()
        let attribution = try Attribution.write(for: collection)
        let seconds = (ContinuousClock.now - started).components
        var line = "gallery: \(index.path) (\(collection.items.count) images, \(page.pageCount) page\(page.pageCount == 1 ? "" : "s"); "
        line += "\(report.made) thumbnails made, \(report.existing) kept"
        if report.failed > 0 { line += ", \(report.failed) images libvips could not read" }
        line += String(format: ", in %.1fs); attribution: %@", Double(seconds.seconds) + Double(seconds.attoseconds) / 1e18, attribution.path)
        return line
    }
}
