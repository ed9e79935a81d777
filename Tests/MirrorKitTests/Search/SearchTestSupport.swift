import Foundation
@testable import MirrorCore
@testable import MirrorFetch
@testable import MirrorKit
@testable import MirrorSearch
@testable import MirrorStorage
import Testing

/// Loads the recorded API samples in `Tests/MirrorKitTests/Fixtures/<api>/` (declared as a `.copy` resource).
enum Fixture {
    static var root: URL {
        get throws { try #require(Bundle.module.url(forResource: "Fixtures", withExtension: nil)) }
    }

    static func data(_ path: String) throws -> Data {
        try Data(contentsOf: root.appendingPathComponent(path))
    }

    static func response(_ path: String, status: Int = 200, headers: [String: String] = [:]) throws -> APIResponse {
        APIResponse(status: status, headers: headers, body: try data(path))
    }

    /// The fixture parsed independently with JSONSerialization, to cross-check counts.
    static func object(_ path: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: data(path)) as? [String: Any])
    }

    /// Every file of one API's folder except `SOURCES.md`.
    static func files(in folder: String) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: root.appendingPathComponent(folder).path)
            .filter { $0 != "SOURCES.md" }
            .sorted()
    }
}

func response(_ status: Int, _ body: String, headers: [String: String] = [:]) -> APIResponse {
    APIResponse(status: status, headers: headers, body: Data(body.utf8))
}

/// Runs `work` and returns the ``ProviderError`` it threw, or `nil` when it succeeded.
///
/// (The closure is untyped because closure literals do not infer `throws(ProviderError)` yet; any other
/// error type is recorded as a test failure.)
func providerError<T>(_ work: () throws -> T, sourceLocation: SourceLocation = #_sourceLocation) -> ProviderError? {
    do {
        _ = try work()
        return nil
    } catch let error as ProviderError {
        return error
    } catch {
        Issue.record("expected a ProviderError, got \(error)", sourceLocation: sourceLocation)
        return nil
    }
}

func queryItems(_ url: URL) -> [String: String] {
    var items: [String: String] = [:]
    for item in URLComponents(url: url, resolvingAgainstBaseURL: false)?.queryItems ?? [] {
        items[item.name] = item.value ?? ""
    }
    return items
}

func queryNames(_ url: URL) -> [String] {
    URLComponents(url: url, resolvingAgainstBaseURL: false)?.queryItems?.map(\.name) ?? []
}

extension ProviderError {
    /// The case, with the variable for authentication errors: a compact value to compare in tests.
    var kind: String {
        switch self {
        case .authentication(let variable, _): return "authentication(\(variable))"
        case .configuration: return "configuration"
        case .rateLimited: return "rateLimited"
        case .transient: return "transient"
        case .permanent: return "permanent"
        }
    }

    var retryAfter: Duration? {
        if case .rateLimited(let retryAfter, _) = self { return retryAfter }
        return nil
    }
}

/// Extracts interactions from a VCR/vcrpy YAML cassette without a YAML library: enough of the format for
/// single-quoted, folded `string:` bodies (`''` is a quote; a line break folds to a space, an empty line to `\n`).
enum Cassette {
    struct Interaction {
        var uri: String
        var status: Int
        var body: String
    }

    static func interactions(_ path: String) throws -> [Interaction] {
        let text = String(decoding: try Fixture.data(path), as: UTF8.self)
        let lines = text.components(separatedBy: "\n")
        var interactions: [Interaction] = []
        var uri = ""
        var status = 0
        var sawResponse = false
        var index = 0
        while index < lines.count {
            let line = lines[index]
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if line.hasPrefix("- request:") {
                sawResponse = false
            } else if trimmed.hasPrefix("uri: ") {
                uri = String(trimmed.dropFirst(5)).trimmingCharacters(in: CharacterSet(charactersIn: "\""))
            } else if trimmed == "response:" {
                sawResponse = true
            } else if sawResponse, trimmed.hasPrefix("code: ") {
                status = Int(trimmed.dropFirst(6)) ?? 0
            } else if sawResponse, trimmed.hasPrefix("string: '") {
                let (body, next) = singleQuoted(lines, start: index, first: String(trimmed.dropFirst("string: '".count)))
                interactions.append(Interaction(uri: uri, status: status, body: body))
                index = next
                sawResponse = false
            }
            index += 1
        }
        return interactions
    }

    private static func singleQuoted(_ lines: [String], start: Int, first: String) -> (String, Int) {
        var result = ""
        var fragment = Array(first)
        var index = start
        while true {
            var position = 0
            while position < fragment.count {
                let character = fragment[position]
                if character == "'" {
                    if position + 1 < fragment.count, fragment[position + 1] == "'" {
                        result.append("'")
                        position += 2
                        continue
                    }
                    return (result, index)
                }
                result.append(character)
                position += 1
            }
            while result.last == " " { result.removeLast() }
            var emptyLines = 0
            index += 1
            while index < lines.count, lines[index].trimmingCharacters(in: .whitespaces).isEmpty {
                emptyLines += 1
                index += 1
            }
            guard index < lines.count else { return (result, index) }
            result += emptyLines == 0 ? " " : String(repeating: "\n", count: emptyLines)
            fragment = Array(lines[index].drop(while: { $0 == " " }))
        }
    }
}
