import Foundation
import MirrorModel
import MirrorSync
import MirrorImages
import MirrorTransport

/// Explains, for one URL at a time, what mirror would read of its owner's wishes and what the policy decides: the
/// library behind `mirror why`.
///
/// The site's files are read through a ``SiteGate`` as the pipeline makes it (the same files for the policy, the same
/// product tokens, `User-Agent`, `--connect-to` and timeout: MirrorFetch's `init(policy:downloads:)` takes them from a
/// run's download settings), without a ``SiteMemory``: always fresh, each origin once
/// per call. The image itself is not requested unless asked (`fetchingImages`), and then only where the site's files
/// let mirror fetch it, as a download would; its response's headers and its own marks are read as the download path
/// reads them (``ResponseSignals``, then ``ImageValidator`` with `readsMarks`), in memory, and nothing is saved.
///
/// ```swift
/// var policy = ConsentPolicy(purpose: .aiTrain)
/// policy.robotsTag = XRobotsTag(agents: ConsentPolicy.agents(forUserAgent: "MyBot/1.0 (ops@example.org)"))
/// let explanations = await ConsentInspector(policy: policy).explain([url], fetchingImages: true)
/// print(explanations[0].lines.joined(separator: "\n"))
/// ```
public struct ConsentInspector: Sendable {
    /// What the URLs would be collected for, the signals set aside, the tokens read for.
    public var policy: ConsentPolicy
    /// Every request as a run's downloads make it: `User-Agent`, `--connect-to`, the limits on time and bytes.
    public var request: TransferRequest
    /// The run's `--timeout`, or `nil` for the site files' own limit (``SiteGate``).
    public var siteTimeout: Duration?
    /// Images declaring more pixels are not read (`--max-pixels`).
    public var pixelLimit: Int

    public init(
        policy: ConsentPolicy, request: TransferRequest = TransferRequest(url: URL(string: "http://localhost/")!), siteTimeout: Duration? = nil,
        pixelLimit: Int = ImageValidator.defaultPixelLimit
    ) {
        self.policy = policy
        self.request = request
        self.siteTimeout = siteTimeout
        self.pixelLimit = pixelLimit
    }

    /// Each URL's explanation, in order.
    /// - Parameters:
    ///   - urls: `http` or `https` URLs.
    ///   - fetchingImages: Whether each image is requested too (where the site's files allow it), for its response's
    ///     signals and its own marks. Default false: only the site's files are requested.
    ///   - loader: The transport, or `nil` (the default) for a driver of the call's own.
    public func explain(_ urls: [URL], fetchingImages: Bool = false, loader: (any HTTPLoading)? = nil) async -> [ConsentExplanation] {
        let driver = loader == nil ? CurlMultiDriver() : nil
        defer { driver?.shutdown() }
        let loader = loader ?? driver!
        let notices = Locked<[String]>([])
        let files = policy.siteFiles
        let gate = files.isEmpty ? nil : SiteGate(
            loader: loader, agents: policy.robotsTag.agents, userAgent: request.userAgent, connectTo: request.connectTo,
            timeout: siteTimeout, files: files, onNotice: { notice in notices.withLock { $0.append(notice) } }
        )
        var explanations: [ConsentExplanation] = []
        for url in urls {
            var explanation = await explain(url, gate: gate, fetchingImage: fetchingImages, loader: loader)
            // One URL at a time: what the gate said on the way was said of this URL's origin.
            explanation.notes.insert(contentsOf: notices.withLock { notices in defer { notices = [] }; return notices }, at: 0)
            explanations.append(explanation)
        }
        return explanations
    }

