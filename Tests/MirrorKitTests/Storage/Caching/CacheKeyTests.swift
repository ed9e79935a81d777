import Foundation
@testable import MirrorCore
@testable import MirrorFetch
@testable import MirrorKit
@testable import MirrorSearch
@testable import MirrorStorage
import Testing

@Suite("CacheKey normalization", .timeLimit(.minutes(5)))
struct CacheKeyTests {
    @Test("the same image with different tracking and key parameters gets the same key")
    func trackingAndSecretsDoNotChangeTheKey() {
        // Given the same image URL as three requests decorated it
        let plain = URL(string: "https://media.example.com/photos/cat.jpg?w=640&h=480")!
        let tracked = URL(string: "HTTPS://Media.Example.COM:443/photos/cat.jpg"
            + "?utm_source=feed&h=480&fbclid=abc&w=640&gclid=x#zoom")!
        let signed = URL(string: "https://media.example.com/photos/cat.jpg?api_key=K1&w=640&X-Amz-Signature=deadbeef"
            + "&h=480&X-Amz-Credential=AKIA&cid=giphy1&rid=200w&ep=v1&ct=g")!

        // When keys are made from them
        let keys = [plain, tracked, signed].map { CacheKey(url: $0) }

        // Then all three are one key with one file name
        #expect(Set(keys).count == 1)
        #expect(Set(keys.map(\.fileName)).count == 1)
        #expect(keys[0].normalizedURL == "https://media.example.com/photos/cat.jpg?h=480&w=640")
    }

    @Test("secrets appear neither in the normalized URL nor in the file name")
    func secretsAreAbsent() {
        // Given a URL carrying a secret in every place a secret can hide
        let secrets = ["SEKRET1", "SEKRET2", "SEKRET3", "SEKRET4", "SEKRET5", "SEKRET6", "SEKRET7", "SEKRET8"]
        let url = URL(string: "https://bob:SEKRET1@api.example.com/v1/search?q=cats&api_key=SEKRET2&key=SEKRET3"
            + "&access_token=SEKRET4&client_id=SEKRET5&sig=SEKRET6&X-Amz-Security-Token=SEKRET7&Token=SEKRET8")!

        // When a key is made from it
        let key = CacheKey(url: url)

        // Then nothing secret survives, and the file name is the digest of the normalized URL
        for secret in secrets {
            #expect(!key.normalizedURL.contains(secret))
            #expect(!key.description.contains(secret))
        }
        #expect(!key.normalizedURL.contains("bob"))
        #expect(key.normalizedURL == "https://api.example.com/v1/search?q=cats")
        #expect(key.fileName == sha256Hex(Data(key.normalizedURL.utf8)))
        #expect(key.fileName.count == 64)
        #expect(key.fileName.allSatisfy { "0123456789abcdef".contains($0) })
    }

    @Test("scheme and host are lowercased, default ports and fragments dropped, the path left alone")
    func normalizationRules() {
        // Given URLs that differ only in what normalization removes, and ones that differ in what it keeps
        let cases: [(String, String)] = [
            ("HTTP://Example.com:80", "http://example.com/"),
            ("http://example.com:8080/a", "http://example.com:8080/a"),
            ("https://example.com:80/a", "https://example.com:80/a"),
            ("https://example.com/Cat.JPG#frag", "https://example.com/Cat.JPG"),
            ("https://example.com/a?b=2&a=1&a=0", "https://example.com/a?a=0&a=1&b=2"),
            ("https://example.com/a?utm_source=x&UTM_MEDIUM=y", "https://example.com/a"),
            ("https://example.com/a%20b?q=x%26y", "https://example.com/a%20b?q=x%26y"),
        ]

        // When each is normalized / Then it reads as expected
        for (input, expected) in cases {
            #expect(CacheKey(url: URL(string: input)!).normalizedURL == expected, "\(input)")
        }
    }

