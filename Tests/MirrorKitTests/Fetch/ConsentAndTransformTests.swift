import Foundation
@testable import MirrorCore
@testable import MirrorFetch
import MirrorImages
@testable import MirrorKit
@testable import MirrorModel
@testable import MirrorSearch
@testable import MirrorStorage
import MirrorTestSupport
import Testing

@Suite("X-Robots-Tag opt-out")
struct XRobotsTagTests {
    let reader = XRobotsTag()
    let policy = ConsentPolicy()

    /// Whether the policy refuses a response with these headers, and by which directive.
    private func refusal(_ headers: [(name: String, value: String)], policy: ConsentPolicy? = nil) -> String? {
        let policy = policy ?? self.policy
        guard case let .refused(reservation) = policy.verdict(ResponseSignals.evidence(headers: headers, robotsTag: policy.robotsTag)) else { return nil }
        return reservation.evidence.value
    }

    @Test(arguments: [
        ("noai", "noai"), ("NoImageAI", "noimageai"), ("nofollow, noindex", "noindex"), ("mirror: noimageindex", "noimageindex"),
        ("MIRROR: noai, nofollow", "noai"), ("noml", "noml"),
    ])
    func directivesForEveryAgentOrForMirrorOptOut(value: String, directive: String) {
        #expect(refusal([(name: "X-Robots-Tag", value: value)]) == directive)
    }

    @Test(arguments: ["nofollow", "googlebot: noai", "otherbot: noindex, noimageai", "unavailable_after: 25 Jun 2010 15:00:00 PST", "", "all"])
    func otherDirectivesAndOtherAgentsDoNot(value: String) {
        #expect(refusal([(name: "X-Robots-Tag", value: value)]) == nil)
        #expect(!reader.directives(value: value).contains("noai") || value.contains(":"))
    }

    @Test func everyHeaderIsReadAndOnlyTheGivenTokensCount() {
        let headers = [(name: "Content-Type", value: "image/png"), (name: "x-robots-tag", value: "googlebot: noai"), (name: "X-Robots-Tag", value: "noindex")]
        #expect(refusal(headers) == "noindex")
        var narrow = ConsentPolicy()
        narrow.setRobotsTagDirectives(["noai"])
        #expect(refusal(headers, policy: narrow) == nil)
    }

    @Test func eachDirectiveReservesItsPurposes() {
        // noai is about AI, noindex about search too, noarchive only about keeping a copy
        let headers = { (value: String) in [(name: "X-Robots-Tag", value: value)] }
        #expect(refusal(headers("noai"), policy: ConsentPolicy(purpose: .search)) == nil)
        #expect(refusal(headers("noindex"), policy: ConsentPolicy(purpose: .search)) == "noindex")
        #expect(refusal(headers("noai, noindex"), policy: ConsentPolicy(purpose: .archive)) == nil)
        #expect(refusal(headers("noarchive"), policy: ConsentPolicy(purpose: .archive)) == "noarchive")
        #expect(refusal(headers("noarchive")) == nil)
    }
}

@Suite("robots.txt rules (RFC 9309)")
struct RobotsRulesTests {
    private func url(_ path: String) -> URL { URL(string: "http://h.test" + path)! }

    @Test func theAgentsOwnGroupReplacesTheStarGroup() {
        let rules = RobotsRules(parsing: """
            User-agent: *
            Disallow: /

            # mirror may look at most things
            User-agent: othertool
            User-agent: Mirror
            Disallow: /private/   # not this
            Allow: /private/public
            """, agent: "mirror")
        #expect(rules.allows(url("/a.png")))
        #expect(!rules.allows(url("/private/b.png")))
        #expect(rules.allows(url("/private/public/c.png")))
        #expect(!RobotsRules(parsing: "User-agent: *\nDisallow: /\n", agent: "mirror").allows(url("/a.png")))
    }

    @Test func longestMatchWinsAndAllowWinsATie() {
        let rules = RobotsRules(parsing: "User-agent: *\nDisallow: /img\nAllow: /img/ok\nDisallow: /x\nAllow: /x\n", agent: "mirror")
        #expect(!rules.allows(url("/img/a.png")))
        #expect(rules.allows(url("/img/ok/a.png")))
        #expect(rules.allows(url("/x/a.png")))
    }

    @Test func wildcardsAndEndAnchors() {
        let rules = RobotsRules(parsing: "User-agent: *\nDisallow: /*.gif$\nDisallow: /tmp*/secret\nDisallow: /q?*private\n", agent: "mirror")
        #expect(!rules.allows(url("/a/b.gif")))
        #expect(rules.allows(url("/a/b.gif.png")))
        #expect(!rules.allows(url("/tmp123/secret/x.png")))
        #expect(!rules.allows(url("/q?x=private")))
        #expect(rules.allows(url("/q?x=public")))
    }

    @Test func emptyRulesAndNoGroupAllowEverything() {
        #expect(RobotsRules(parsing: "User-agent: mirror\nDisallow:\n\nUser-agent: *\nDisallow: /\n", agent: "mirror").allows(url("/a")))
        #expect(RobotsRules(parsing: "Sitemap: /s.xml\n", agent: "mirror").allows(url("/a")))
        #expect(!RobotsRules.disallowAll.allows(url("/a")))
    }
}

@Suite("Resizing")
struct ImageTransformTests {
    private let folder = TemporaryFolder()
    private let validator = ImageValidator()

