import Foundation
import MirrorSync
import MirrorCore
import MirrorStorage
import MirrorTransport

/// Each origin's site files — its `robots.txt` and its TDMRep file, `/.well-known/tdmrep.json` — fetched once per run
/// the first time one of its URLs comes up, on that URL's download slot and connection, and kept while the origin is
/// among the 16,384 most recently read (a table over millions of hosts keeps flat memory; an origin seen again after
/// that is read again). With a ``SiteMemory`` (the output's state folder), what an origin's files said is also kept
/// for a day, so that the next run within it does not ask again.
///
/// RFC 9309's reading of robots.txt: a 2xx body is parsed; a 4xx means no rules; a 5xx means complete disallow. One
/// deliberate departure: when the host cannot be reached at all (DNS, connect, TLS, timeout) its URLs go on to be
/// fetched, so that each fails with that network error — reported, transient, retried by a rerun — rather than being
/// filed as disallowed by a rule nobody could read. A file over 500 KiB is not read (everything allowed).
///
/// The TDMRep file is asked for right after robots.txt, over the same connection (the driver keeps an origin's
/// transfers on one thread), unless robots.txt keeps mirror out of `/.well-known/tdmrep.json` (then every URL it would
/// cover is disallowed anyway) or its reservations would not apply (``Files``). What the report says of it is in
/// ``TDMRep``: 404, no answer or an unreadable file reserve nothing, and an unreadable one is reported once.
///
/// Both go through the run's transport with its user agent; concurrent asks for one origin share one fetch.
public final class SiteGate: Sendable {
    /// Which files are read.
    public struct Files: OptionSet, Sendable, Hashable {
        public let rawValue: Int
        public init(rawValue: Int) { self.rawValue = rawValue }
        /// `robots.txt`: its Disallow rules, and its Content-Signal and Content-Usage lines.
        public static let robots = Files(rawValue: 1)
        /// `/.well-known/tdmrep.json`.
        public static let tdmrep = Files(rawValue: 2)
    }

    private let loader: any HTTPLoading
    private let agent: String
    private let robotsTemplate: TransferRequest
    private let tdmrepTemplate: TransferRequest
    private let files: Files
    /// Whether robots.txt's Disallow rules are honoured (when they are not, the TDMRep file is asked for even where
    /// they would keep mirror out).
    private let honoursDisallow: Bool
    private let memory: SiteMemory?
    private let origins = Locked<Origins>(Origins())
    /// Told the host of each fetch as it starts and as it ends (the download manager counts it against `--host-rate`
    /// from its end: when it arrived is not known here, only that it was before).
    private let onFetch: (@Sendable (String) -> Void)?
    /// Told, once per origin, what could not be read (an unreadable TDMRep file).
    private let onNotice: (@Sendable (String) -> Void)?
    /// Waits, before a second file of a host is asked for, until its `--host-rate` lets a request start.
    private let pace: (@Sendable (String) async -> Void)?
    /// Origins whose files are kept at most.
    static let capacity = 16_384

    /// What an origin's files said: what ``SiteMemory`` keeps, encoded as JSON.
    struct SiteFiles: Sendable, Codable, Hashable {
        var robots = RobotsRules.allowAll
        /// Why everything is refused when robots.txt could not be had, or `nil`.
        var robotsUnavailable: String?
        var tdmrep = TDMRep.Rules.none
    }

    /// The files read, and the order they were read in (the oldest is forgotten first).
    private struct Origins {
        var entries: [String: Entry] = [:]
        var readOrder: [String] = []
        var oldest = 0

        subscript(origin: String) -> Entry? {
            get { entries[origin] }
            set { entries[origin] = newValue }
        }

        mutating func read(_ origin: String, _ files: SiteFiles) {
            entries[origin] = .read(files)
            readOrder.append(origin)
            while readOrder.count - oldest > SiteGate.capacity {
                if case .read? = entries[readOrder[oldest]] { entries[readOrder[oldest]] = nil }
                oldest += 1
            }
            if oldest > SiteGate.capacity {
                readOrder.removeFirst(oldest)
                oldest = 0
            }
        }
    }

    /// One origin's files: being fetched (with who waits for them), or read.
    private enum Entry {
        case fetching([@Sendable (SiteFiles, Bool) -> Void])
        case read(SiteFiles)
    }

