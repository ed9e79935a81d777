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

    /// One setting below the command line: `--json` prints these as they are.
    private struct Row: Encodable {
        /// The subcommand it is for (empty for a provider's key variable).
        var subcommand: String
        var option: String
        var value: String
        /// Where it comes from: the file's table, a variable.
        var from: String
    }

    /// What `--json` prints.
    private struct Report: Encodable {
        var file: String
        var exists: Bool
        var settings: [Row]
    }

    func run() throws {
        let environment = ProcessInfo.processInfo.environment
        let settings: Settings
        let rows: [Row]
        do {
            settings = try Settings(environment: environment)
            var list: [Row] = []
            for name in subcommand.map({ [$0] }) ?? Settings.subcommands.keys.sorted() {
                guard let command = Settings.command(named: name) else { continue }  // validate() refused other names
                // Later values win, as on the command line: show each option's winner.
                var winners: [String: Settings.Value] = [:]
                var order: [String] = []
                for value in try settings.values(for: name, options: Settings.options(of: command), environment: environment) {
                    if winners[value.option] == nil { order.append(value.option) }
                    winners[value.option] = value
                }
                for option in order {
                    guard let value = winners[option] else { continue }
                    list.append(Row(subcommand: name, option: "--" + option, value: value.text ?? "(on)", from: value.origin.description))
                }
            }
            for variable in settings.providerVariables {
                let overridden = !(environment[variable.name] ?? "").isEmpty
                let shown = Settings.isSecret(variable.name) ? "(set, not shown)" : variable.value
                let from = overridden ? "environment (over config file [\(variable.table)])" : "config file [\(variable.table)]"
                list.append(Row(subcommand: "", option: variable.name, value: shown, from: from))
            }
            rows = list
        } catch let problem as Settings.Problem {
            printError(problem.description)
            throw (problem.isUsage ? ExitStatus.usage : ExitStatus.configuration).exitCode
        }
        if json {
            printJSON(Report(file: settings.file.path, exists: settings.fileExists, settings: rows))
            return
        }
        print("config file: \(settings.file.path)\(settings.fileExists ? "" : " (none)")")
        if rows.isEmpty {
            print("no settings below the command line: every option has its built-in default")
            return
        }
        for row in rows {
            let name = row.subcommand.isEmpty ? row.option : "mirror \(row.subcommand) \(row.option)"
            print("\(Self.padded(name, to: 34)) \(Self.padded(row.value, to: 20)) \(row.from)")
        }
        print("(the command line overrides all of these)")
    }

    /// `text` with spaces up to `width`; a longer text whole (`padding(toLength:)` would cut a long User-Agent short).
    private static func padded(_ text: String, to width: Int) -> String {
        text.count >= width ? text : text.padding(toLength: width, withPad: " ", startingAt: 0)
    }
}
