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

        Exit codes: 0 done · 1 runtime failure · 3 sources exhausted before the count · 4 configuration or key error · \
        5 provider or network failure · 64 usage error · 75 folder locked by another run · 130 interrupted.
        """,
        version: MirrorKit.version,
        subcommands: [Search.self, Urls.self, Status.self, Gallery.self, History.self, Cache.self, Providers.self, Config.self, Hash.self],
        defaultSubcommand: Search.self
    )

    static func main() async {
        // A write beyond RLIMIT_FSIZE must fail with EFBIG (reported as a full disk, exit 1) rather than
        // kill the process with SIGXFSZ (whose default action is to terminate it, leaving no message).
        signal(SIGXFSZ, SIG_IGN)
        // glibc's resolver resends a lost query after `timeout` seconds, doubling it each try: 5 s by default, so under
        // a burst of new names one dropped UDP answer stalls its row 5 s (a local dnsmasq lost answers to 64 names at
        // once and the run waited on those time-outs). Resent after 1, 2 and 4 s instead (7 s before it gives up, half
        // the default's 15: a cold recursive look-up still has time). Set before any thread resolves a name; an
        // administrator's own RES_OPTIONS wins.
        setenv("RES_OPTIONS", "timeout:1 attempts:3", 0)
        MemoryPolicy.apply()
        // Defaults from the configuration file and MIRROR_* variables go in before the command line's own.
        var arguments: [String]
        do {
            arguments = try Settings.apply(to: Array(CommandLine.arguments.dropFirst()), environment: ProcessInfo.processInfo.environment)
        } catch let problem as Settings.Problem {
            printError(problem.description)
            Glibc.exit((problem.isUsage ? ExitStatus.usage : ExitStatus.configuration).rawValue)
        } catch {
            printError("\(error)")
            Glibc.exit(ExitStatus.configuration.rawValue)
        }
        arguments = Urls.normalizingRetryFailed(arguments)
        // Parsed once: a parse reflects over every option (2.4 ms of a one-row table's 23 ms of CPU).
        var command: any ParsableCommand
        do {
            command = try parseAsRoot(arguments)
        } catch {
            if let hint = searchHint(for: arguments, problem: error) {
                printError(hint)
                Glibc.exit(ExitStatus.usage.rawValue)
            }
            exit(withError: error)
        }
        do {
            if var command = command as? any AsyncParsableCommand {
                try await command.run()
            } else {
                try command.run()
            }
        } catch {
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