    /// Creates the gate.
    /// - Parameters:
    ///   - loader: The transport.
    ///   - agent: The product token rules are read for. Default `mirror`.
    ///   - userAgent: The `User-Agent` of the fetches.
    ///   - connectTo: Where to connect instead of the URL's host (curl's `--connect-to`), as the downloads do.
    ///   - timeout: The longest a fetch may take (the downloads' `--timeout`), at most 30 s, the default.
    ///   - files: Which files are read. Default both.
    ///   - honoursDisallow: Whether robots.txt's Disallow rules are honoured (`--ignore-robots` sets them aside).
    ///   - memory: Where what origins said is kept between runs, or `nil`.
    ///   - onFetch: Told the host of each fetch as it starts and as it ends, or `nil`.
    ///   - onNotice: Told once per origin what could not be read, or `nil`.
    ///   - pace: Waits until the host's `--host-rate` lets another request start (the TDMRep file after robots.txt), or
    ///     `nil`.
    public init(
        loader: any HTTPLoading, agent: String = "mirror", userAgent: String = MirrorVersion.userAgent, connectTo: [String] = [],
        timeout: Duration? = nil, files: Files = [.robots, .tdmrep], honoursDisallow: Bool = true, memory: SiteMemory? = nil,
        onFetch: (@Sendable (String) -> Void)? = nil, onNotice: (@Sendable (String) -> Void)? = nil,
        pace: (@Sendable (String) async -> Void)? = nil
    ) {
        self.loader = loader
        self.agent = agent
        self.files = files
        self.honoursDisallow = honoursDisallow
        self.memory = memory
        self.onFetch = onFetch
        self.onNotice = onNotice
        self.pace = pace
        var template = TransferRequest(url: URL(string: "http://localhost/robots.txt")!)
        template.userAgent = userAgent
        template.connectTo = connectTo
        template.maximumBodyBytes = 500 * 1024
        template.totalTimeout = min(.seconds(30), timeout ?? .seconds(30))
        robotsTemplate = template
        template.maximumBodyBytes = Int64(TDMRep.maximumFileBytes)
        tdmrepTemplate = template
    }

    /// Whether the files of `url`'s origin have been read (``evidence(for:completion:)`` then answers at once).
    public func knows(_ url: URL) -> Bool {
        guard let origin = Self.origin(of: url) else { return true }
        return origins.withLock { origins in
            if case .read? = origins[origin] { return true }
            return false
        }
    }

    /// What the site's files say of `url`, as evidence: a robots.txt refusal first (a `Disallow` rule, or a file that
    /// could not be had), then its Content-Signal and Content-Usage lines, then the TDMRep file's rule.
    public func evidence(for url: URL) async -> [ConsentEvidence] {
        await withCheckedContinuation { continuation in
            evidence(for: url) { evidence, _ in continuation.resume(returning: evidence) }
        }
    }

    /// Why robots.txt refuses `url` (`robots.txt disallows /private/`), or `nil` when it may be fetched.
    public func refusal(for url: URL) async -> String? {
        await evidence(for: url).first { $0.term == .disallow }?.value
    }

    /// Calls `completion` with what the site's files say of `url`: at once, on this thread, when its origin's files
    /// were read already (no task, no hop); otherwise when the one fetch of them ends. Its second argument says which:
    /// `waited` is true when the answer came after a fetch (``knows(_:)`` was false).
    public func evidence(for url: URL, completion: @escaping @Sendable (_ evidence: [ConsentEvidence], _ waited: Bool) -> Void) {
        guard let origin = Self.origin(of: url) else {
            completion([], false)
            return
        }
        let answer: @Sendable (SiteFiles, Bool) -> Void = { files, waited in completion(Self.evidence(for: url, in: files), waited) }
        enum Step { case answer(SiteFiles), wait, fetch }
        let step = origins.withLock { origins -> Step in
            switch origins[origin] {
            case let .read(files)?:
                return .answer(files)
            case var .fetching(waiters)?:
                waiters.append(answer)
                origins[origin] = .fetching(waiters)
                return .wait
            case nil:
                origins[origin] = .fetching([answer])
                return .fetch
            }
        }
        switch step {
        case let .answer(files):
            answer(files, false)
        case .wait:
            break
        case .fetch:
            Task {
                let (files, fetched) = await read(origin)
                let waiters = origins.withLock { origins -> [@Sendable (SiteFiles, Bool) -> Void] in
                    defer { origins.read(origin, files) }
                    if case let .fetching(waiters)? = origins[origin] { return waiters }
                    return []
                }
                for waiter in waiters { waiter(files, fetched) }
            }
        }
    }

    /// Writes what ``SiteMemory`` gathered (the run's end).
    public func flush() {
        memory?.flush()
    }

