import Foundation
import MirrorTestSupport
import Testing

/// Hostile inputs, end to end: ids and titles built to escape the folder or confuse a reader, planted
/// symlinks, and folders that cannot be written. Each case ends in a clear message and a documented exit
/// code, writes nothing outside the output folder and loses nothing already saved.
@Suite("Hostile inputs, end to end", .serialized)
struct HostileInputTests {
    func emulator(_ configure: (inout APIEmulator.Settings) -> Void = { _ in }) throws -> APIEmulator {
        var settings = APIEmulator.Settings()
        settings.imageBytes = 1_000...3_000
        configure(&settings)
        return try APIEmulator.start(settings: settings)
    }

    func environment(_ api: APIEmulator) -> [String: String] {
        var environment = api.environment
        environment["MIRROR_API_INTERVAL_MS"] = "0"
        return environment
    }

    static func manifest(_ url: URL) -> [[String: Any]] {
        let text = (try? String(contentsOf: url.appendingPathComponent("manifest.jsonl"), encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
    }

    /// Every entry below `url`, relative, recursively (symlinks not followed).
    static func tree(_ url: URL) -> [String] {
        guard let enumerator = FileManager.default.enumerator(atPath: url.path) else { return [] }
        return (enumerator.allObjects as? [String] ?? []).sorted()
    }

    // MARK: Ids and titles

    /// What the emulator claims for the first results: every trick a file name can play.
    static let hostile: [Int: APIEmulator.ResultOverride] = [
        0: .init(id: "../../escape", title: "../../../../tmp/mirror-pwned"),
        1: .init(id: "a/b/c", title: "/etc/passwd"),
        2: .init(id: "nul\u{0}byte", title: "bell\u{7}escape\u{1B}[31mred\r\nnewline"),
        3: .init(id: "rtl\u{202E}gnp.exe", title: "\u{202E}\u{2066}isolate\u{2069}"),
        4: .init(id: String(repeating: "i", count: 300), title: String(repeating: "t", count: 300)),
        5: .init(id: "CaseOnly", title: "Same Title"),
        6: .init(id: "caseonly", title: "same title"),
        7: .init(id: "CON", title: "NUL"),
        8: .init(id: "com1", title: "LPT9.txt"),
        9: .init(id: "..", title: "."),
        10: .init(id: ".hidden", title: "..."),
        11: .init(id: "back\\slash:colon*star?", title: "\u{FEFF}\u{200B}zero-width"),
    ]

    /// Checks one name mirror wrote.
    static func expectSafe(_ name: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(!name.contains("/") && !name.contains("\\") && !name.contains(".."), "\(name)", sourceLocation: sourceLocation)
        #expect(!name.hasPrefix("."), "hidden: \(name)", sourceLocation: sourceLocation)
        #expect(name.utf8.count <= 150, "\(name.utf8.count) bytes: \(name)", sourceLocation: sourceLocation)
        let unsafe = name.unicodeScalars.filter { [.control, .format].contains($0.properties.generalCategory) }
        #expect(unsafe.isEmpty, "control or format characters \(unsafe.map { String($0.value, radix: 16) }) in \(name.debugDescription)", sourceLocation: sourceLocation)
        let stem = name.split(separator: ".").first.map { $0.uppercased() } ?? ""
        let reserved = ["CON", "PRN", "AUX", "NUL"] + (1...9).flatMap { ["COM\($0)", "LPT\($0)"] }
        #expect(!reserved.contains(stem), "reserved device name: \(name)", sourceLocation: sourceLocation)
    }

    @Test(arguments: [nil, "{title}-{id}.{ext}", "{id}"])
    func hostileIdsAndTitlesNeverEscapeOrConfuse(template: String?) async throws {
        // Given results whose ids and titles hold /, .., NUL, control characters, bidi controls, 300 characters,
        // case-only differences and device names
        let api = try emulator { $0.openverseOverrides = Self.hostile }
        defer { api.stop() }
        let work = TemporaryFolder()
        let out = work.url.appendingPathComponent("out")
        let count = Self.hostile.count + 3

        // When mirror saves them under the template
        var arguments = ["kittens", "--count", String(count), "--out", out.path, "--provider", "openverse", "--no-cache", "--quiet"]
        if let template { arguments += ["--name", template] }
        let run = try await MirrorBinary.run(arguments, environment: environment(api))

        // Then all are saved, flat inside the folder, under safe and distinct names, and nothing is written elsewhere
        #expect(run.status == 0, "stderr: \(run.stderr)")
        #expect(run.stderr.isEmpty)
        #expect(Self.tree(work.url).filter { !$0.hasPrefix("out/") && $0 != "out" }.isEmpty, "wrote outside: \(Self.tree(work.url))")
        #expect(!FileManager.default.fileExists(atPath: "/tmp/mirror-pwned"))
        let images = try FileManager.default.contentsOfDirectory(atPath: out.path).filter { $0 != "manifest.jsonl" && $0 != "metadata.jsonl" && $0 != ".mirror" }
        // metadata.jsonl is mirror's own copy of the manifest (for Hugging Face imagefolder), never an image's name
        #expect(FileManager.default.contents(atPath: out.appendingPathComponent("metadata.jsonl").path) == FileManager.default.contents(atPath: out.appendingPathComponent("manifest.jsonl").path))
        #expect(images.count == count)
        for name in images {
            Self.expectSafe(name)
            var info = stat()
            #expect(lstat(out.appendingPathComponent(name).path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFREG, "\(name) is not a regular file")
        }
        // The two case-only ids are two files whose names differ by more than case (safe on case-insensitive disks)
        #expect(Set(images.map { $0.lowercased() }).count == count)
        // The manifest keeps the raw id and title (JSON-escaped), for provenance
        let records = Self.manifest(out)
        #expect(records.count == count)
        #expect(Set(records.compactMap { $0["file_name"] as? String }) == Set(images))
        #expect(records.contains { $0["id"] as? String == "../../escape" })
        #expect(records.contains { $0["id"] as? String == "nul\u{0}byte" })
    }

    // MARK: Symlinks

    @Test func aSymlinkInTheFolderIsNeverFollowed() async throws {
        // Given a folder holding symlinks named exactly like the files mirror would write, one to an existing file
        // outside, one dangling to a path outside
        let api = try emulator()
        defer { api.stop() }
        let outside = TemporaryFolder()
        let victim = outside.file("victim.png")
        try Data("precious".utf8).write(to: victim)
        let out = TemporaryFolder()
        let first = api.image(provider: .openverse, query: "kittens", index: 0)
        let second = api.image(provider: .openverse, query: "kittens", index: 1)
        try FileManager.default.createSymbolicLink(atPath: out.file("openverse-\(first.id).png").path, withDestinationPath: victim.path)
        try FileManager.default.createSymbolicLink(atPath: out.file("openverse-\(second.id).png").path, withDestinationPath: outside.file("created.png").path)

        // When mirror saves those images
        let run = try await MirrorBinary.run(["kittens", "--count", "5", "--out", out.path, "--provider", "openverse", "--no-cache", "--quiet"], environment: environment(api))

        // Then it saves all five under other names, and the outside is untouched
        #expect(run.status == 0, "stderr: \(run.stderr)")
        #expect(try Data(contentsOf: victim) == Data("precious".utf8))
        #expect(outside.visibleFiles == ["victim.png"])
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: out.file("openverse-\(first.id).png").path) == victim.path)
        let records = Self.manifest(out.url)
        #expect(records.count == 5)
        for record in records {
            let file = try #require(record["file_name"] as? String)
            var info = stat()
            #expect(lstat(out.file(file).path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFREG, "\(file) is not a regular file")
        }
    }

