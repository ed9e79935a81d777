import Foundation
import Testing

/// The layers of MirrorKit (ARCHITECTURE.md), kept honest: a folder refers only to types of its own layer and the
/// layers below it. MirrorKit is one SwiftPM target, so the compiler cannot see this; this test reads the sources.
@Suite("Layers")
struct LayerTests {
    /// Bottom to top, as ARCHITECTURE.md lists them.
    static let layers = ["Support", "Caching", "Output", "Download", "Providers", "Search", "Sources", "Pipeline", "Job", "Gallery"]

    static var root: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Sources/MirrorKit")
    }

    /// Every Swift file of MirrorKit with its layer (the first folder under `Sources/MirrorKit`) and its text.
    static func files() throws -> [(path: String, layer: String, text: String)] {
        let enumerator = FileManager.default.enumerator(at: root, includingPropertiesForKeys: nil)
        var files: [(String, String, String)] = []
        while let url = enumerator?.nextObject() as? URL {
            guard url.pathExtension == "swift" else { continue }
            let relative = String(url.path.dropFirst(root.path.count + 1))
            let layer = relative.split(separator: "/").first.map(String.init) ?? ""
            files.append((relative, layer, try String(contentsOf: url, encoding: .utf8)))
        }
        return files
    }

    /// The text without comments, string literals' contents left in (type names rarely appear there).
    static func code(_ text: String) -> String {
        text.split(separator: "\n", omittingEmptySubsequences: false).map { line in
            line.range(of: "//").map { String(line[..<$0.lowerBound]) } ?? String(line)
        }.joined(separator: "\n")
    }

    @Test func everyFolderIsALayer() throws {
        let folders = Set(try Self.files().map(\.layer)).subtracting(["MirrorKit.swift"])
        #expect(folders == Set(Self.layers), "folders not in ARCHITECTURE.md's layers: \(folders.subtracting(Self.layers))")
    }

    @Test func noLayerRefersToALayerAboveIt() throws {
        // Given the types each layer declares
        let files = try Self.files()
        let declaration = try Regex(#"(?m)^(?:(?:public|package|final|private|fileprivate|indirect|@\w+)\s+)*(?:struct|class|enum|protocol|typealias|actor)\s+(\w+)"#)
        var owner: [String: String] = [:]
        for file in files {
            for match in Self.code(file.text).matches(of: declaration) {
                if let name = match.output[1].substring { owner[String(name), default: file.layer] = file.layer }
            }
        }
        #expect(owner.count > 50, "found only \(owner.count) type declarations")
        let rank = Dictionary(uniqueKeysWithValues: Self.layers.enumerated().map { ($1, $0) })

        // Then no file names a type declared in a layer above its own
        var violations: [String] = []
        for file in files {
            guard let own = rank[file.layer] else { continue }
            let code = Self.code(file.text)
            let words = Set(code.split(whereSeparator: { !($0.isLetter || $0.isNumber || $0 == "_") }).map(String.init))
            for word in words {
                if let layer = owner[word], let above = rank[layer], above > own {
                    violations.append("\(file.path) uses \(word) (\(layer))")
                }
            }
        }
        #expect(violations.isEmpty, "\(violations.sorted().joined(separator: "\n"))")
    }
}
