import Foundation
import MirrorBase
import MirrorCore
import MirrorStorage
import MirrorTransport

/// Each host's `robots.txt`, fetched the first time one of its URLs comes up and kept while the host is among the
/// 16,384 most recently read (a table over millions of hosts keeps flat memory; a host seen again after that is read
/// again).
///
/// RFC 9309's reading of the fetch: a 2xx body is parsed; a 4xx means no rules; a 5xx means complete disallow. One
/// deliberate departure: when the host cannot be reached at all (DNS, connect, TLS, timeout) its URLs go on to be
/// fetched, so that each fails with that network error — reported, transient, retried by a rerun — rather than being
/// filed as disallowed by a rule nobody could read. A file over 500 KiB is not read (everything allowed). The fetch
/// goes through the run's transport with its user agent; concurrent asks for one host share one fetch.
public final class RobotsGate: Sendable {
    private let loader: any HTTPLoading
    private let agent: String
    private let template: TransferRequest
    private let hosts = Locked<Hosts>(Hosts())
    /// Told the host of each fetch as it starts and as it ends (the download manager counts it against `--host-rate`
    /// from its end: when it arrived is not known here, only that it was before).
    private let onFetch: (@Sendable (String) -> Void)?
    /// Hosts whose file is kept at most.
    static let capacity = 16_384

    /// The files read, and the order they were read in (the oldest is forgotten first).
    private struct Hosts {
        var entries: [String: Entry] = [:]
        var readOrder: [String] = []
        var oldest = 0

        subscript(origin: String) -> Entry? {
            get { entries[origin] }
            set { entries[origin] = newValue }
        }

        mutating func read(_ origin: String, _ verdict: RobotsVerdict) {
            entries[origin] = .read(verdict)
            readOrder.append(origin)
            while readOrder.count - oldest > RobotsGate.capacity {
                if case .read? = entries[readOrder[oldest]] { entries[readOrder[oldest]] = nil }
                oldest += 1
            }
            if oldest > RobotsGate.capacity {
                readOrder.removeFirst(oldest)
                oldest = 0
            }
        }
    }

    /// One origin's file: being fetched (with who waits for it), or read.
    private enum Entry {
        case fetching([@Sendable (RobotsVerdict, Bool) -> Void])
        case read(RobotsVerdict)
    }

    /// How one host's file was read.
    public struct RobotsVerdict: Sendable {
        package var rules: RobotsRules
        /// Why everything is refused when the file could not be had, or `nil`.
        package var unavailable: String?
    }

    /// Creates the gate.
    /// - Parameters:
    ///   - loader: The transport.
    ///   - agent: The product token rules are read for. Default `mirror`.
    ///   - userAgent: The `User-Agent` of the fetches.
    ///   - connectTo: Where to connect instead of the URL's host (curl's `--connect-to`), as the downloads do.
    ///   - timeout: The longest a fetch may take (the downloads' `--timeout`), at most 30 s, the default.
    ///   - onFetch: Told the host of each fetch as it starts and as it ends, or `nil`.
    public init(
        loader: any HTTPLoading, agent: String = "mirror", userAgent: String = MirrorVersion.userAgent, connectTo: [String] = [],
        timeout: Duration? = nil, onFetch: (@Sendable (String) -> Void)? = nil
    ) {
        self.loader = loader
        self.agent = agent
        self.onFetch = onFetch
        var template = TransferRequest(url: URL(string: "http://localhost/robots.txt")!)
        template.userAgent = userAgent
        template.connectTo = connectTo
        template.maximumBodyBytes = 500 * 1024
        template.totalTimeout = min(.seconds(30), timeout ?? .seconds(30))
        self.template = template
    }

    /// Whether the file of `url`'s host has been read (``refusal(for:completion:)`` then answers at once).
    public func knows(_ url: URL) -> Bool {
        guard let origin = Self.origin(of: url) else { return true }
        return hosts.withLock { hosts in
            if case .read? = hosts[origin] { return true }
            return false
        }
    }

    /// Why `url` may not be fetched (`robots.txt disallows /private/`), or `nil` when it may.
    public func refusal(for url: URL) async -> String? {
        await withCheckedContinuation { continuation in
            refusal(for: url) { refusal, _ in continuation.resume(returning: refusal) }
        }
    }

    /// Calls `completion` with why `url` may not be fetched, or `nil` when it may: at once, on this thread, when its
    /// host's file was read already (no task, no hop); otherwise when the one fetch of that file ends. Its second
    /// argument says which: `waited` is true when the answer came after a fetch of the file (``knows(_:)`` was false).
    public func refusal(for url: URL, completion: @escaping @Sendable (_ refusal: String?, _ waited: Bool) -> Void) {
        guard let origin = Self.origin(of: url) else {
            completion(nil, false)
            return
        }
        let answer: @Sendable (RobotsVerdict, Bool) -> Void = { verdict, waited in completion(Self.refusal(of: url, by: verdict), waited) }
        enum Step { case answer(RobotsVerdict), wait, fetch }
        let step = hosts.withLock { hosts -> Step in
            switch hosts[origin] {
            case let .read(verdict)?:
                return .answer(verdict)
            case var .fetching(waiters)?:
                waiters.append(answer)
                hosts[origin] = .fetching(waiters)
                return .wait
            case nil:
                hosts[origin] = .fetching([answer])
                return .fetch
            }
        }
        switch step {
        case let .answer(verdict):
            answer(verdict, false)
        case .wait:
            break
        case .fetch:
            Task {
                let verdict = await fetch(origin)
                let waiters = hosts.withLock { hosts -> [@Sendable (RobotsVerdict, Bool) -> Void] in
                    defer { hosts.read(origin, verdict) }
                    if case let .fetching(waiters)? = hosts[origin] { return waiters }
                    return []
                }
                for waiter in waiters { waiter(verdict, true) }
            }
        }
    }

    private static func refusal(of url: URL, by verdict: RobotsVerdict) -> String? {
        if let unavailable = verdict.unavailable { return "robots.txt unavailable (\(unavailable)); RFC 9309 says assume disallow" }
        return verdict.rules.allows(url) ? nil : "robots.txt disallows \(url.path(percentEncoded: true))"
    }

    private func fetch(_ origin: String) async -> RobotsVerdict {
        var request = template
        request.url = URL(string: origin + "/robots.txt")!
        if let onFetch, let host = request.url.host { onFetch(host) }
        defer { if let onFetch, let host = request.url.host { onFetch(host) } }
        do {
            let response = try await loader.perform(request)
            switch response.status {
            case 200..<300:
                return RobotsVerdict(rules: RobotsRules(parsing: String(decoding: response.body, as: UTF8.self), agent: agent))
            case 400..<500:
                return RobotsVerdict(rules: .allowAll)
            default:
                return RobotsVerdict(rules: .disallowAll, unavailable: "HTTP \(response.status)")
            }
        } catch .tooManyRedirects(let limit) {
            return RobotsVerdict(rules: .disallowAll, unavailable: "more than \(limit) redirects")
        } catch {
            return RobotsVerdict(rules: .allowAll)
        }
    }

    /// `scheme://host[:port]`, lowercased.
    package static func origin(of url: URL) -> String? {
        guard let scheme = url.scheme?.lowercased(), let host = url.host?.lowercased() else { return nil }
        let bracketed = host.contains(":") ? "[\(host)]" : host
        return "\(scheme)://\(bracketed)" + (url.port.map { ":\($0)" } ?? "")
    }
}
