import ArgumentParser
import Foundation
import MirrorKit

/// `mirror why URL…`: every signal mirror would consult for a URL, and the decision (``ConsentInspector``).
struct Why: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Explain, for each URL, every reservation of its owner's that mirror reads, and whether it may be collected for the purpose.",
        discussion: """
        The site's files are fetched afresh (robots.txt, then /.well-known/tdmrep.json where it counts for the purpose), \
        as a run would fetch them: with its User-Agent, --connect-to and --timeout; the image itself is not requested. \
        For each URL: each product token's robots.txt group (group for TOKEN, group *, or no group) with the rule that \
        decides and its line, the Content-Signal and Content-Usage lines that apply, the TDMRep file's rule (its number \
        and location), then the decision: allowed, refused by SIGNAL VALUE (LOCATION), or not known. Reservations set \
        aside by --ignore-opt-out are listed. With --fetch the image is requested too (only where robots.txt and the \
        site's files let mirror fetch it, bounded as a download is, saved nowhere): its response's X-Robots-Tag, \
        Content-Usage and tdm-reservation headers and its own XMP and C2PA marks join the evidence.

        Exit codes: 0 every URL may be collected for the purpose · 3 at least one is refused · 5 a site file (or, with \
        --fetch, the image) could not be had for at least one, and none is refused · 64 usage (a URL that is not http \
        or https).
        """
    )

    @Argument(help: "The image URLs (http or https).")
    var urls: [String]

    @OptionGroup(title: "What the owner reserved") var reservations: ReservationOptions
    @OptionGroup var agent: AgentOptions
    @OptionGroup var transfer: TransferOptions

    @Flag(help: "Request the image too, for its response's headers and its own marks (nothing is saved).")
    var fetch = false

    @Flag(help: "Print a JSON array, one object per URL: url, purpose, agents, robots, usage, tdmrep, headers and marks (with --fetch), decision, refusedBy, unavailable, setAside, notes.")
    var json = false

    func validate() throws {
        guard !urls.isEmpty else { throw ValidationError("give at least one URL") }
        for text in urls {
            guard let url = URL(string: text), ["http", "https"].contains(url.scheme?.lowercased() ?? ""), url.host?.isEmpty == false else {
                throw ValidationError("\(text.cut(to: MessageLimit.line / 2)) is not an http or https URL")
            }
        }
    }

    func run() async throws {
        var downloads = DownloadManager.Configuration()
        transfer.apply(to: &downloads)
        var policy = reservations.policy
        agent.apply(to: &downloads, consent: &policy)
        let inspector = ConsentInspector(policy: policy, downloads: downloads)
        let urls = urls.compactMap(URL.init(string:))
        let fetch = fetch
        let (explanations, interrupted) = try await runInterruptibly(renderer: ProgressRenderer(mode: .quiet, target: nil)) {
            await inspector.explain(urls, fetchingImages: fetch)
        }
        if interrupted { throw ExitStatus.interrupted.exitCode }
        if json {
            printJSON(explanations)
        } else {
            print(explanations.map { $0.lines.joined(separator: "\n") }.joined(separator: "\n\n"))
        }
        let decisions = Set(explanations.map(\.decision))
        throw (decisions.contains(.refused) ? ExitStatus.exhausted : decisions.contains(.unknown) ? ExitStatus.unavailable : ExitStatus.success).exitCode
    }
}