    @Test func aManifestThatIsASymlinkOutsideIsRefused() async throws {
        // Given manifest.jsonl planted as a symlink to a file outside the folder
        let api = try emulator()
        defer { api.stop() }
        let outside = TemporaryFolder()
        let victim = outside.file("victim.txt")
        try Data("precious\n".utf8).write(to: victim)
        let out = TemporaryFolder()
        try FileManager.default.createSymbolicLink(atPath: out.file("manifest.jsonl").path, withDestinationPath: victim.path)

        // When mirror runs
        let run = try await MirrorBinary.run(["kittens", "--count", "3", "--out", out.path, "--provider", "openverse", "--no-cache", "--quiet"], environment: environment(api))

        // Then it writes nothing through the link and fails with one line (exit 1)
        #expect(try Data(contentsOf: victim) == Data("precious\n".utf8))
        #expect(outside.visibleFiles == ["victim.txt"])
        #expect(run.status == 1, "stderr: \(run.stderr)")
        #expect(run.stderr.split(separator: "\n").count == 1)
        #expect(run.stderr.hasPrefix("mirror: error: "))
        #expect(run.stderr.contains("manifest.jsonl: it is a symbolic link, and mirror never writes through a link it finds in a folder it fills"), "stderr: \(run.stderr)")
    }

    @Test func aStateFolderThatIsASymlinkIsRefused() async throws {
        let api = try emulator()
        defer { api.stop() }
        let outside = TemporaryFolder()
        let out = TemporaryFolder()
        try FileManager.default.createSymbolicLink(atPath: out.file(".mirror").path, withDestinationPath: outside.path)

        let run = try await MirrorBinary.run(["kittens", "--count", "3", "--out", out.path, "--provider", "openverse", "--no-cache", "--quiet"], environment: environment(api))

        #expect(run.status == 1, "stderr: \(run.stderr)")
        #expect(run.stderr.split(separator: "\n").count == 1)
        #expect(run.stderr == "mirror: error: could not use as a folder \(out.file(".mirror").path): \(Self.linkRefused)\n")
        #expect(Self.tree(outside.url).isEmpty, "wrote \(Self.tree(outside.url)) through the link")
        #expect(api.totalImageRequests == 0)
    }

