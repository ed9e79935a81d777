import Foundation
import MirrorCore
import MirrorStorage

/// Which `X-Robots-Tag` directives keep an image out of the collection.
///
/// By default an image whose response says `noai`, `noimageai`, `noindex` or `noimageindex` — for every agent, or
/// for mirror's product token (`X-Robots-Tag: mirror: noai`) — is not saved and is counted as `opted_out`. Directives
/// addressed to another agent (`googlebot: noindex`) do not apply.
public struct OptOutPolicy: Sendable, Hashable {
    /// The directives that opt an image out, lowercase.
    public var tokens: Set<String>
    /// The product token directives may be addressed to. Default `mirror`.
    public var agent: String

    /// The default directives.
    public static let defaultTokens: Set<String> = ["noai", "noimageai", "noindex", "noimageindex"]

    public init(tokens: Set<String> = OptOutPolicy.defaultTokens, agent: String = "mirror") {
        self.tokens = Set(tokens.map { $0.lowercased() })
        self.agent = agent.lowercased()
    }

    /// The directive that opts the response out, as the server wrote it (`noai`), or `nil`.
    public func refusal(headers: [(name: String, value: String)]) -> String? {
        for header in headers where header.name.equalsIgnoringASCIICase("x-robots-tag") {
            if let found = refusal(value: header.value) { return found }
        }
        return nil
    }

    /// The opting-out directive of one `X-Robots-Tag` value, or `nil`.
    ///
    /// A value is a list of comma-separated directives, optionally preceded by `agent:` (Google's form); a directive
    /// with its own colon (`unavailable_after: …`) is not an agent.
    package func refusal(value: String) -> String? {
        var directives = Substring(value)
        if let colon = value.firstIndex(of: ":") {
            let head = value[..<colon].trimmingCharacters(in: .whitespaces).lowercased()
            let isAgent = !head.isEmpty && !head.contains(",") && !head.contains(" ") && !Self.directivesWithValues.contains(head)
            if isAgent {
                guard head == agent else { return nil }
                directives = value[value.index(after: colon)...]
            }
        }
        for directive in directives.split(separator: ",") {
            let token = directive.trimmingCharacters(in: .whitespaces).lowercased()
            if tokens.contains(token) { return token }
        }
        return nil
    }

    private static let directivesWithValues: Set<String> = ["unavailable_after", "max-snippet", "max-image-preview", "max-video-preview"]
}
