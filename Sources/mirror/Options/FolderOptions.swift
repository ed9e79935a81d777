import ArgumentParser
import Foundation
import MirrorKit

/// Where a job's images go inside `--out`: the split's folder, and the folder's layout (`mirror <query>`, `mirror urls`).
struct FolderOptions: ParsableArguments {
    @Option(help: ArgumentHelp(
        "Fill OUT/SPLIT (train, validation or test), the folder Hugging Face datasets loads as that split.",
        discussion: "The split's folder is a job's own: its images, manifest.jsonl, metadata.jsonl and .mirror/ state.",
        valueName: "train|validation|test"
    ))
    var split: DatasetSplit?

    @Option(help: ArgumentHelp(
        "Where images go in a folder: auto (flat, or numbered subfolders of 1,000 when the folder would pass 9,000 images), flat, or subfolders.",
        discussion: "The Hugging Face Hub takes at most 10,000 files in a folder. A saved image is never moved: a flat folder that grows past 9,000 keeps its images where they are and puts the next in 00000/, 00001/, …",
        valueName: "auto|flat|subfolders"
    ))
    var layout: FolderLayout.Mode?

    /// The layout asked for (automatic when none is).
    var folderLayout: FolderLayout { FolderLayout(mode: layout ?? .automatic) }

    /// Why `output` may not be filled, or `nil`: a usage error to fill a folder that already holds a dataset's split folders (`train/`, `test/`, …)
    /// without `--split`: the images would land beside the splits, where Hugging Face's `imagefolder` reads neither
    /// as it should. A folder that is itself a job's (it has `.mirror/`) is filled as before.
    func splitsRefusal(in output: String) -> String? {
        guard split == nil, !output.hasPrefix("s3://") else { return nil }
        let base = URL(fileURLWithPath: output, isDirectory: true)
        let manager = FileManager.default
        guard !manager.fileExists(atPath: base.appendingPathComponent(".mirror").path) else { return nil }
        let splits = DatasetSplit.allCases.filter { split in
            var isDirectory: ObjCBool = false
            return manager.fileExists(atPath: split.directory(in: base).path, isDirectory: &isDirectory) && isDirectory.boolValue
        }
        guard !splits.isEmpty else { return nil }
        let names = splits.map { $0.rawValue + "/" }.joined(separator: ", ")
        return ("\(output) holds the split folders \(names): add to one with --split \(splits[0].rawValue), or give another --out")
    }

    /// `output` with the split's folder, if one is given: a path, or an `s3://` prefix with the split's name added.
    func destination(_ output: String) -> String {
        guard let split else { return output }
        var base = output
        while base.count > 1, base.hasSuffix("/") { base.removeLast() }
        return base + "/" + split.rawValue
    }
}

extension DatasetSplit: ExpressibleByArgument {}
extension FolderLayout.Mode: ExpressibleByArgument {}
