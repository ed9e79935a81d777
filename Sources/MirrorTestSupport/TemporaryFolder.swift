import Foundation

/// A fresh, empty folder under the system's temporary directory, removed with everything in it when the value is
/// dropped: the one temporary folder of every test target.
public final class TemporaryFolder: Sendable {
    public let url: URL

    public init() {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("mirror-test-\(UUID().uuidString)", isDirectory: true)
        try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    public var path: String { url.path }

    /// `name` inside the folder.
    public func file(_ name: String) -> URL { url.appendingPathComponent(name) }

    /// Names of the files inside, hidden ones included, sorted.
    public var fileNames: [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: url.path)) ?? []).sorted()
    }

    /// Visible files (the images and the manifest), without `metadata.jsonl`, the manifest's copy for `imagefolder`.
    public var visibleFiles: [String] {
        fileNames.filter { !$0.hasPrefix(".") && $0 != "metadata.jsonl" }
    }

    /// Temporary files mirror left behind (`AtomicFile`'s `.part` files).
    public var temporaryFiles: [String] {
        fileNames.filter { $0.hasSuffix(".part") }
    }

    deinit {
        try? FileManager.default.removeItem(at: url)
    }
}
