import Foundation
import MirrorTestSupport

/// What the end-to-end search tests share: the API emulator with small images, and the environment that points
/// `mirror` at it with no pacing between API calls.
protocol EmulatedSearch {}

extension EmulatedSearch {
    /// An emulator serving 1–4 KB images, changed by `configure`.
    func emulator(_ configure: (inout APIEmulator.Settings) -> Void = { _ in }) throws -> APIEmulator {
        var settings = APIEmulator.Settings()
        settings.imageBytes = 1_000...4_000
        configure(&settings)
        return try APIEmulator.start(settings: settings)
    }

    /// The emulator's endpoints and keys, `MIRROR_API_INTERVAL_MS=0`, and `extra` on top.
    func environment(_ emulator: APIEmulator, _ extra: [String: String] = [:]) -> [String: String] {
        var environment = emulator.environment
        environment["MIRROR_API_INTERVAL_MS"] = "0"
        for (key, value) in extra { environment[key] = value }
        return environment
    }
}
