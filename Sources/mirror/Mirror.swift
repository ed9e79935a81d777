import ArgumentParser
import Foundation
import MirrorKit

/// `mirror`: fills a folder with verified images found by a search query or listed in a URL file.
@main
struct Mirror: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "mirror",
        abstract: "Fill a folder with verified images from a search query or a URL list: concurrently, politely, exactly, resumably.",
        discussion: """
        Examples:
          mirror kittens --count 500 --out ./imgs
          mirror urls list.txt --out ./imgs
          mirror why https://example.org/a.jpg --user-agent "MyBot/1.0 (ops@example.org)"

        Exit codes: 0 done · 1 runtime failure · 3 sources exhausted before the count · 4 configuration or key error · \
        5 provider or network failure · 64 usage error · 65 malformed input (a table that cannot be split into rows) · \
        75 folder locked by another run · 130 interrupted.
        """,
        version: MirrorKit.version,
        subcommands: [Search.self, Urls.self, Status.self, Gallery.self, History.self, Cache.self, Providers.self, Config.self, Hash.self, Why.self],
        defaultSubcommand: Search.self
    )

    /// argument-parser's `main`, after the two things it cannot do (`Invocation`): the process's settings, and the
    /// arguments with the configuration file's defaults and a bare `--retry-failed` made explicit; and with a hint when
    /// a subcommand's name was meant as a search.
    static func main() async {
        Invocation.prepareProcess()
        let arguments = Invocation.arguments()
        do {
            var command = try parseAsRoot(arguments)
            if var asynchronous = command as? any AsyncParsableCommand {
                try await asynchronous.run()
            } else {
                try command.run()
            }
        } catch {
            if let hint = searchHint(for: arguments, problem: error) {
                printError(hint)
                Glibc.exit(ExitStatus.usage.rawValue)
            }
            exit(withError: error)
        }
    }

    /// When the first word names a subcommand but the line did not parse as one (`problem`) and would as a search
    /// (`mirror gallery --count 10 --out x`, a search for the word "gallery"), the error and how to search for the
    /// word; nil otherwise (the parser's own message is the better one then).
    static func searchHint(for arguments: [String], problem: any Error) -> String? {
        guard let word = arguments.first, word != Search._commandName,
              configuration.subcommands.contains(where: { $0._commandName == word }) else { return nil }
        guard (try? Search.parse(arguments)) != nil else { return nil }
        let line = (["mirror", "search"] + arguments).map(shellQuoted).joined(separator: " ")
        var reason = message(for: problem).trimmingCharacters(in: .whitespacesAndNewlines)
        if !(reason.hasSuffix(".") || reason.hasSuffix("?")) { reason += "." }
        return "`mirror \(word)`: \(reason) To search for the word \"\(word)\", run: \(line)"
    }

    /// A word as a POSIX shell reads it back: as it is when it is plain, else in single quotes.
    private static func shellQuoted(_ word: String) -> String {
        let plain = !word.isEmpty && word.unicodeScalars.allSatisfy { scalar in
            scalar.isASCII && (CharacterSet.alphanumerics.contains(scalar) || "-_./=:,@+%".unicodeScalars.contains(scalar))
        }
        return plain ? word : "'" + word.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }
}