    /// What a refused link inside the output is called (`FileError.linkRefused`).
    static let linkRefused = "it is a symbolic link, and mirror never writes through a link it finds in a folder it fills"

    // MARK: Folders that cannot be written

    @Test func anOutputPathThatIsAFileExits1() async throws {
        let api = try emulator()
        defer { api.stop() }
        let work = TemporaryFolder()
        let file = work.file("a-file")
        try Data("x".utf8).write(to: file)

        let run = try await MirrorBinary.run(["kittens", "--count", "3", "--out", file.path, "--provider", "openverse", "--no-cache"], environment: environment(api))

        #expect(run.status == 1)
        #expect(run.stderr == "mirror: error: could not use as a folder \(file.path): Not a directory\n")
        #expect(try Data(contentsOf: file) == Data("x".utf8))
        #expect(work.visibleFiles == ["a-file"])
        #expect(api.totalImageRequests == 0)
    }

    /// Runs `script` in a private mount namespace as root (so its mounts vanish with it), or nil when the
    /// machine does not allow it (not root, no `unshare`, or mounts forbidden in the sandbox).
    static func inMountNamespace(_ script: String, environment: [String: String]) throws -> (status: Int32, output: String)? {
        guard getuid() == 0, FileManager.default.isExecutableFile(atPath: "/usr/bin/unshare") else { return nil }
        let probe = TemporaryFolder()
        guard try shell("mount -t tmpfs -o size=64k tmpfs '\(probe.path)'", environment: [:]).status == 0 else { return nil }
        return try shell(script, environment: environment)
    }

