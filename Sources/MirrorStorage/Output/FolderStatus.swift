import Foundation
import MirrorModel

/// What `mirror status` counts in a folder of files (a `manifest.jsonl` and no shards): the images its manifest lists,
/// those of them that declare they were generated, and every row its state database remembers as not saved.
public enum FolderStatus {
    /// The folder's state database is there but cannot be read.
    public struct Unreadable: Error, Sendable, CustomStringConvertible {
        public let path: String
        public let reason: String
        public var description: String { "cannot read \(path): \(reason)" }
    }

    /// The counts of the folder `directory`; nil when it is not a folder of files (no manifest, or shards in it).
    ///
    /// The manifest's lines are counted, not decoded (a folder of millions of images is counted in the time it takes
    /// to read it): a line is an image, and a line holding `"generated":true` one that says it was generated — the key
    /// as the manifest writes it, which a string value cannot hold unescaped.
    public static func tally(of directory: URL) throws(Unreadable) -> Tally? {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory.path),
              names.contains("manifest.jsonl"), !names.contains(where: { ShardFileName.parse($0) != nil }) else { return nil }
        var tally = Tally()
        if let manifest = FileManager.default.contents(atPath: directory.appendingPathComponent("manifest.jsonl").path) {
            let lines = manifest.split(separator: UInt8(ascii: "\n"))
            tally.saved = lines.count
            let generated = Data(#""generated":true"#.utf8)
            tally.generated = lines.filter { $0.firstRange(of: generated) != nil }.count
        }
        let database = directory.appendingPathComponent(".mirror/state.sqlite")
        if FileManager.default.fileExists(atPath: database.path) {
            let store: StateStore
            do {
                store = try StateStore(url: database)
            } catch {
                throw Unreadable(path: database.path, reason: "\(error)")
            }
            for attempt in (try? store.attempts()) ?? [] { tally.count(attempt.outcome) }
        }
        return tally
    }
}