    private func explain(_ url: URL, gate: SiteGate?, fetchingImage: Bool, loader: any HTTPLoading) async -> ConsentExplanation {
        var explanation = ConsentExplanation(url: url, purpose: policy.purpose, agents: policy.robotsTag.agents, siteFiles: policy.siteFiles)
        var evidence: [ConsentEvidence] = []
        if let gate, let files = await gate.siteFiles(for: url) {
            evidence = SiteGate.evidence(for: url, in: files)
            if policy.siteFiles.contains(.robots) {
                explanation.robots = Self.robots(files, url: url)
            }
            explanation.usage = files.robots.evidence(for: url).map { ConsentExplanation.Signal($0, policy: policy) }
            if policy.siteFiles.contains(.tdmrep), let match = files.tdmrep.rule(for: url) {
                let reserves = files.tdmrep.evidence(for: url).map { policy.reserves($0) } ?? false
                explanation.tdmrep = ConsentExplanation.TDMRepRule(
                    file: TDMRep.wellKnownPath, number: match.number, location: match.rule.location,
                    reservation: match.rule.reserved.map { $0 ? 1 : 0 }, policy: match.rule.policy, reserves: reserves
                )
            }
        }
        var imageUnavailable: String?
        if fetchingImage {
            if case .refused = policy.verdict(evidence) {
                explanation.notes.append("the image was not requested: its site's files decide already, and a run would not request it either")
            } else {
                let (read, problem) = await readImage(url, loader: loader, into: &explanation)
                evidence += read
                imageUnavailable = problem
            }
        }
        explanation.setAside = evidence.filter { policy.reserves($0) && policy.ignored.contains($0.signal) }
            .map { ConsentExplanation.Signal($0, policy: policy) }
        switch policy.verdict(evidence) {
        case let .refused(reservation) where reservation.evidence.term.isUnavailable:
            explanation.decision = .unknown
            explanation.unavailable = explanation.robots?.unavailable.map { "robots.txt could not be had (\($0))" } ?? reservation.evidence.value
        case let .refused(reservation):
            explanation.decision = .refused
            explanation.refusedBy = ConsentExplanation.Signal(reservation.evidence, policy: policy)
        case .allowed:
            if let imageUnavailable {
                explanation.decision = .unknown
                explanation.unavailable = "the image could not be had (\(imageUnavailable))"
            } else {
                explanation.decision = .allowed
            }
        }
        return explanation
    }

    /// robots.txt's say for `url`: each token's group and deciding rule; `nil` when the origin has no file.
    private static func robots(_ files: SiteGate.SiteFiles, url: URL) -> ConsentExplanation.Robots? {
        if let unavailable = files.robotsUnavailable {
            return ConsentExplanation.Robots(allowed: false, unavailable: unavailable.message, groups: [])
        }
        let rules = files.robots
        guard !rules.groups.isEmpty else { return nil }  // no file, or a 4xx for it
        let refusal = rules.refusal(for: url)
        let groups = zip(rules.groups, rules.decidingRules(for: url)).map { group, deciding in
            var read = ConsentExplanation.Robots.Group(
                token: group.token, group: group.name, rule: deciding.rule.map(Self.text), line: deciding.rule?.line,
                allowed: deciding.rule?.allow ?? true
            )
            // A URL whose matching would cost too much is refused without a rule to name.
            if let refusal, refusal.line == 0, refusal.group == group.label, deciding.rule == nil {
                (read.rule, read.allowed) = (refusal.rule, false)
            }
            return read
        }
        let deciding = groups.first { !$0.allowed } ?? groups.first { $0.rule != nil } ?? groups[0]
        return ConsentExplanation.Robots(
            group: deciding.group, rule: deciding.rule, line: deciding.line, allowed: groups.allSatisfy(\.allowed), groups: groups
        )
    }

    private static func text(_ rule: RobotsRules.Rule) -> String {
        (rule.allow ? "Allow: " : "Disallow: ") + rule.pattern
    }

    /// Requests the image, bounded as a download is, and reads its response's signals and its own marks into
    /// `explanation`; returns that evidence, in the order the download path reads it, and why there was no image to
    /// read, if there was none.
    private func readImage(_ url: URL, loader: any HTTPLoading, into explanation: inout ConsentExplanation) async -> ([ConsentEvidence], String?) {
        var request = request
        request.url = url
        request.destination = .memory
        let response: HTTPResponse
        do {
            response = try await loader.perform(request)
        } catch {
            explanation.image = ConsentExplanation.Image(problem: error.description)
            return ([], error.description)
        }
        var image = ConsentExplanation.Image(status: response.status)
        defer { explanation.image = image }
        guard response.isSuccess else {
            image.problem = "HTTP \(response.status)"
            return ([], "HTTP \(response.status)")
        }
        let headers = ResponseSignals.evidence(headers: response.headers, robotsTag: policy.robotsTag)
        explanation.headers = headers.map { ConsentExplanation.Signal($0, policy: policy) }
        let info: ImageInfo
        do {
            info = try ImageValidator(pixelLimit: pixelLimit, readsMarks: true).validate(response.body)
        } catch {
            image.problem = "not an image: \(error)"
            explanation.marks = []
            return (headers, nil)
        }
        (image.format, image.width, image.height) = (info.format.rawValue, info.width, info.height)
        let marks = ConsentPolicy.evidence(of: info.marks)
        explanation.marks = marks.map { ConsentExplanation.Signal($0, policy: policy) }
        return (headers + marks, nil)
    }
}
