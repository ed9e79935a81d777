import ArgumentParser
import Foundation

/// `mirror config`: the settings in force below the command line, and where each came from.
struct Config: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show the defaults the configuration file and MIRROR_* variables give each subcommand, and where each came from.",
        discussion: """
        The file is $MIRROR_CONFIG, else $XDG_CONFIG_HOME/mirror/config.toml, else ~/.config/mirror/config.toml. \
        Top-level keys are defaults for every subcommand with that option (by its long name: concurrency = 32); \
        a [urls], [search], … table is for one subcommand; [providers.NAME] sets a provider's variables \
        (FLICKR_API_KEY = "…"), which the environment overrides — a key, secret or token there is refused unless \
        the file's mode is 0600. MIRROR_<OPTION> variables (MIRROR_PER_HOST=2) override the file; the command line \
        overrides both. Secret values are never printed.

        Exit codes: 0 shown · 4 the file holds a key but others can read it · 64 the file does not parse or names no option.
        """
    )

    @Argument(help: "Show only this subcommand's settings (search, urls, status, gallery, …).")
    var subcommand: String?

    @Flag(help: "Print JSON.")
    var json = false

    func validate() throws {
        if let subcommand, Settings.command(named: subcommand) == nil {
            throw ValidationError("no subcommand \(subcommand): one of \(Settings.subcommands.keys.sorted().joined(separator: ", "))")
        }
    }

    func run() throws {
        let environment = ProcessInfo.processInfo.environment
        let settings: Settings
        let rows: [[String: String]]
        do {
            settings = try Settings(environment: environment)
            var list: [[String: String]] = []
            for name in subcommand.map({ [$0] }) ?? Settings.subcommands.keys.sorted() {
                let command = Settings.command(named: name)!
                // Later values win, as on the command line: show each option's winner.
                var winners: [String: Settings.Value] = [:]
                var order: [String] = []
                for value in try settings.values(for: name, options: Settings.options(of: command), environment: environment) {
                    if winners[value.option] == nil { order.append(value.option) }
                    winners[value.option] = value
                }
                for option in order {
                    let value = winners[option]!
                    list.append(["subcommand": name, "option": "--" + option, "value": value.text ?? "(on)", "from": value.origin.description])
                }
            }
            for variable in settings.providerVariables {
                let overridden = !(environment[variable.name] ?? "").isEmpty
                let shown = Settings.isSecret(variable.name) ? "(set, not shown)" : variable.value
                list.append(["subcommand": "", "option": variable.name, "value": shown, "from": overridden ? "environment (over config file [\(variable.table)])" : "config file [\(variable.table)]"])
            }
            rows = list
        } catch let problem as Settings.Problem {
            printError(problem.description)
            throw (problem.isUsage ? ExitStatus.usage : ExitStatus.configuration).exitCode
        }
        if json {
            let object: [String: Any] = ["file": settings.file.path, "exists": settings.fileExists, "settings": rows]
            FileHandle.standardOutput.write(try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]) + Data("\n".utf8))
            return
        }
        print("config file: \(settings.file.path)\(settings.fileExists ? "" : " (none)")")
        if rows.isEmpty {
            print("no settings below the command line: every option has its built-in default")
            return
        }
        for row in rows {
            let name = row["subcommand"]!.isEmpty ? row["option"]! : "mirror \(row["subcommand"]!) \(row["option"]!)"
            print("\(Self.padded(name, to: 34)) \(Self.padded(row["value"]!, to: 20)) \(row["from"]!)")
        }
        print("(the command line overrides all of these)")
    }

    /// `text` with spaces up to `width`; a longer text whole (`padding(toLength:)` would cut a long User-Agent short).
    private static func padded(_ text: String, to width: Int) -> String {
        text.count >= width ? text : text.padding(toLength: width, withPad: " ", startingAt: 0)
    }
}
