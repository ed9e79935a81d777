import Foundation

/// Runs the built `mirror` executable, as users and cron do, and captures what it prints.
struct MirrorBinary {
    struct Run {
        var status: Int32
        var stdout: String
        var stderr: String
        /// When the process was seen to exit (by the waiting thread, so a late-resuming test does not stretch it).
        var ended: ContinuousClock.Instant = .now
    }

    /// The `mirror` executable next to the test bundle (`.build/<configuration>/mirror`).
    static var url: URL {
        let products = Bundle.main.bundleURL
        let candidates = [products.appendingPathComponent("mirror"), products.deletingLastPathComponent().appendingPathComponent("mirror")]
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0.path) } ?? candidates[0]
    }

    /// Whether the executable (built with the tests, so like this process) is instrumented by ThreadSanitizer,
    /// as under `scripts/sanitize thread`: the TSan runtime is linked into both, so its entry point resolves.
    static let isThreadSanitized: Bool = dlsym(nil, "__tsan_init") != nil  // nil: RTLD_DEFAULT

    /// Runs `mirror` with arguments, optional standard input and extra environment; waits for it to exit.
    static func run(_ arguments: [String], stdin: String? = nil, environment: [String: String] = [:]) async throws -> Run {
        try await start(arguments, stdin: stdin, environment: environment).finish()
    }

    /// A running `mirror`, for tests that signal or kill it.
    final class Running: @unchecked Sendable {
        // Set once in `start`, then only read; the pipes' readers run on their own queues.
        let process: Process
        private let out = Pipe()
        private let err = Pipe()
        private let group = DispatchGroup()
        /// Signalled by the process's termination handler. Waiting on it rather than `waitUntilExit()`, which spins a
        /// run loop of corelibs Foundation on the waiting thread: with many tests waiting at once on Dispatch threads,
        /// ThreadSanitizer's CI run crashed inside it (SEGV in `_CFRunLoopFinished`, Foundation's, not mirror's).
        private let exited = DispatchSemaphore(value: 0)
        private var outData = Data()
        private var errData = Data()

        init(process: Process) {
            self.process = process
            process.standardOutput = out
            process.standardError = err
            process.terminationHandler = { [exited] _ in exited.signal() }
        }

        func beginReading() {
            for (pipe, isOut) in [(out, true), (err, false)] {
                group.enter()
                DispatchQueue.global().async { [self] in
                    let data = pipe.fileHandleForReading.readDataToEndOfFile()
                    if isOut { outData = data } else { errData = data }
                    group.leave()
                }
            }
        }

        /// The throwaway cache folder this run was given; removed when it finishes.
        var cacheFolder: URL?

        /// Waits for the exit and returns what it printed, blocking the calling thread: only for code already
        /// running off Swift's cooperative pool (see ``onDispatchThread(_:)``); elsewhere use ``finish()``.
        func wait() -> Run {
            exited.wait()
            exited.signal()  // for a second wait (a test may finish a run it already waited for)
            let ended = ContinuousClock.now
            group.wait()
            if let cacheFolder { try? FileManager.default.removeItem(at: cacheFolder) }
            return Run(
                status: process.terminationStatus, stdout: String(decoding: outData, as: UTF8.self),
                stderr: String(decoding: errData, as: UTF8.self), ended: ended
            )
        }

        /// Waits for the exit and returns what it printed, without holding a cooperative thread.
        func finish() async -> Run {
            await onDispatchThread { self.wait() }
        }
    }

    static func start(_ arguments: [String], stdin: String? = nil, environment: [String: String] = [:]) throws -> Running {
        let process = Process()
        process.executableURL = url
        process.arguments = arguments
        var env = ProcessInfo.processInfo.environment
        // Keep tests away from the user's cache unless a test asks for one.
        let cacheFolder = FileManager.default.temporaryDirectory.appendingPathComponent("mirror-e2e-cache-\(UUID().uuidString)")
        env["XDG_CACHE_HOME"] = cacheFolder.path
        // …and from the user's configuration: no config file, no MIRROR_<OPTION> defaults, no cluster shard.
        env["MIRROR_CONFIG"] = cacheFolder.appendingPathComponent("no-config.toml").path
        for key in env.keys where key.hasPrefix("MIRROR_") && key != "MIRROR_CONFIG" && !key.hasSuffix("_ENDPOINT") { env[key] = nil }
        for key in ["SLURM_ARRAY_TASK_ID", "JOB_COMPLETION_INDEX"] { env[key] = nil }
        for (key, value) in environment { env[key] = value }
        process.environment = env
        let running = Running(process: process)
        running.cacheFolder = cacheFolder
        let input = Pipe()
        process.standardInput = input
        try process.run()
        running.beginReading()
        if let stdin { input.fileHandleForWriting.write(Data(stdin.utf8)) }
        try? input.fileHandleForWriting.close()
        return running
    }
}


/// Runs blocking work (waiting for a process, polling a folder with `usleep`) on a Dispatch thread and returns its
/// result.
///
/// The end-to-end tests wait for `mirror` a great deal. Done on the calling task's thread, those waits hold
/// Swift's cooperative threads (two on a 2-core machine) and starve every async test running beside them — under
/// ThreadSanitizer for half a minute at a time; and a test that times kills by polling would itself be late
/// whenever other tests hold those threads. A Dispatch thread is neither.
func onDispatchThread<T: Sendable, Failure: Error>(_ body: @escaping @Sendable () throws(Failure) -> T) async throws(Failure) -> T {
    let result: Result<T, Failure> = await withCheckedContinuation { continuation in
        DispatchQueue.global().async { continuation.resume(returning: Result { () throws(Failure) in try body() }) }
    }
    return try result.get()
}

