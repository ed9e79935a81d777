import ArgumentParser
import Foundation
import MirrorKit

/// Where a job's images go inside `--out`: the folder's layout (`mirror <query>`, `mirror urls`).
struct FolderOptions: ParsableArguments {
    @Option(help: ArgumentHelp(
        "Where images go in a folder: auto (flat, or numbered subfolders of 1,000 when the folder would pass 9,000 images), flat, or subfolders.",
        discussion: "The Hugging Face Hub takes at most 10,000 files in a folder. A saved image is never moved: a flat folder that grows past 9,000 keeps its images where they are and puts the next in 00000/, 00001/, …",
        valueName: "auto|flat|subfolders"
    ))
    var layout: FolderLayout.Mode?

    /// The layout asked for (automatic when none is).
    var folderLayout: FolderLayout { FolderLayout(mode: layout ?? .automatic) }
}

extension FolderLayout.Mode: ExpressibleByArgument {}
