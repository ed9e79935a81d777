import Foundation
import MirrorSync
import MirrorKit

/// Shows a run's progress on stderr: a live status line on a terminal, one plain line per event
/// otherwise (logs, cron mail), nothing but errors with `--quiet`.
final class ProgressRenderer: Sendable {
    enum Mode {
        case live
        case lines
        case quiet
    }

    private struct State {
        var saved = 0
        var failed = 0
        var bytes: Int64 = 0
        var lastDraw = ContinuousClock.now - .seconds(1)
        var drewLine = false
    }

    let mode: Mode
    /// The number of images wanted, when there is one (search counts, list lengths).
    let target: Int?
    private let started = ContinuousClock.now
    private let state = Locked(State())

    init(mode: Mode, target: Int?) {
        self.mode = mode
        self.target = target
    }

    /// Picks live on a terminal, lines otherwise, quiet when asked.
    static func mode(quiet: Bool) -> Mode {
        if quiet { return .quiet }
        return isatty(STDERR_FILENO) == 1 ? .live : .lines
    }

    /// Shows one event of a run, whichever command ran it: a saved image and a failure as lines (or in the live
    /// line's counts); every other row that ended without an image as a note with its reason and URL — a duplicate,
    /// a near-duplicate, a filtered image, a refusal, a row that gives no URL; nothing for the rows a rerun passes
    /// over (already saved, failed for good earlier), which the summary counts.
    func show(_ event: Pipeline.Event) {
        switch event {
        case let .ended(item, outcome):
            show(outcome, of: item)
        case let .retrying(retry):
            retrying(retry.url, attempt: retry.attempt, delay: retry.delay, reason: retry.reason)
        case let .notice(line):
            note(line)
        }
    }

    private func show(_ outcome: RowOutcome, of item: SourceItem) {
        let url: URL
        switch item {
        case let .badRow(row):
            note("skipped \(row.place): \(outcome.message ?? row.reason)")
            return
        case let .candidate(candidate):
            url = candidate.url
        }
        switch outcome {
        case let .saved(record, source): saved(record, source: source)
        case let .failed(_, message, _): failed(url, message)
        case .alreadySaved, .failedEarlier: break
        case .duplicate(of: nil): note("duplicate: \(Self.redacted(url))")
        case let .duplicate(existing?): note("duplicate of \(existing.cut(to: MessageLimit.url)): \(Self.redacted(url))")
        case let .filtered(reason): note("filtered (\(reason)): \(Self.redacted(url))")
        case .nearDuplicate, .invalid, .optedOut, .disallowed: note("\(outcome.message ?? ""): \(Self.redacted(url))")
        }
    }

    func saved(_ record: ManifestRecord, source: CacheType) {
        state.withLock {
            $0.saved += 1
            $0.bytes += record.bytes
        }
        guard mode != .quiet else { return }
        let from = !source.isCached ? "" : " (from the \(source.rawValue) cache)"
        report("saved \(record.file) (\(record.width)×\(record.height) \(record.format), \(Self.format(bytes: record.bytes)))\(from)")
    }

    func failed(_ url: URL, _ reason: String) {
        state.withLock { $0.failed += 1 }
        guard mode != .quiet else { return }
        report("failed \(Self.redacted(url)): \(reason)")
    }

    func retrying(_ url: URL, attempt: Int, delay: Duration, reason: String) {
        report(String(format: "retrying %@ (attempt %d in %.1fs): %@", Self.redacted(url), attempt, delay.seconds, reason))
    }

    func note(_ line: String) {
        report(line)
    }

    /// Clears the live line before the final output.
    func finish() {
        guard mode == .live else { return }
        let drew = state.withLock { $0.drewLine }
        if drew { write("\r\u{1B}[K") }
    }

    private func report(_ line: String) {
        switch mode {
        case .quiet:
            return
        case .lines:
            // Each event's line quotes values from the web or the table (a reason, a signal's value): none makes it long.
            write(line.cuttingLines(to: MessageLimit.line) + "\n")
        case .live:
            let now = ContinuousClock.now
            let draw = state.withLock { state -> String? in
                guard now - state.lastDraw >= .milliseconds(100) else { return nil }
                state.lastDraw = now
                state.drewLine = true
                return statusLine(state, now: now)
            }
            if let draw { write("\r\u{1B}[K" + draw) }
        }
    }

    private func statusLine(_ state: State, now: ContinuousClock.Instant) -> String {
        let elapsed = max((now - started).seconds, 0.001)
        let rate = Double(state.saved) / elapsed
        var parts: [String] = []
        if let target {
            parts.append("saved \(state.saved)/\(target)")
        } else {
            parts.append("saved \(state.saved)")
        }
        parts.append(String(format: "%.1f img/s", rate))
        parts.append(Self.format(bytes: state.bytes))
        if let target, rate > 0, state.saved < target {
            parts.append("ETA \(Int((Double(target - state.saved) / rate).rounded(.up)))s")
        }
        if state.failed > 0 { parts.append("\(state.failed) failed") }
        return parts.joined(separator: " · ")
    }

    private func write(_ text: String) {
        FileHandle.standardError.write(Data(text.utf8))
    }

    /// Human-readable bytes: 512 B, 12.3 KB, 4.5 MB, 1.2 GB.
    static func format(bytes: Int64) -> String {
        let value = Double(bytes)
        switch value {
        case ..<1_000: return "\(bytes) B"
        case ..<1_000_000: return String(format: "%.1f KB", value / 1_000)
        case ..<1_000_000_000: return String(format: "%.1f MB", value / 1_000_000)
        default: return String(format: "%.2f GB", value / 1_000_000_000)
        }
    }

    /// A URL for display, without query items that may carry keys, cut to ``MessageLimit/url`` characters with its
    /// length (a table may hold a URL of megabytes).
    static func redacted(_ url: URL) -> String {
        guard var components = URLComponents(url: url, resolvingAgainstBaseURL: false), components.query != nil else {
            return url.displayed
        }
        components.query = nil
        return (components.string ?? url.absoluteString).cut(to: MessageLimit.url) + "?…"
    }
}