    @Test("the shortcut for URLs that are normalized already agrees with URLComponents, and takes only those")
    func shortcutAgreesWithComponents() {
        // Given URLs the shortcut takes, and URLs it must leave to URLComponents
        let taken = [
            "http://127.0.0.1:8080/i000001.jpg", "https://example.com/a/b/c.png", "https://cdn.example.com/x_y-z~1.webp",
            "https://example.com/a%20b/c%2Fd.gif", "https://example.com:8443/p/q", "http://example.com/", "https://a-b.example/x,y;z=1",
            "https://example.com/@user/photo:1.jpg", "http://10.0.0.1:1/a",
        ]
        let left = [
            "HTTP://example.com/a", "https://Example.com/a", "https://example.com:443/a", "http://example.com:80/a",
            "http://example.com:0080/a", "https://example.com", "https://example.com/a?b=1", "https://example.com/a#f",
            "https://user:pass@example.com/a", "https://[::1]:8080/a", "https://example.com/./a", "https://example.com/a/../b",
            "https://example.com/a/.", "https://example.com/a/.../b", "ftp://example.com/a", "https://example.com:99999/a", "https://ex%41mple.com/a",
        ]

        // When each is normalized both ways / Then the shortcut takes the first list unchanged, gives up on the second,
        // and every key is what URLComponents makes
        for text in taken {
            let url = URL(string: text)!
            #expect(CacheKey.alreadyNormalized(url.absoluteString) == text, "\(text)")
            #expect(CacheKey(url: url).normalizedURL == CacheKey.normalizedByComponents(url), "\(text)")
        }
        for text in left {
            guard let url = URL(string: text) else { continue }
            #expect(CacheKey.alreadyNormalized(url.absoluteString) == nil, "\(text)")
            #expect(CacheKey(url: url).normalizedURL == CacheKey.normalizedByComponents(url), "\(text)")
        }
    }

    @Test("different images keep different keys")
    func distinctImagesStayDistinct() {
        // Given URLs that differ in path case, query value or port
        let urls = [
            "https://example.com/cat.jpg?w=640",
            "https://example.com/cat.jpg?w=320",
            "https://example.com/Cat.jpg?w=640",
            "https://example.com:8443/cat.jpg?w=640",
            "http://example.com/cat.jpg?w=640",
        ].map { URL(string: $0)! }

        // When keys are made / Then they are all different
        #expect(Set(urls.map { CacheKey(url: $0) }).count == urls.count)
    }

    @Test("extra query item names can be dropped, case-insensitively and even when percent-encoded")
    func extraDroppedNames() {
        // Given a provider whose `session` and `nonce` parameters vary per request
        let a = URL(string: "https://cdn.example.com/i.png?id=7&session=1&Nonce=9")!
        let b = URL(string: "https://cdn.example.com/i.png?id=7&sess%69on=2")!

        // When keys are made with and without the extra names
        let withExtras = [a, b].map { CacheKey(url: $0, droppingQueryItems: ["session", "NONCE"]) }
        let without = [a, b].map { CacheKey(url: $0) }

        // Then only the keys that drop them agree
        #expect(withExtras[0] == withExtras[1])
        #expect(withExtras[0].normalizedURL == "https://cdn.example.com/i.png?id=7")
        #expect(without[0] != without[1])
    }

    @Test("namespace keys never collide with URL keys")
    func namespaceKeys() {
        // Given a namespace key and a URL key with similar text
        let page = CacheKey(namespace: "openverse", string: "q=cats&page=2")
        let same = CacheKey(namespace: "openverse", string: "q=cats&page=2")
        let other = CacheKey(namespace: "wikimedia", string: "q=cats&page=2")
        let url = CacheKey(url: URL(string: "openverse:q=cats&page=2")!)

        // Then equal inputs are equal keys and the rest differ
        #expect(page == same)
        #expect(page.fileName == same.fileName)
        #expect(page != other)
        #expect(page != url)
        #expect(page.namespace == "openverse")
        #expect(url.namespace == nil)
    }
}
