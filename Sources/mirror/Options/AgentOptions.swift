import ArgumentParser
import Foundation
import MirrorKit

/// Who a run says it is: the `User-Agent` of every request (API calls, robots.txt and the TDMRep file, images), and so
/// the product tokens whose robots.txt groups and `X-Robots-Tag` directives it obeys.
struct AgentOptions: ParsableArguments {
    @Option(help: ArgumentHelp(
        "The User-Agent of every request: API calls, robots.txt and tdmrep.json, images (default: mirror/<version> libcurl/<version>).",
        discussion: "Name your project and how to reach you, as Wikimedia's User-Agent policy asks: --user-agent \"MyDatasetBot/1.0 (https://example.org/bot; ops@example.org)\". A run answers to the agent's product token (its first word up to a character other than a letter, _ or -: mydatasetbot) and to mirror: the robots.txt groups and X-Robots-Tag directives addressed to either are obeyed. At most \(MirrorVersion.maximumUserAgentBytes) bytes, no control characters.",
        valueName: "text"
    ))
    var userAgent: String?

    func validate() throws {
        if let userAgent, let problem = MirrorVersion.problem(withUserAgent: userAgent) {
            throw ValidationError("--user-agent \(problem)")
        }
    }

    /// The `User-Agent` sent.
    var effectiveUserAgent: String { userAgent ?? MirrorVersion.userAgent }

    /// The product tokens the run answers to: the agent's, then `mirror`.
    var agents: [String] { ConsentPolicy.agents(forUserAgent: effectiveUserAgent) }

    /// Sends the agent with every download and site file, and reads robots.txt and `X-Robots-Tag` for its tokens.
    func apply(to downloads: inout DownloadManager.Configuration, consent: inout ConsentPolicy) {
        downloads.userAgent = effectiveUserAgent
        consent.robotsTag = XRobotsTag(agents: agents)
    }
}
