import Foundation
import MirrorModel
import MirrorSync
import MirrorTransport

/// Each origin's site files — its `robots.txt` and its TDMRep file, `/.well-known/tdmrep.json` — fetched once per run
/// the first time one of its URLs comes up, on that URL's download slot and connection, and kept while the origin is
/// among the 16,384 most recently read (a table over millions of hosts keeps flat memory; an origin seen again after
/// that is read again). With a ``SiteMemory`` (the output's state folder), what an origin's files said is also kept
/// for a day, with which files were read and for which product tokens, so that the next run within it does not ask
/// again — unless it needs a file or a token that run did not read.
///
/// RFC 9309's reading of robots.txt: a 2xx body is parsed (its first 500 KiB, §2.5); a 4xx means no rules; anything
/// else — a 5xx, a redirect loop, a timeout, a stall, no connection — means complete disallow *for now* (§2.3.1.4):
/// the URLs are not fetched and fail as transient, ``siteUnavailablePrefix``, so that a rerun asks again. An unreadable
/// file is never permission.
///
/// The TDMRep file is asked for right after robots.txt, over the same connection (the driver keeps an origin's
/// transfers on one thread), when its reservations would apply (``Files``) — even where robots.txt disallows
/// `/.well-known/`: reading a reservation is not crawling. What the report says of it is in ``TDMRep``: 404, no answer
/// or an unreadable file reserve nothing; what could not be read is reported once per origin, and asked again next run.
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
    /// The product tokens robots.txt's groups are read for, lowercase.
    public let agents: [String]
    private let robotsTemplate: TransferRequest
    private let tdmrepTemplate: TransferRequest
    private let files: Files
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
    struct SiteFiles: Sendable, Codable {
        /// Which files were read (``Files``' raw value): what a later run may take from here without asking.
        var read: Int
        /// The product tokens robots.txt was read for.
        var agents: [String]
        var robots = RobotsRules.allowAll
        /// Why everything is refused for now when robots.txt could not be had, or `nil`.
        var robotsUnavailable: Unavailable?
        var tdmrep = TDMRep.Rules.none
    }

    /// Why robots.txt could not be had: said for people, the row's failure key, and whether a later run may do better.
    struct Unavailable: Sendable, Hashable, Codable {
        var message: String
        var reason: String
        var transient: Bool

        /// An answer that is not the file (a 5xx), or a redirect loop: worth asking again.
        static func answer(_ message: String) -> Unavailable {
            Unavailable(message: message, reason: "robots-unavailable", transient: true)
        }

        /// A transfer that failed, with the network's key and transience.
        static func failure(_ error: TransportError) -> Unavailable {
            Unavailable(message: error.description, reason: error.reasonKey, transient: error.isTransient)
        }
    }

    /// The start of the evidence's value when robots.txt could not be had.
    public static let siteUnavailablePrefix = "robots.txt could not be had"

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
    ///   - agents: The product tokens robots.txt's groups are read for (a URL is kept out where any token's group keeps
    ///     it out). Default `mirror`.
    ///   - userAgent: The `User-Agent` of the fetches.
    ///   - connectTo: Where to connect instead of the URL's host (curl's `--connect-to`), as the downloads do.
    ///   - timeout: The longest a fetch may take (the downloads' `--timeout`), at most 30 s, the default.
    ///   - files: Which files are read. Default both.
    ///   - memory: Where what origins said is kept between runs, or `nil`.
    ///   - onFetch: Told the host of each fetch as it starts and as it ends, or `nil`.
    ///   - onNotice: Told once per origin what could not be read, or `nil`.
    ///   - pace: Waits until the host's `--host-rate` lets another request start (the TDMRep file after robots.txt), or
    ///     `nil`.
    public init(
        loader: any HTTPLoading, agents: [String] = ["mirror"], userAgent: String = MirrorVersion.userAgent, connectTo: [String] = [],
        timeout: Duration? = nil, files: Files = [.robots, .tdmrep], memory: SiteMemory? = nil,
        onFetch: (@Sendable (String) -> Void)? = nil, onNotice: (@Sendable (String) -> Void)? = nil,
        pace: (@Sendable (String) async -> Void)? = nil
    ) {
        self.loader = loader
        var tokens: [String] = []
        for agent in agents.map({ $0.lowercased() }) where !tokens.contains(agent) { tokens.append(agent) }
        self.agents = tokens
        self.files = files
        self.memory = memory
        self.onFetch = onFetch
        self.onNotice = onNotice
        self.pace = pace
        var template = TransferRequest(url: URL(string: "http://localhost/robots.txt")!)
        template.userAgent = userAgent
        template.connectTo = connectTo
        // The body goes to a sink that keeps its first 500 KiB and then ends the transfer; the limit only bounds what a
        // Content-Length may announce before that.
        template.maximumBodyBytes = Int64.max / 2
        template.totalTimeout = min(.seconds(30), timeout ?? .seconds(30))
        robotsTemplate = template
        template.maximumBodyBytes = Int64(TDMRep.maximumFileBytes)
        tdmrepTemplate = template
    }

    /// A gate for one product token.
    public convenience init(
        loader: any HTTPLoading, agent: String, userAgent: String = MirrorVersion.userAgent, connectTo: [String] = [],
        timeout: Duration? = nil, files: Files = [.robots, .tdmrep], memory: SiteMemory? = nil,
        onFetch: (@Sendable (String) -> Void)? = nil, onNotice: (@Sendable (String) -> Void)? = nil,
        pace: (@Sendable (String) async -> Void)? = nil
    ) {
        self.init(
            loader: loader, agents: [agent], userAgent: userAgent, connectTo: connectTo, timeout: timeout, files: files,
            memory: memory, onFetch: onFetch, onNotice: onNotice, pace: pace
        )
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

    /// Why robots.txt refuses `url` (`robots.txt disallows /private/`), or `nil` when it may be fetched. (For tests.)
    func refusal(for url: URL) async -> String? {
        await evidence(for: url).first { $0.term == .disallow || $0.term.isUnavailable }?.value
    }

    /// Calls `completion` with what the site's files say of `url`: at once, on this thread, when its origin's files
    /// were read already (no task, no hop); otherwise when the one fetch of them ends. Its second argument says which:
    /// `waited` is true when the answer came after a fetch (``knows(_:)`` was false).
    public func evidence(for url: URL, completion: @escaping @Sendable (_ evidence: [ConsentEvidence], _ waited: Bool) -> Void) {
        guard let origin = Self.origin(of: url) else {
            completion([], false)
            return
        }
        files(of: origin) { files, waited in completion(Self.evidence(for: url, in: files), waited) }
    }

    /// What the files of `url`'s origin said, as read (fetched once, as for ``evidence(for:)``): the rules behind the
    /// evidence, for `mirror why`. `nil` for a URL without an origin.
    func siteFiles(for url: URL) async -> SiteFiles? {
        guard let origin = Self.origin(of: url) else { return nil }
        return await withCheckedContinuation { continuation in
            files(of: origin) { files, _ in continuation.resume(returning: files) }
        }
    }

    /// Calls `answer` with the origin's files: at once, on this thread, when they were read already; otherwise when
    /// the one fetch of them ends (its second argument true).
    private func files(of origin: String, answer: @escaping @Sendable (SiteFiles, Bool) -> Void) {
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

    /// The evidence of `files` for `url`, in the order ``evidence(for:)`` gives it.
    static func evidence(for url: URL, in files: SiteFiles) -> [ConsentEvidence] {
        if let unavailable = files.robotsUnavailable {
            return [ConsentEvidence(
                signal: .robots, value: "\(siteUnavailablePrefix) (\(unavailable.message)): RFC 9309 says assume disallow for now",
                location: "robots.txt (\(unavailable.message))", term: .unavailable(reason: unavailable.reason, transient: unavailable.transient)
            )]
        }
        // The URL made a target once, for every file's lookups.
        let target = PathMatching.target(of: url)
        var evidence: [ConsentEvidence] = []
        if let refusal = files.robots.refusal(target: target) {
            let line = refusal.line > 0 ? ", line \(refusal.line)" : ""
            evidence.append(ConsentEvidence(
                signal: .robots, value: "robots.txt disallows \(url.path(percentEncoded: true))",
                location: "robots.txt \(refusal.rule) (\(refusal.group)\(line))", term: .disallow
            ))
        } else {
            evidence += files.robots.usageEvidence(target: target)
        }
        if let tdmrep = files.tdmrep.evidence(target: target) { evidence.append(tdmrep) }
        return evidence
    }

    /// The origin's files, remembered or fetched; `fetched` says whether any request was made.
    private func read(_ origin: String) async -> (files: SiteFiles, fetched: Bool) {
        if let memory, let data = memory.recall(origin), let files = try? JSONDecoder().decode(SiteFiles.self, from: data),
           Files(rawValue: files.read).isSuperset(of: self.files), self.files.contains(.robots) ? files.agents == agents : true {
            return (files, false)
        }
        var files = SiteFiles(read: 0, agents: agents)
        var keep = true
        if self.files.contains(.robots) {
            let robots = await fetchRobots(origin)
            (files.robots, files.robotsUnavailable) = (robots.rules, robots.unavailable)
            keep = robots.unavailable == nil
        }
        // Where robots.txt could not be had, no URL of the origin is fetched this run: its TDMRep file can wait too.
        if self.files.contains(.tdmrep), files.robotsUnavailable == nil {
            let wellKnown = URL(string: origin + TDMRep.wellKnownPath)!
            if self.files.contains(.robots), let pace, let host = wellKnown.host { await pace(host) }
            let tdmrep = await fetchTDMRep(wellKnown, origin: origin)
            files.tdmrep = tdmrep.rules
            keep = keep && tdmrep.keep
        }
        files.read = self.files.rawValue
        if keep, let memory, let data = try? JSONEncoder().encode(files) { memory.remember(origin, files: data) }
        return (files, true)
    }

    /// robots.txt, as RFC 9309 reads it: the rules, or why it could not be had (then everything is disallowed for now).
    private func fetchRobots(_ origin: String) async -> (rules: RobotsRules, unavailable: Unavailable?) {
        var request = robotsTemplate
        request.url = URL(string: origin + "/robots.txt")!
        let prefix = PrefixSink(limit: RobotsRules.maximumBytes)
        request.destination = .sink(prefix)
        if let onFetch, let host = request.url.host { onFetch(host) }
        defer { if let onFetch, let host = request.url.host { onFetch(host) } }
        do {
            let response = try await loader.perform(request)
            switch response.status {
            case 200..<300:
                return (RobotsRules(parsing: prefix.bytes, agents: agents), nil)
            case 400..<500:
                return (.allowAll, nil)
            default:
                return (.allowAll, .answer("HTTP \(response.status)"))
            }
        } catch .destinationFailed(_) where prefix.isFull {
            // Only a 2xx body reaches the sink: a file larger than RFC 9309's 500 KiB, of which the first are read.
            return (RobotsRules(parsing: prefix.bytes, agents: agents), nil)
        } catch .tooManyRedirects(let limit) {
            return (.allowAll, .answer("more than \(limit) redirects"))
        } catch {
            return (.allowAll, .failure(error))
        }
    }

    /// The TDMRep file; `keep` is false when nothing could be had (worth asking again next run).
    private func fetchTDMRep(_ url: URL, origin: String) async -> (rules: TDMRep.Rules, keep: Bool) {
        var request = tdmrepTemplate
        request.url = url
        if let onFetch, let host = url.host { onFetch(host) }
        defer { if let onFetch, let host = url.host { onFetch(host) } }
        let unread = "\(origin)\(TDMRep.wellKnownPath)"
        do {
            let response = try await loader.perform(request)
            switch response.status {
            case 200..<300:
                do throws(TDMRep.Unreadable) {
                    return (try TDMRep.Rules(parsing: response.body), true)
                } catch {
                    onNotice?("\(unread) is \(error.reason): no reservation by file (TDMRep: the origin does not implement the protocol)")
                    return (.none, true)
                }
            case 400..<500:
                return (.none, true)
            default:
                onNotice?("\(unread) could not be had (HTTP \(response.status)): no reservation by file this run; asked again next run")
                return (.none, false)
            }
        } catch .tooLarge {
            onNotice?("\(unread) is over \(TDMRep.maximumFileBytes >> 10) KiB: not read, no reservation by file (TDMRep: the origin does not implement the protocol)")
            return (.none, true)
        } catch {
            onNotice?("\(unread) could not be had (\(error.description)): no reservation by file this run; asked again next run")
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

/// Keeps the first `limit` octets of a body, then ends the transfer (by throwing, which the driver reports as
/// ``TransportError/destinationFailed(_:)``; ``isFull`` tells that apart from a real failure).
private final class PrefixSink: TransferSink {
    private let limit: Int
    private let state = Locked<[UInt8]>([])

    init(limit: Int) {
        self.limit = limit
    }

    var bytes: [UInt8] { state.withLock { $0 } }
    var isFull: Bool { state.withLock { $0.count >= limit } }

    func write(_ chunk: UnsafeRawBufferPointer) throws {
        let full = state.withLock { bytes -> Bool in
            bytes += chunk.prefix(limit - bytes.count)
            return bytes.count >= limit
        }
        if full { throw Full() }
    }

    private struct Full: Error {}
}
