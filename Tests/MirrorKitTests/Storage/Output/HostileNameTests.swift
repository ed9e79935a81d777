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

/// File names from hostile ids and titles: what `FileNaming` and `NameTemplate` make of them, and how the
/// committer keeps names apart. The end-to-end proof is `HostileInputTests` in mirrorTests.
@Suite("Hostile file names")
struct HostileNameTests {
    static func isSafe(_ name: String) -> Bool {
        !name.contains("/") && !name.contains("\\") && !name.contains("..") && !name.hasPrefix(".") && name.utf8.count <= FileNaming.maximumLength
            && !name.unicodeScalars.contains { [.control, .format].contains($0.properties.generalCategory) }
    }

    @Test(arguments: [
        ("../../etc/passwd", "etc-passwd.png"),
        ("a/b/c", "a-b-c.png"),
        ("nul\u{0}byte", "nul-byte.png"),
        ("rtl\u{202E}gnp.exe", "rtl-gnp.exe.png"),
        ("..", "image.png"),
        (".hidden", "hidden.png"),
        ("a..\u{301}b...c", "a.\u{301}b.c.png"),  // a combining mark on a dot once made sanitize loop for ever
    ])
    func aHostileStemBecomesASafeFlatName(stem: String, expected: String) {
        // Given a stem built to escape or deceive, When it is made a file name, Then it is flat, visible and plain
        let name = FileNaming.fileName(stem: stem, format: .png)
        #expect(name == expected)
        #expect(Self.isSafe(name))
    }

    @Test(arguments: ["CON", "con", "NUL", "com1", "LPT9", "_CON", "-aux-", "Con.txt"])
    func aReservedDeviceNameIsPrefixedEvenAfterTrimming(stem: String) {
        // `sanitize` prefixes `_`; the trim in `fileName` used to strip it again ("CON" → "CON.png")
        let name = FileNaming.fileName(stem: stem, format: .png)
        #expect(name.hasPrefix("_"), "\(name)")
        #expect(Self.isSafe(name))
    }

    @Test func aLongReservedNameKeepsItsPrefixWithinTheLimit() {
        // Given a stem that is a reserved device name, then far more than a name may hold
        let stem = "CON." + String(repeating: "a", count: 146)

        // When it is sanitised, Then the `_` it gains still fits
        let name = FileNaming.sanitize(stem)
        #expect(name.hasPrefix("_CON.") && name.utf8.count <= FileNaming.maximumLength, "\(name.utf8.count) bytes")
    }

    @Test func theShortcutForPlainStemsKeepsWhatTheFilterKeeps() {
        // Given every byte, and stems of random plain bytes with the edge cases the rest of sanitize handles
        var generator = SystemRandomNumberGenerator()
        let plain = (0...255).map(UInt8.init).filter(FileNaming.isPlain)
        #expect(String(decoding: plain, as: UTF8.self) == "-.0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz")
        var stems = ["openverse-1234", "000000042", "a..b", ".x.", "-_-", "con", "LPT1.x", ""]
        for _ in 0..<500 {
            stems.append(String(decoding: (0..<Int.random(in: 1...40, using: &generator)).map { _ in plain.randomElement(using: &generator)! }, as: UTF8.self))
        }
        for stem in stems {
            // Then the scalar filter the shortcut skips changes none of them
            #expect(FileNaming.kept(stem) == stem)
        }
        // And a byte outside the set still goes through it
        #expect(FileNaming.sanitize("a b") == "a-b")
        #expect(FileNaming.sanitize("a\u{7F}b") == "a-b")
    }

    @Test func aTemplateOfReservedTitleAndIdIsPrefixed() {
        let name = NameTemplate("{title}-{id}.{ext}").render(provider: "openverse", id: "com1", title: "LPT9.txt", index: 1, sha256: String(repeating: "a", count: 64), format: .png)
        #expect(name == "_LPT9.txt-_com1.png")
    }

    @Test func threeHundredCharactersAreCutToTheLimitKeepingTheExtension() {
        let name = NameTemplate("{title}-{id}.{ext}").render(
            provider: "openverse", id: String(repeating: "i", count: 300), title: String(repeating: "é", count: 300),
            index: 1, sha256: String(repeating: "a", count: 64), format: .jpeg
        )
        #expect(name.utf8.count <= FileNaming.maximumLength)
        #expect(name.hasSuffix(".jpg"))
        #expect(Self.isSafe(name))
    }

    @Test func namesThatDifferOnlyInCaseNeverBothAppear() async throws {
        // Given two images whose wanted names differ only in case
        let directory = TemporaryFolder()
        let folder = try OutputFolder(directory: directory.url)
        let committer = ImageCommitter(folder: folder, isSyncEnabled: false)
        var names: [String] = []
        for (seed, stem) in [(1, "Photo"), (2, "photo"), (3, "PHOTO")] {
            let data = TestImages.png(width: 4, height: 4, seed: UInt64(seed))
            let temporary = try AtomicFile.makeTemporary(in: directory.url)
            _ = data.withUnsafeBytes { write(temporary.descriptor, $0.baseAddress, $0.count) }
            close(temporary.descriptor)
            let image = VerifiedImage(
                url: URL(string: "http://x.test/\(seed)")!, effectiveURL: URL(string: "http://x.test/\(seed)")!, temporaryFile: temporary.url,
                info: try ImageValidator().validate(data), bytes: Int64(data.count), sha256: sha256Hex(data), source: .none, attempts: 1, fetchedAt: Date()
            )
            // When each is committed
            let outcome = await withCheckedContinuation { continuation in
                committer.commit(ImageCommitter.Item(
                    image: image, stem: stem,
                    record: { ManifestRecord(file: $0, url: image.url.absoluteString, width: 4, height: 4, bytes: image.bytes, sha256: image.sha256, format: "png", fetchedAt: image.fetchedAt) },
                    completion: { continuation.resume(returning: $0) }
                ))
            }
            guard case let .success(.saved(record, _)) = outcome else { Issue.record("not saved: \(outcome)"); continue }
            names.append(record.file)
        }
        // Then the first keeps its name and the others get a hash suffix: no two differ only in case
        #expect(names.first == "Photo.png")
        #expect(names.count == 3)
        #expect(Set(names.map { $0.lowercased() }).count == 3, "\(names)")
    }
}
