import Foundation
import MirrorTestSupport
import Testing

/// Shell completions come from argument-parser's generator; these check that the binary emits them (also with a
/// configuration file whose values are placed before the command line) and that bash can load and use its script.
@Suite("completion scripts, end to end")
struct CompletionScriptTests {
    @Test(arguments: ["bash", "zsh", "fish"])
    func everyShellGetsAScriptNamingEverySubcommand(_ shell: String) async throws {
        let work = TemporaryFolder()
        let config = work.file("config.toml")
        try "concurrency = 32\n[urls]\nformat = \"webdataset\"\n".write(to: config, atomically: true, encoding: .utf8)
        let run = try await MirrorBinary.run(["--generate-completion-script", shell], environment: ["MIRROR_CONFIG": config.path])
        #expect(run.status == 0, "\(run.stderr)")
        for word in ["gallery", "config", "status", "shard-by", "page-size"] {
            #expect(run.stdout.contains(word), "the \(shell) script does not mention \(word)")
        }
    }

    @Test func bashLoadsItsScriptAndOffersTheSubcommands() async throws {
        let work = TemporaryFolder()
        let run = try await MirrorBinary.run(["--generate-completion-script", "bash"])
        #expect(run.status == 0)
        let script = work.file("mirror.bash")
        try run.stdout.write(to: script, atomically: true, encoding: .utf8)

        let bash = Process()
        bash.executableURL = URL(fileURLWithPath: "/bin/bash")
        bash.arguments = ["-c", """
            set -e
            source "$1"
            COMP_WORDS=(mirror ''); COMP_CWORD=1; COMP_LINE='mirror '; COMP_POINT=${#COMP_LINE}
            _mirror
            printf '%s\\n' "${COMPREPLY[@]}"
            """, "bash", script.path]
        let output = Pipe()
        bash.standardOutput = output
        try bash.run()
        let offered = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        bash.waitUntilExit()
        #expect(bash.terminationStatus == 0)
        let words = Set(offered.split(separator: "\n").map(String.init))
        #expect(words.isSuperset(of: ["search", "urls", "status", "gallery", "history", "cache", "providers", "config"]), "\(words)")
    }
}
