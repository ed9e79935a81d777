import Foundation
import MirrorCore
import MirrorModel
import MirrorStorage

/// What an output holds, read back for looking at: every saved image's record and where its bytes are, whatever the
/// layout — a folder (`manifest.jsonl`, its images flat or in numbered subfolders), labelled subfolders (the same
/// manifest), WebDataset shards (`NNNNN.jsonl` beside `NNNNN.tar`), the `shard-I-of-N/` folders of a sharded job, or
/// the `train/`, `validation/` and `test/` folders of splits — and the searches that filled it.
public struct SavedImages: Sendable {
    /// One saved image.
    public struct Item: Sendable, Hashable {
        public enum Location: Sendable, Hashable {
            /// A file of the folder.
            case file(URL)
            /// A member of a WebDataset shard.
            case tarMember(tar: URL, name: String)
        }

        public var record: ManifestRecord
        public var location: Location
        /// The image's path from the output's root (`red-fox/a.jpg`, `00003.tar/000030001.jpg`).
        public var path: String
        /// Its class for filtering: the label of a `--queries` run, else the search query, else `nil`.
        public var group: String? { record.label ?? record.query }
    }

    public let root: URL
    public var items: [Item] = []
    /// The searches recorded in the output's state (query, runs, images saved), most recent first.
    public var searches: [StateStore.Search] = []

    /// Reads an output folder.
    /// - Throws: ``FileError`` when the folder cannot be listed.
    public init(root: URL) throws {
        self.root = root
        try read(root, prefix: "")
    }

    private mutating func read(_ directory: URL, prefix: String) throws {
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted()
        } catch {
            throw FileError(operation: "read", path: directory.path, code: (error as NSError).code == NSFileReadNoSuchFileError ? ENOENT : EACCES)
        }
        let manifest = directory.appendingPathComponent("manifest.jsonl")
        if names.contains("manifest.jsonl") {
            for record in ManifestRecord.read(from: manifest) {
                items.append(Item(record: record, location: .file(directory.appendingPathComponent(record.file)), path: prefix + record.file))
            }
        }
        for name in names {
            guard let (_, kind) = ShardFileName.parse(name), kind == .records else { continue }
            let tarName = String(name.dropLast(6)) + ".tar"
            let tar = directory.appendingPathComponent(tarName)
            guard let data = try? Data(contentsOf: directory.appendingPathComponent(name)) else { continue }
            for line in data.split(separator: 0x0A) {
                // A shard's record lines are manifest records with a status; only saved rows decode as records.
                guard let record = ManifestRecord.decode(line) else { continue }
                items.append(Item(record: record, location: .tarMember(tar: tar, name: record.file), path: prefix + tarName + "/" + record.file))
            }
        }
        let database = directory.appendingPathComponent(".mirror/state.sqlite")
        if FileManager.default.fileExists(atPath: database.path), let store = try? StateStore(url: database) {
            searches += (try? store.searches()) ?? []
        }
        // The folders of a sharded job's copies and of the splits (`--split`), each an output of its own.
        for name in names where (name.hasPrefix("shard-") && name.contains("-of-")) || DatasetSplit(rawValue: name) != nil {
            let sub = directory.appendingPathComponent(name, isDirectory: true)
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: sub.path, isDirectory: &isDirectory), isDirectory.boolValue {
                try read(sub, prefix: prefix + name + "/")
            }
        }
    }
}
