import ArgumentParser
import Foundation
import MirrorKit

/// Options shared by every command that downloads: how many at once, how long, how often.
struct NetworkOptions: ParsableArguments {
    @Option(help: "Downloads in flight at once (1–256).")
    var concurrency: Int = 16

    @Option(name: .customLong("per-host"), help: "Requests in flight per host at most (1–64).")
    var perHost: Int = 6

    @OptionGroup var transfer: TransferOptions

    @Option(help: ArgumentHelp(
        "Refuse images that declare more pixels than this (too-many-pixels), resized or not.",
        discussion: "The default, 178956970, is the most Pillow (and so Hugging Face datasets) opens without refusing."
    ))
    var maxPixels: Int = DownloadManager.Configuration().pixelLimit

    @Option(help: "Requests started per host per second at most (beside --per-host connections), e.g. 5 or 0.5. Split by host (--shard-by host), each host is in one copy, so the rate holds across copies.")
    var hostRate: Double?

    @Option(help: "Retries of a failed image download (0–10), with backoff and Retry-After honoured; API requests have --api-retries.")
    var retries: Int = 3

    func validate() throws {
        guard (1...256).contains(concurrency) else { throw ValidationError("--concurrency must be between 1 and 256.") }
        guard (1...64).contains(perHost) else { throw ValidationError("--per-host must be between 1 and 64.") }
        guard (0...10).contains(retries) else { throw ValidationError("--retries must be between 0 and 10.") }
        guard maxPixels >= 1 else { throw ValidationError("--max-pixels must be at least 1.") }
        if let hostRate, !(hostRate > 0 && hostRate <= 10_000) {
            throw ValidationError("--host-rate must be a number of requests per second above 0.")
        }
    }

    /// Applies these options to a download configuration.
    func apply(to configuration: inout DownloadManager.Configuration) {
        configuration.concurrency = concurrency
        configuration.perHost = perHost
        configuration.hostRate = hostRate
        configuration.pixelLimit = maxPixels
        configuration.retry.maximumRetries = retries
        transfer.apply(to: &configuration)
    }
}

/// How one request is bounded and where it connects: every command that downloads, and `mirror why`, which asks as
/// the downloads would.
struct TransferOptions: ParsableArguments {
    @Option(name: .customLong("max-bytes"), help: "Largest image accepted, e.g. 20MB or 500KiB.")
    var maxBytes: ByteSize = ByteSize(bytes: 50 * 1024 * 1024)

    @Option(help: "Give up on one attempt after this many seconds (default: 15 + the --max-bytes image's time at 256 KiB/s, at most 300: 215 with the default 50 MiB).")
    var timeout: Double?

    @Option(help: "Give up on one attempt when under 1 kB arrives in this many seconds (default 20); filed transient, for --retry-failed.")
    var stallTimeout: Double?

    @Option(help: ArgumentHelp(
        "Connect to another address for a host, as curl's --connect-to: HOST:PORT:CONNECT-TO-HOST:CONNECT-TO-PORT (repeatable; an empty HOST or PORT matches any).",
        valueName: "host:port:host:port"
    ))
    var connectTo: [String] = []

    func validate() throws {
        guard maxBytes.bytes >= 1024 else { throw ValidationError("--max-bytes must be at least 1KiB.") }
        if let timeout, !(timeout > 0 && timeout <= 86_400) {
            throw ValidationError("--timeout must be a number of seconds above 0.")
        }
        if let stallTimeout, !(stallTimeout >= 1 && stallTimeout <= 86_400) {
            throw ValidationError("--stall-timeout must be a number of seconds, 1 or more.")
        }
        for entry in connectTo where entry.split(separator: ":", omittingEmptySubsequences: false).count < 4 {
            throw ValidationError("--connect-to \(entry): give HOST:PORT:CONNECT-TO-HOST:CONNECT-TO-PORT")
        }
    }

    /// Applies these options to a download configuration.
    func apply(to configuration: inout DownloadManager.Configuration) {
        configuration.maximumBytes = maxBytes.bytes
        configuration.timeout = timeout.map { .milliseconds(Int64($0 * 1000)) }
        configuration.connectTo = connectTo
        if let stallTimeout { configuration.stall.window = .milliseconds(Int64(stallTimeout * 1000)) }
        // For tests only (undocumented in --help): a short stall window, so that a stalled transfer is
        // caught in a second rather than the default 20 s. Ignored unless it is a number of seconds in 0.1…600.
        if let text = ProcessInfo.processInfo.environment["MIRROR_STALL_SECONDS"], let seconds = Double(text), (0.1...600).contains(seconds) {
            configuration.stall.window = .milliseconds(Int64(seconds * 1000))
        }
    }
}

/// Options of the on-disk cache.
struct CacheOptions: ParsableArguments {
    @Flag(name: .customLong("no-cache"), help: "Neither read nor write the cache.")
    var noCache = false

    @Option(name: .customLong("cache-dir"), help: "The cache folder (default: $XDG_CACHE_HOME/mirror or ~/.cache/mirror).")
    var cacheDirectory: String?
}

/// How much a command prints.
struct OutputOptions: ParsableArguments {
    @Flag(help: "Print one JSON summary object on stdout at the end.")
    var json = false

    @Flag(name: .shortAndLong, help: "Print only errors (for cron).")
    var quiet = false

    @Flag(name: .customLong("no-fsync"), help: "Do not fsync saved files: faster; a killed run still leaves no partial file, but a power loss may lose the last images.")
    var noFsync = false

    @Flag(help: "At the end, write DIR/gallery/index.html (a contact sheet) and DIR/ATTRIBUTION.md, as mirror gallery does.")
    var gallery = false

    /// Writes the gallery when asked; a failure is one line and does not change the run's exit status.
    func writeGallery(_ directory: URL) {
        guard gallery else { return }
        do {
            let line = try Gallery.write(directory)
            if !quiet { FileHandle.standardError.write(Data((line + "\n").utf8)) }
        } catch {
            printError("could not write the gallery: \(describe(error).message)")
        }
    }
}
