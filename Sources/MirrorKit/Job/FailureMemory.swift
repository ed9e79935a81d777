import Foundation
import MirrorModel
import MirrorStorage

/// What a URL list's folder remembers of its failed URLs (the `attempts` table of `.mirror/state.sqlite`): a rerun
/// passes over them and reports them as missing; `--retry-failed` tries the transient ones again (`all`: every one).
struct FailureMemory: Sendable {
    let store: StateStore
    /// Normalised URLs this run does not try again.
    let skipped: Set<String>
    /// Normalised URLs this run tries again; saved, their failure is forgotten.
    let retried: Set<String>

    init(folder: OutputFolder, retry: RetryFailed?) throws {
        store = try StateStore(url: folder.stateDirectory.appendingPathComponent("state.sqlite"))
        var skipped = Set<String>()
        var retried = Set<String>()
        for (url, reason, isTransient) in try store.failedURLs() {
            switch retry {
            case .all? where reason != RowOutcome.Status.nearDuplicate.rawValue: retried.insert(url)  // a picture saved already stays saved
            case .transient? where isTransient: retried.insert(url)
            default: skipped.insert(url)
            }
        }
        (self.skipped, self.retried) = (skipped, retried)
    }
}