    /// A verified image of `data` in a temporary file.
    private func image(_ data: Data) throws -> VerifiedImage {
        try folder.verifiedImage(data, validator: validator)
    }

    @Test(arguments: [
        (ImageTransform.Fit.longerSide, 64, 32), (.centerCrop, 64, 64), (.pad, 64, 64),
    ])
    func eachFitGivesItsSize(fit: ImageTransform.Fit, width: Int, height: Int) throws {
        // Given a 200×100 PNG
        let source = try image(TestImages.png(width: 200, height: 100, seed: 1))

        // When it is fitted into 64 px
        let result = try ImageTransform(fit: fit, size: 64).apply(to: source, validator: validator)
        defer { AtomicFile.remove(result.temporaryFile) }

        // Then it has the fit's size, stays a PNG, remembers its original size, and is the download's file rewritten
        #expect(result.info.width == width && result.info.height == height)
        #expect(result.info.format == .png)
        #expect(result.originalWidth == 200 && result.originalHeight == 100)
        #expect(result.temporaryFile == source.temporaryFile)
        let bytes = try Data(contentsOf: result.temporaryFile)
        #expect(Int64(bytes.count) == result.bytes && sha256Hex(bytes) == result.sha256)
    }

    @Test func aDownloadTheCacheAlsoHoldsIsNotRewritten() throws {
        // Given a download whose file has a second name, as when the disk cache links it
        let source = try image(TestImages.png(width: 200, height: 100, seed: 6))
        let cached = folder.url.appendingPathComponent("cached-object")
        #expect(link(source.temporaryFile.path, cached.path) == 0)
        let original = try Data(contentsOf: cached)

        // When it is resized
        let result = try ImageTransform(fit: .longerSide, size: 50).apply(to: source, validator: validator)
        defer { AtomicFile.remove(result.temporaryFile) }

        // Then the result is a new file, the download's name is gone, and the cache's bytes are untouched
        #expect(result.temporaryFile != source.temporaryFile && result.info.width == 50)
        #expect(!FileManager.default.fileExists(atPath: source.temporaryFile.path))
        #expect(try Data(contentsOf: cached) == original)
    }

    @Test func onlyIfBiggerLeavesSmallImagesTheirSizeAndEncodingChangesTheFormat() throws {
        let small = try image(TestImages.png(width: 40, height: 30, seed: 2))
        let kept = try ImageTransform(fit: .longerSide, size: 64, onlyIfBigger: true, encoding: .jpeg, quality: 80).apply(to: small, validator: validator)
        defer { AtomicFile.remove(kept.temporaryFile) }
        #expect(kept.info.width == 40 && kept.info.height == 30)
        #expect(kept.info.format == .jpeg)
        let webp = try ImageTransform(encoding: .webp).apply(to: try image(TestImages.png(width: 20, height: 20, seed: 3)), validator: validator)
        defer { AtomicFile.remove(webp.temporaryFile) }
        #expect(webp.info.format == .webp)
    }

    @Test func exifOrientationIsApplied() throws {
        // Given an 80×40 JPEG whose EXIF says "rotate 90° clockwise" (orientation 6)
        let plain = try ImageTransform(encoding: .jpeg).apply(to: try image(TestImages.png(width: 80, height: 40, seed: 4)), validator: validator)
        var jpeg = try Data(contentsOf: plain.temporaryFile)
        AtomicFile.remove(plain.temporaryFile)
        let tiff: [UInt8] = [0x4D, 0x4D, 0x00, 0x2A, 0x00, 0x00, 0x00, 0x08, 0x00, 0x01, 0x01, 0x12, 0x00, 0x03, 0x00, 0x00, 0x00, 0x01, 0x00, 0x06, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00]
        let payload = Array("Exif".utf8) + [0, 0] + tiff
        let segment: [UInt8] = [0xFF, 0xE1, UInt8((payload.count + 2) >> 8), UInt8((payload.count + 2) & 0xFF)] + payload
        jpeg.insert(contentsOf: segment, at: 2)

        // When it is re-encoded without a resize
        let result = try ImageTransform(encoding: .png).apply(to: try image(jpeg), validator: validator)
        defer { AtomicFile.remove(result.temporaryFile) }

        // Then it stands upright: 40×80
        #expect(result.info.width == 40 && result.info.height == 80)
        #expect(result.originalWidth == 80 && result.originalHeight == 40)
    }

    @Test func bytesLibvipsCannotReadAreAFailureNotACrash() throws {
        var broken = TestImages.png(width: 30, height: 30, seed: 5)
        broken.replaceSubrange(40..<broken.count, with: Data(repeating: 0, count: broken.count - 40))
        let source = VerifiedImage(
            url: URL(string: "http://h.test/a")!, effectiveURL: URL(string: "http://h.test/a")!,
            temporaryFile: try { let t = try AtomicFile.makeTemporary(in: folder.url); try broken.write(to: t.url); close(t.descriptor); return t.url }(),
            info: ImageInfo(format: .png, width: 30, height: 30), bytes: Int64(broken.count), sha256: "", source: .none, attempts: 1, fetchedAt: Date()
        )
        #expect(throws: ImageTransform.Failure.self) { try ImageTransform(fit: .centerCrop, size: 16).apply(to: source, validator: validator) }
        #expect(!FileManager.default.fileExists(atPath: source.temporaryFile.path))
    }
}