    static func shell(_ script: String, environment: [String: String]) throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/unshare")
        process.arguments = ["--mount", "--propagation", "private", "/bin/sh", "-c", script]
        var env = ProcessInfo.processInfo.environment
        env["XDG_CACHE_HOME"] = FileManager.default.temporaryDirectory.appendingPathComponent("mirror-e2e-cache-\(UUID().uuidString)").path
        for (key, value) in environment { env[key] = value }
        process.environment = env
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }

    @Test func aReadOnlyFolderExits1AndKeepsWhatItHas() async throws {
        // Given a folder with 3 saved images, then made read-only. Tests run as root, for whom chmod stops
        // nothing, so the folder is bind-mounted read-only in a private mount namespace.
        let api = try emulator()
        defer { api.stop() }
        let out = TemporaryFolder()
        let mirror = MirrorBinary.url.path
        let filled = try await MirrorBinary.run(["kittens", "--count", "3", "--out", out.path, "--provider", "openverse", "--no-cache", "--quiet"], environment: environment(api))
        #expect(filled.status == 0)
        let before = Self.tree(out.url).filter { !$0.hasPrefix(".mirror") }
        let manifestBefore = try Data(contentsOf: out.file("manifest.jsonl"))
        api.resetCounters()

        // When mirror is asked for more in it
        let script = """
        mount --bind '\(out.path)' '\(out.path)' && mount -o remount,bind,ro '\(out.path)' '\(out.path)' || exit 99
        exec '\(mirror)' kittens --count 6 --out '\(out.path)' --provider openverse --no-cache --quiet
        """
        let result = try Self.inMountNamespace(script, environment: environment(api))
        try #require(result != nil, "cannot mount here: chmod does not stop root, so this case cannot be made (run as root with unshare and mount)")
        let (status, output) = result!

        // Then it fails at once with one clear line and exit 1, fetching nothing, and what was saved is intact
        #expect(status == 1, "output: \(output)")
        #expect(output == "mirror: error: could not write to \(out.path): Read-only file system\n")
        #expect(api.totalImageRequests == 0)
        #expect(Self.tree(out.url).filter { !$0.hasPrefix(".mirror") } == before)
        #expect(try Data(contentsOf: out.file("manifest.jsonl")) == manifestBefore)
    }

    @Test func aFullDiskEndsWithExit1AndLosesNothingSaved() async throws {
        // Given a 768 KiB tmpfs (in a private mount namespace) holding a folder with 5 images, and 2–3 KB images
        let api = try emulator { $0.imageBytes = 2_000...3_000 }
        defer { api.stop() }
        let report = TemporaryFolder()
        let mirror = MirrorBinary.url.path
        let disk = report.path + "/disk"
        let out = disk + "/out"
        // The outcome is copied out of the tmpfs before the namespace (and the tmpfs) goes away.
        let script = """
        mkdir -p '\(disk)' && mount -t tmpfs -o size=768k tmpfs '\(disk)' || exit 99
        '\(mirror)' kittens --count 5 --out '\(out)' --provider openverse --no-cache --quiet || exit 98
        cp '\(out)/manifest.jsonl' '\(report.path)/manifest-before.jsonl'
        '\(mirror)' kittens --count 400 --out '\(out)' --provider openverse --no-cache --quiet --json > '\(report.path)/summary.json' 2> '\(report.path)/stderr.txt'
        echo $? > '\(report.path)/status'
        cp -a '\(out)' '\(report.path)/after'
        ls -a '\(out)' > '\(report.path)/listing'
        """
        let result = try Self.inMountNamespace(script, environment: environment(api))
        try #require(result != nil, "cannot mount a tmpfs here; see aFileSizeLimitIsReportedAsAFullDisk for the RLIMIT_FSIZE variant")
        #expect(result!.status == 0, "script: \(result!.output)")

        let status = try String(contentsOfFile: report.path + "/status", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        let stderr = try String(contentsOfFile: report.path + "/stderr.txt", encoding: .utf8)
        let after = URL(fileURLWithPath: report.path + "/after")
        let records = Self.manifest(after)
        let before = ((try? String(contentsOfFile: report.path + "/manifest-before.jsonl", encoding: .utf8)) ?? "").split(separator: "\n")
        print("full disk: exit \(status), \(records.count) saved, stderr: \(stderr)")

        // Then it ends with exit 1 and one clear line saying the disk is full
        #expect(status == "1", "stderr: \(stderr)")
        #expect(stderr.split(separator: "\n").count == 1, "stderr: \(stderr)")
        #expect(stderr.contains("No space left on device"), "stderr: \(stderr)")
        #expect(stderr.contains("free some space and run again"), "stderr: \(stderr)")
        // with the 5 images saved before still there, the manifest agreeing with the files, and no temporary files
        #expect(before.count == 5)
        let manifestText = (try? String(contentsOf: after.appendingPathComponent("manifest.jsonl"), encoding: .utf8)) ?? ""
        #expect(before.allSatisfy { manifestText.contains($0) })
        let files = Set(((try? FileManager.default.contentsOfDirectory(atPath: after.path)) ?? []).filter { $0 != "manifest.jsonl" && $0 != "metadata.jsonl" && !$0.hasPrefix(".") })
        #expect(Set(records.compactMap { $0["file_name"] as? String }) == files)
        #expect(records.count >= 5 && records.count < 400)
        let listing = try String(contentsOfFile: report.path + "/listing", encoding: .utf8)
        #expect(!listing.contains(".part"), "temporary files left: \(listing)")
    }

    // Skipped under ThreadSanitizer: under `ulimit -f` the instrumented binary dies of SIGBUS inside the TSan
    // runtime before mirror's first line runs (even `mirror --version` prints nothing and exits 66). The
    // full-disk test above covers the same path with a real full tmpfs, and this one runs in every other build.
    @Test(.disabled(if: MirrorBinary.isThreadSanitized, "ThreadSanitizer's runtime dies of SIGBUS under RLIMIT_FSIZE"))
    func aFileSizeLimitIsReportedAsAFullDisk() async throws {
        // Given RLIMIT_FSIZE of 256 KiB (bash: ulimit -f 256) and images of 300–400 KB: the state database fits,
        // every image write fails with EFBIG, which happens only if mirror ignores SIGXFSZ (whose default
        // action kills the process)
        let api = try emulator { $0.imageBytes = 300_000...400_000 }
        defer { api.stop() }
        let out = TemporaryFolder()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/bash")
        process.arguments = ["-c", "ulimit -f 256 && exec \"$0\" \"$@\"", MirrorBinary.url.path, "kittens", "--count", "5", "--out", out.path, "--provider", "openverse", "--no-cache", "--quiet"]
        var env = ProcessInfo.processInfo.environment
        env["XDG_CACHE_HOME"] = out.path + "/.cache-unused"
        for (key, value) in environment(api) { env[key] = value }
        process.environment = env
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = Pipe()
        try process.run()
        let stderr = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()

        // Then mirror is not killed by SIGXFSZ: it stops with exit 1 and one line saying the disk (or file size limit) is full
        #expect(process.terminationReason == .exit, "killed by signal \(process.terminationStatus)")
        #expect(process.terminationStatus == 1, "stderr: \(stderr)")
        #expect(stderr == "mirror: error: could not write an image into \(out.path): File too large; free some space and run again (what was saved is kept)\n")
        #expect(out.temporaryFiles.isEmpty)
        #expect(out.visibleFiles.filter { $0 != "manifest.jsonl" }.isEmpty)
    }
}