    private static func evidence(for url: URL, in files: SiteFiles) -> [ConsentEvidence] {
        if let unavailable = files.robotsUnavailable {
            return [ConsentEvidence(
                signal: .robots, value: "robots.txt unavailable (\(unavailable)); RFC 9309 says assume disallow",
                location: "robots.txt (\(unavailable))", term: .disallow
            )] + (files.tdmrep.evidence(for: url).map { [$0] } ?? [])
        }
        var evidence: [ConsentEvidence] = []
        if let rule = files.robots.disallowingRule(for: url) {
            let group = files.robots.group.map { $0 == "*" ? "group *" : "group for \($0)" } ?? "no group"
            evidence.append(ConsentEvidence(
                signal: .robots, value: "robots.txt disallows \(url.path(percentEncoded: true))",
                location: "robots.txt \(rule) (\(group))", term: .disallow
            ))
        } else {
            evidence += files.robots.evidence(for: url)
        }
        if let tdmrep = files.tdmrep.evidence(for: url) { evidence.append(tdmrep) }
        return evidence
    }

    /// The origin's files, remembered or fetched; `fetched` says whether any request was made.
    private func read(_ origin: String) async -> (files: SiteFiles, fetched: Bool) {
        if let memory, let data = memory.recall(origin), let files = try? JSONDecoder().decode(SiteFiles.self, from: data) {
            return (files, false)
        }
        var files = SiteFiles()
        var keep = true
        if self.files.contains(.robots) {
            let robots = await fetchRobots(origin)
            (files.robots, files.robotsUnavailable, keep) = (robots.rules, robots.unavailable, robots.unavailable == nil && robots.keep)
        }
        let wellKnown = URL(string: origin + TDMRep.wellKnownPath)!
        let mayAsk = !honoursDisallow || (files.robotsUnavailable == nil && files.robots.allows(wellKnown))
        if self.files.contains(.tdmrep), mayAsk {
            if self.files.contains(.robots), let pace, let host = wellKnown.host { await pace(host) }
            let tdmrep = await fetchTDMRep(wellKnown, origin: origin)
            files.tdmrep = tdmrep.rules
            keep = keep && tdmrep.keep
        }
        if keep, let memory, let data = try? JSONEncoder().encode(files) { memory.remember(origin, files: data) }
        return (files, self.files.contains(.robots) || (self.files.contains(.tdmrep) && mayAsk))
    }

    /// robots.txt, as RFC 9309 reads it; `keep` is false when nothing could be had (worth asking again next run).
    private func fetchRobots(_ origin: String) async -> (rules: RobotsRules, unavailable: String?, keep: Bool) {
        var request = robotsTemplate
        request.url = URL(string: origin + "/robots.txt")!
        if let onFetch, let host = request.url.host { onFetch(host) }
        defer { if let onFetch, let host = request.url.host { onFetch(host) } }
        do {
            let response = try await loader.perform(request)
            switch response.status {
            case 200..<300:
                return (RobotsRules(parsing: String(decoding: response.body, as: UTF8.self), agent: agent), nil, true)
            case 400..<500:
                return (.allowAll, nil, true)
            default:
                return (.disallowAll, "HTTP \(response.status)", false)
            }
        } catch .tooManyRedirects(let limit) {
            return (.disallowAll, "more than \(limit) redirects", false)
        } catch {
            return (.allowAll, nil, false)
        }
    }

    /// The TDMRep file; `keep` is false when nothing could be had (worth asking again next run).
    private func fetchTDMRep(_ url: URL, origin: String) async -> (rules: TDMRep.Rules, keep: Bool) {
        var request = tdmrepTemplate
        request.url = url
        if let onFetch, let host = url.host { onFetch(host) }
        defer { if let onFetch, let host = url.host { onFetch(host) } }
        do {
            let response = try await loader.perform(request)
            switch response.status {
            case 200..<300:
                do throws(TDMRep.Unreadable) {
                    return (try TDMRep.Rules(parsing: response.body), true)
                } catch {
                    onNotice?("\(origin)\(TDMRep.wellKnownPath) is \(error.reason): no reservation by file (TDMRep: the origin does not implement the protocol)")
                    return (.none, true)
                }
            case 400..<500:
                return (.none, true)
            default:
                return (.none, false)
            }
        } catch {
            return (.none, false)
        }
    }

    /// `scheme://host[:port]`, lowercased.
    package static func origin(of url: URL) -> String? {
        guard let scheme = url.scheme?.lowercased(), let host = url.host?.lowercased() else { return nil }
        let bracketed = host.contains(":") ? "[\(host)]" : host
        return "\(scheme)://\(bracketed)" + (url.port.map { ":\($0)" } ?? "")
    }
}
