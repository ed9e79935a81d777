import ArgumentParser
import Foundation
import TOMLKit

/// Defaults for mirror's options from a configuration file and the environment, below the command line.
///
/// `$MIRROR_CONFIG`, else `$XDG_CONFIG_HOME/mirror/config.toml`, else `~/.config/mirror/config.toml`:
///
/// ```toml
/// concurrency = 32            # any option of any subcommand, by its long name, for every subcommand that has it
/// user_agent = "MyBot/1.0 (ops@example.org)"   # `_` for `-` as TOML files usually spell keys: --user-agent
/// [urls]                      # options for one subcommand
/// format = "webdataset"
/// [providers.flickr]          # a provider's variables (keys only from a file private to its owner: mode 0600)
/// FLICKR_API_KEY = "…"
/// ```
///
/// An option may also come from the environment as `MIRROR_<NAME>` (`MIRROR_PER_HOST=2`). Precedence: the file <
/// the environment < the command line. The values become arguments placed before the command line's own, and the
/// last value of an option wins; a provider variable already in the environment is left as it is.
struct Settings {
    /// Where one option's value came from.
    enum Origin: CustomStringConvertible {
        case file(table: String), environment(String)

        var description: String {
            switch self {
            case let .file(table): table.isEmpty ? "config file" : "config file [\(table)]"
            case let .environment(name): "environment \(name)"
            }
        }
    }

    struct Value {
        var option: String
        /// The option's value; `nil` for a flag that is on.
        var text: String?
        var origin: Origin
    }

    /// A file that cannot be used: one line, exit 4 (or 64 for a key that is no option).
    struct Problem: Error, CustomStringConvertible {
        var description: String
        var isUsage = false
    }

    let file: URL
    private(set) var fileExists = false
    /// Top-level and per-subcommand option values from the file.
    private var fileOptions: [String: [(String, TOMLValueConvertible)]] = [:]
    /// Provider variables from the file (`[providers.NAME]`), with their table.
    private(set) var providerVariables: [(table: String, name: String, value: String)] = []

    /// The file's location for an environment.
    static func location(_ environment: [String: String]) -> URL {
        if let explicit = environment["MIRROR_CONFIG"], !explicit.isEmpty { return URL(fileURLWithPath: explicit) }
        let base = environment["XDG_CONFIG_HOME"].flatMap { $0.isEmpty ? nil : URL(fileURLWithPath: $0) }
            ?? FileManager.default.homeDirectoryForCurrentUser.appendingPathComponent(".config")
        return base.appendingPathComponent("mirror/config.toml")
    }

    /// Reads the file (a missing file is an empty one).
    init(environment: [String: String]) throws {
        file = Self.location(environment)
        guard let text = try? String(contentsOf: file, encoding: .utf8) else { return }
        fileExists = true
        let table: TOMLTable
        do {
            table = try TOMLTable(string: text)
        } catch let error as TOMLParseError {
            throw Problem(description: "\(file.path):\(error.source.begin.line): \(error.description); fix the file or move it away", isUsage: true)
        }
        for (key, value) in table {
            if let section = value.table {
                if key == "providers" {
                    for (provider, settings) in section {
                        guard let settings = settings.table else { throw Problem(description: "\(file.path): [providers.\(provider)] must be a table", isUsage: true) }
                        for (name, value) in settings {
                            guard let text = Self.text(value) else { throw Problem(description: "\(file.path): [providers.\(provider)] \(name) must be a string or number", isUsage: true) }
                            providerVariables.append(("providers.\(provider)", name, text))
                        }
                    }
                } else {
                    fileOptions[key, default: []] += section.map { ($0.0, $0.1) }
                }
            } else {
                fileOptions["", default: []].append((key, value))
            }
        }
        try checkSecrets()
    }

    /// A key, secret or token in the file is refused unless the file is private to its owner.
    private func checkSecrets() throws {
        let secrets = providerVariables.filter { Self.isSecret($0.name) }
        guard let first = secrets.first else { return }
        var status = stat()
        guard stat(file.path, &status) == 0 else { return }
        let mode = status.st_mode & 0o777
        guard mode & 0o077 == 0, status.st_uid == getuid() else {
            throw Problem(description: "\(file.path) holds \(first.name) but is readable by others (mode \(String(mode, radix: 8))): chmod 600 \(file.path), or keep the key in the environment")
        }
    }

    static func isSecret(_ name: String) -> Bool {
        let upper = name.uppercased()
        return ["KEY", "SECRET", "TOKEN", "PASSWORD"].contains { upper.contains($0) }
    }

