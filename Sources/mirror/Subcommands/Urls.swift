import ArgumentParser
import Foundation
import MirrorKit

/// `mirror urls FILE|- --out DIR`: bulk-downloads a list of image URLs.
struct Urls: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Download a list of image URLs (one per line; blank lines and # comments ignored) into a folder.",
        discussion: """
        Saves only verified images, named after the URL's last path segment (sanitised; a short hash is \
        added when names clash), skips what the folder already has, and writes DIR/manifest.jsonl.

        Exit codes: 0 every URL is in the folder · 3 some URLs gave no image (4xx, not an image) · \
        5 some failed on the network or server and may work later · 64 usage · 75 folder locked · 130 interrupted.
        """
    )

    @Argument(help: "A file with one URL per line, or - for standard input.")
    var list: String

    @Option(name: .customLong("out"), help: "The output folder (created if missing).")
    var output: String

    @OptionGroup var network: NetworkOptions
    @OptionGroup var cache: CacheOptions
    @OptionGroup var outputOptions: OutputOptions

    func run() async throws {
        // Parsed inside the do, so that the list's text is freed before the downloads start.
        let urls: URLList
        do {
            urls = URLList(parsing: try readList())
        } catch {
            printError("cannot read the URL list \(list): \(error.localizedDescription)")
            throw ExitStatus.usage.exitCode
        }
        let renderer = ProgressRenderer(mode: ProgressRenderer.mode(quiet: outputOptions.quiet), target: urls.urls.count)
        if !outputOptions.quiet {
            for line in urls.invalidLines { FileHandle.standardError.write(Data("mirror: skipped \(line)\n".utf8)) }
        }

        var configuration = URLListJob.Configuration(directory: URL(fileURLWithPath: output))
        network.apply(to: &configuration.downloads)
        configuration.isSyncEnabled = !outputOptions.noFsync
        if !cache.noCache {
            let directory = cache.cacheDirectory.map { URL(fileURLWithPath: $0) } ?? DiskCache.defaultDirectory()
            configuration.downloads.cache = ImageCache(configuration: .init { $0.directory = directory })
        }
        let job = URLListJob(configuration: configuration)
        let (summary, interrupted) = try await runInterruptibly(renderer: renderer) {
            try await job.run(urls) { event in
                switch event {
                case let .saved(record, source): renderer.saved(record, source: source)
                case let .failed(url, error): renderer.failed(url, error.description)
                case let .duplicate(url, existing): renderer.note("duplicate of \(existing): \(ProgressRenderer.redacted(url))")
                case .skipped: break
                case let .retrying(url, attempt, delay, reason): renderer.retrying(url, attempt: attempt, delay: delay, reason: reason)
                }
            }
        }
        report(summary, interrupted: interrupted)
        throw exitStatus(for: summary, interrupted: interrupted).exitCode
    }

    private func readList() throws -> String {
        if list == "-" {
            return String(decoding: FileHandle.standardInput.readDataToEndOfFile(), as: UTF8.self)
        }
        return try String(contentsOfFile: list, encoding: .utf8)
    }

    private func report(_ summary: URLListJob.Summary, interrupted: Bool) {
        if outputOptions.json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            if let data = try? encoder.encode(summary) {
                FileHandle.standardOutput.write(data + Data("\n".utf8))
            }
        }
        guard !outputOptions.quiet else { return }
        var line = "\(summary.saved) saved, \(summary.skipped) already there, \(summary.duplicates) duplicates, \(summary.failed) failed"
        if !summary.failures.isEmpty {
            line += " (" + summary.failures.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ") + ")"
        }
        line += String(format: " in %.1fs", summary.seconds)
        if interrupted { line += "; interrupted: run again to continue" }
        FileHandle.standardError.write(Data((line + "\n").utf8))
    }

    private func exitStatus(for summary: URLListJob.Summary, interrupted: Bool) -> ExitStatus {
        if interrupted { return .interrupted }
        if summary.failed == 0 { return .success }
        return summary.hasTransientFailures ? .unavailable : .exhausted
    }
}
