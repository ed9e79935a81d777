import Foundation

/// What `mirror` does before argument-parser sees the command line, and why argument-parser cannot do it.
enum Invocation {
    /// Settings of the process that must be made before any thread starts.
    static func prepareProcess() {
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
    }

    /// The command line as argument-parser is to read it: the configuration file's and `MIRROR_*` variables' defaults
    /// put before the command line's own options (argument-parser reads only arguments), and `--retry-failed` with
    /// its value left out made `--retry-failed=transient` (argument-parser has no option whose value may be left out,
    /// and `--retry-failed all` must stay one option). Exits 64 or 4 with one line when the configuration is wrong.
    static func arguments() -> [String] {
        let arguments: [String]
        do {
            arguments = try Settings.apply(to: Array(CommandLine.arguments.dropFirst()), environment: ProcessInfo.processInfo.environment)
        } catch let problem as Settings.Problem {
            printError(problem.description)
            Glibc.exit((problem.isUsage ? ExitStatus.usage : ExitStatus.configuration).rawValue)
        } catch {
            printError("\(error)")
            Glibc.exit(ExitStatus.configuration.rawValue)
        }
        return Urls.normalizingRetryFailed(arguments)
    }
}