    private static func text(_ value: TOMLValueConvertible) -> String? {
        if let string = value.string { return string }
        if let int = value.int { return String(int) }
        if let double = value.double { return String(double) }
        if let bool = value.bool { return String(bool) }
        return nil
    }

    /// The values for a subcommand whose options are `options` (long names), lowest precedence first: the file's
    /// top level, its `[subcommand]` table, then the environment.
    func values(for subcommand: String, options: Set<String>, environment: [String: String]) throws -> [Value] {
        var values: [Value] = []
        for (table, entries) in [("", fileOptions[""] ?? []), (subcommand, fileOptions[subcommand] ?? [])] {
            for (written, raw) in entries {
                // TOML's usual spelling of a long name (`user_agent`) is the option's (`user-agent`).
                let key = written.replacingOccurrences(of: "_", with: "-")
                guard options.contains(key) else {
                    if table.isEmpty { continue }  // a top-level default for another subcommand's option
                    throw Problem(description: "\(file.path): [\(table)] \(written) is not an option of mirror \(subcommand) (see mirror \(subcommand) --help)", isUsage: true)
                }
                if let flag = raw.bool {
                    if flag { values.append(Value(option: key, text: nil, origin: .file(table: table))) }
                } else if let text = Self.text(raw) {
                    values.append(Value(option: key, text: text, origin: .file(table: table)))
                } else if let array = raw.array {
                    for element in array { if let text = Self.text(element) { values.append(Value(option: key, text: text, origin: .file(table: table))) } }
                }
            }
        }
        for option in options.sorted() {
            let name = "MIRROR_" + option.uppercased().replacingOccurrences(of: "-", with: "_")
            guard let text = environment[name], !text.isEmpty else { continue }
            if ["true", "1", "yes"].contains(text.lowercased()) && !Self.takesValue(option, subcommand: subcommand) {
                values.append(Value(option: option, text: nil, origin: .environment(name)))
            } else if !["false", "0", "no"].contains(text.lowercased()) || Self.takesValue(option, subcommand: subcommand) {
                values.append(Value(option: option, text: text, origin: .environment(name)))
            }
        }
        return values
    }

    /// Whether an option takes a value (from the subcommand's help: `--name <value>`).
    static func takesValue(_ option: String, subcommand: String) -> Bool {
        guard let command = command(named: subcommand) else { return true }
        return help(of: command).contains("--\(option) <")
    }

    // MARK: The subcommands' options

    static let subcommands: [String: ParsableCommand.Type] = [
        "search": Search.self, "urls": Urls.self, "status": Status.self, "gallery": Gallery.self,
        "history": History.self, "cache": Cache.self, "providers": Providers.self, "why": Why.self,
    ]

    static func command(named name: String) -> ParsableCommand.Type? { subcommands[name] }

    private static func help(of command: ParsableCommand.Type) -> String {
        Mirror.helpMessage(for: command, includeHidden: true, columns: 10_000)
    }

    /// The long option names a subcommand takes, read from its help.
    static func options(of command: ParsableCommand.Type) -> Set<String> {
        let help = help(of: command)
        var names = Set<String>()
        var scanner = help[...]
        while let range = scanner.range(of: "--") {
            let rest = scanner[range.upperBound...]
            let name = rest.prefix { $0.isLetter || $0.isNumber || $0 == "-" }
            if name.count > 1 { names.insert(String(name)) }
            scanner = rest
        }
        return names.subtracting(["help", "version", "generate-completion-script", "experimental-dump-help"])
    }

    // MARK: Applying

    /// The command line with the file's and the environment's values placed before the user's own, and the
    /// provider variables exported (where the environment has none).
    static func apply(to arguments: [String], environment: [String: String]) throws -> [String] {
        let settings = try Settings(environment: environment)
        guard arguments.first != "config" else { return arguments }  // it shows the settings as they are
        for variable in settings.providerVariables where (environment[variable.name] ?? "").isEmpty {
            setenv(variable.name, variable.value, 1)
        }
        guard let first = arguments.first, !["--help", "-h", "--version", "--generate-completion-script", "--experimental-dump-help", "help", "config"].contains(first) else {
            return arguments
        }
        let (name, rest) = subcommands[first] != nil ? (first, Array(arguments.dropFirst())) : ("search", arguments)
        guard let command = command(named: name) else { return arguments }
        let values = try settings.values(for: name, options: options(of: command), environment: environment)
        guard !values.isEmpty else { return arguments }
        let injected = values.flatMap { value in ["--" + value.option] + (value.text.map { [$0] } ?? []) }
        return (subcommands[first] != nil ? [first] : []) + injected + rest
    }
}
