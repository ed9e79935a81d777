import Foundation
import MirrorConsent
import MirrorFetch
import MirrorTransport
import Testing

/// What a `User-Agent` may be, and which product tokens a run sending it answers to.
@Suite("User-Agent")
struct UserAgentTests {
    @Test("the agent's product token, then mirror", arguments: [
        ("MyCrawler/1.0 (+mailto:ops@example.org)", ["mycrawler", "mirror"]),
        ("TestBot/2.0 (ops@example.org)", ["testbot", "mirror"]),
        ("my_bot-2 x", ["my_bot-", "mirror"]),  // a digit ends the token, as RFC 9309's grammar and Google's parser read it
        ("Mirror/9", ["mirror"]),
        ("/1.0 no token", ["mirror"]),
        (MirrorVersion.userAgent, ["mirror"]),
    ])
    func agents(userAgent: String, expected: [String]) {
        #expect(ConsentPolicy.agents(forUserAgent: userAgent) == expected)
    }

    @Test func aUserAgentIsOneLineOfAtMost512Bytes() {
        #expect(MirrorVersion.problem(withUserAgent: "MyDatasetBot/1.0 (https://example.org/bot; ops@example.org)") == nil)
        #expect(MirrorVersion.problem(withUserAgent: String(repeating: "a", count: 512)) == nil)
        #expect(MirrorVersion.problem(withUserAgent: "Bot/1 (é)") == nil)
        #expect(MirrorVersion.problem(withUserAgent: String(repeating: "a", count: 513)) == "is 513 bytes long; at most 512")
        #expect(MirrorVersion.problem(withUserAgent: "Bot/1\r\nX: y")?.hasPrefix("holds a control character (U+000D, character 6)") == true)
        #expect(MirrorVersion.problem(withUserAgent: "Bot\t1")?.hasPrefix("holds a control character (U+0009") == true)
        #expect(MirrorVersion.problem(withUserAgent: "Bot\u{85}")?.hasPrefix("holds a control character (U+0085") == true)
        #expect(MirrorVersion.problem(withUserAgent: "")?.hasPrefix("is empty") == true)
        #expect(MirrorVersion.problem(withUserAgent: "  ")?.hasPrefix("is empty") == true)
    }
}
