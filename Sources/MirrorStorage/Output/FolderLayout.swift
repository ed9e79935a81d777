import Foundation

/// Where in an output folder new images go: into the folder itself, or into numbered subfolders of a fixed size — so
/// that no folder passes the 10,000 files the Hugging Face Hub takes in one folder (its repository recommendations:
/// "use subdirectories"), and the folder can be uploaded as it is.
///
/// Subfolders are named `00000`, `00001`, … (``subfolderName(_:)``: five digits, so that their lexical order is the
/// order they were filled in); each takes ``imagesPerSubfolder`` images, and the next image after a full one opens the
/// next. Labelled images (`--queries`) have numbered subfolders of their own inside their label's folder. A saved
/// file is never moved: a top-up goes on in the last subfolder, and a flat folder that would grow past ``flatLimit``
/// keeps its images where they are and puts the next ones into subfolders. `manifest.jsonl` (and `metadata.jsonl`)
/// name each image by its path from the output folder (`00012/openverse-1234.jpg`), which is what `datasets`'
/// `imagefolder` reads as `file_name`.
///
/// ```swift
/// let layout = FolderLayout(mode: .automatic).resolved(saved: folder.savedCount, adding: 12_500)  // .subfolders
/// ```
public struct FolderLayout: Sendable, Hashable {
    /// How a job chooses (`--layout`).
    public enum Mode: String, Sendable, Hashable, CaseIterable {
        /// Flat while the folder holds fewer than ``FolderLayout/flatLimit`` images and the job cannot take it past
        /// that; subfolders once it has them, or holds that many, or the job may add enough (the job says how many it
        /// may add: ``FolderLayout/resolved(saved:adding:)``). The default.
        case automatic = "auto"
        /// Every new image in the folder itself, however many.
        case flat
        /// Every new image in a numbered subfolder, from the first.
        case subfolders
    }

    /// How the job chooses. Default ``Mode/automatic``.
    public var mode: Mode
    /// Images in one subfolder. Default 1,000: a tenth of the Hub's limit, so that a subfolder is a unit a person can
    /// open and a tool can list at once, and the output folder itself holds only 100 subfolders at 100,000 images
    /// (the most files the Hub recommends for a whole repository).
    public var imagesPerSubfolder: Int
    /// The most images a folder holds flat under ``Mode/automatic``. Default 9,000: the Hub's 10,000 files per folder
    /// less room for what sits beside the images (`manifest.jsonl`, `metadata.jsonl`, `ATTRIBUTION.md`, `gallery/`)
    /// and for the subfolders a flat folder that grows past it goes on in (999 of them: 999,000 more images).
    public var flatLimit: Int

    /// A layout; the sizes are for tests (the defaults are the ones above).
    public init(mode: Mode = .automatic, imagesPerSubfolder: Int = 1_000, flatLimit: Int = 9_000) {
        precondition(imagesPerSubfolder > 0 && flatLimit >= 0, "a subfolder holds at least one image")
        self.mode = mode
        self.imagesPerSubfolder = imagesPerSubfolder
        self.flatLimit = flatLimit
    }

    /// This layout for a job that may add up to `adding` images (`nil`: it cannot say) to a folder (or a label's folder)
    /// holding `saved`: ``Mode/subfolders`` when it is automatic and the two together pass ``flatLimit``, so that a
    /// large job is in subfolders from its first image; otherwise unchanged (an automatic layout still switches to
    /// subfolders on its own when the folder reaches the limit).
    public func resolved(saved: Int, adding: Int?) -> FolderLayout {
        guard mode == .automatic, let adding, saved + adding > flatLimit else { return self }
        var layout = self
        layout.mode = .subfolders
        return layout
    }

    /// The name of subfolder `number`: `00000`, `00001`, … (at least five digits; past 99,999 subfolders — 100
    /// million images at the default size — the names grow a digit and their lexical order no longer follows).
    public static func subfolderName(_ number: Int) -> String {
        let digits = String(number)
        return digits.count >= 5 ? digits : String(repeating: "0", count: 5 - digits.count) + digits
    }

    /// The number of a subfolder named by ``subfolderName(_:)``, or `nil` for any other name.
    static func subfolderNumber<Name: StringProtocol>(_ name: Name) -> Int? {
        guard name.utf8.count >= 5, name.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }) else { return nil }
        return Int(name)
    }
}

/// Where the next images of each folder go, learnt from the paths of the saved ones: for the output folder and each
/// label's folder, how many images it holds itself and how many each of its numbered subfolders holds. A value with
/// no I/O: ``OutputFolder`` keeps one up to date with its manifest, and ``ImageCommitter`` works on a copy while it
/// names a batch (a batch that fails leaves the folder's as it was).
struct FolderPlacement: Sendable, Hashable {
    struct Base: Sendable, Hashable {
        /// Images directly in the folder.
        var flat = 0
        /// Images in each numbered subfolder.
        var subfolders: [Int: Int] = [:]
        /// The highest numbered subfolder.
        var last: Int?
    }

    private(set) var bases: [String: Base] = [:]

    /// Takes note of a saved image at `file`, its path from the output folder (`a.jpg`, `00003/a.jpg`, and with
    /// `labelled`, whose first component is its label's folder, `red-fox/a.jpg`, `red-fox/00003/a.jpg`). A path of
    /// another shape is no image of a folder mirror lays out, and counts nowhere.
    mutating func add(file: String, labelled: Bool) {
        var components = file.split(separator: "/", omittingEmptySubsequences: false)
        var base = ""
        if labelled {
            guard components.count >= 2 else { return }
            base = String(components.removeFirst())
        }
        switch components.count {
        case 1:
            bases[base, default: Base()].flat += 1
        case 2:
            guard let number = FolderLayout.subfolderNumber(components[0]) else { return }
            bases[base, default: Base()].subfolders[number, default: 0] += 1
            bases[base, default: Base()].last = max(bases[base]?.last ?? number, number)
        default:
            return
        }
    }

    /// The numbered subfolder the next image of the folder `base` (`""`: the output folder; else a label's folder)
    /// goes into under `layout`, or `nil` for the folder itself; counted as taken.
    ///
    /// Flat: the folder itself. Subfolders: the last one while it has room, else the one after it (the first is
    /// `00000`). Automatic: subfolders once the folder has any or holds ``FolderLayout/flatLimit`` images flat, else
    /// the folder itself.
    mutating func place(in base: String, layout: FolderLayout) -> Int? {
        var folder = bases[base] ?? Base()
        defer { bases[base] = folder }
        let inSubfolders: Bool = switch layout.mode {
        case .flat: false
        case .subfolders: true
        case .automatic: folder.last != nil || folder.flat >= layout.flatLimit
        }
        guard inSubfolders else {
            folder.flat += 1
            return nil
        }
        var number = folder.last ?? 0
        if folder.subfolders[number, default: 0] >= layout.imagesPerSubfolder { number += 1 }
        folder.subfolders[number, default: 0] += 1
        folder.last = number
        return number
    }
}
