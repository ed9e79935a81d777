// mirror-emulator: the eight image search APIs mirror speaks (Openverse, Wikimedia Commons, Flickr, Giphy,
// Google Custom Search, Pexels, Unsplash, Pixabay), emulated on 127.0.0.1 with generated PNGs behind every
// result. Built on MirrorTestSupport's TestServer and APIEmulator.
//
//     mirror-emulator [--port N] [--latency-ms N] [--api-latency-ms N] [--image-bytes MIN-MAX]
//                     [--overlap N] [--corpus PROVIDER=COUNT]...
//
// When ready it prints one KEY=VALUE line per environment variable (MIRROR_<NAME>_ENDPOINT for all eight,
// FLICKR_API_KEY, GIPHY_API_KEY, GOOGLE_API_KEY, GOOGLE_CSE_ID, PEXELS_API_KEY, UNSPLASH_ACCESS_KEY,
// PIXABAY_API_KEY), sorted, in one write on stdout; values never contain spaces or quotes, so a script can
// redirect stdout to a file, wait for 15 lines and `export` each (see scripts/demo). Then it runs until
// SIGINT or SIGTERM.
//
//   --port N              listen on 127.0.0.1:N (default 0: a free port the kernel picks)
//   --latency-ms N        delay before every image response (default 0)
//   --api-latency-ms N    delay before every API response (default 0)
//   --image-bytes MIN-MAX generated PNG sizes in bytes (default 2000-20000)
//   --overlap N           the first N Wikimedia results of every query are byte-identical to Openverse's
//   --corpus P=N          results per query for provider P (e.g. wikimedia=120); repeatable
import Foundation
import MirrorTestSupport

let usage = "usage: mirror-emulator [--port N] [--latency-ms N] [--api-latency-ms N] [--image-bytes MIN-MAX] [--overlap N] [--corpus PROVIDER=COUNT]..."

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("mirror-emulator: \(message)\n\(usage)\n".utf8))
    exit(64)
}

var arguments = Array(CommandLine.arguments.dropFirst())
var port = 0
var settings = APIEmulator.Settings()

@MainActor func value(for option: String) -> String {
    guard !arguments.isEmpty else { fail("\(option) needs a value") }
    return arguments.removeFirst()
}

@MainActor func number(for option: String) -> Int {
    guard let number = Int(value(for: option)), number >= 0 else { fail("\(option) needs a non-negative integer") }
    return number
}

while !arguments.isEmpty {
    var argument = arguments.removeFirst()
    // Accept --option=value as well as --option value.
    if argument.hasPrefix("--"), let equals = argument.firstIndex(of: "=") {
        arguments.insert(String(argument[argument.index(after: equals)...]), at: 0)
        argument = String(argument[..<equals])
    }
    switch argument {
    case "--port":
        port = number(for: argument)
        guard port <= 65_535 else { fail("--port must be at most 65535") }
    case "--latency-ms":
        settings.imageLatency = .milliseconds(number(for: argument))
    case "--api-latency-ms":
        settings.apiLatency = .milliseconds(number(for: argument))
    case "--image-bytes":
        let text = value(for: argument)
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 2, let low = Int(parts[0]), let high = Int(parts[1]), low >= 100, high >= low else {
            fail("--image-bytes needs MIN-MAX with 100 <= MIN <= MAX, e.g. 2000-20000")
        }
        settings.imageBytes = low...high
    case "--overlap":
        settings.wikimediaOverlap = number(for: argument)
    case "--corpus":
        let text = value(for: argument)
        let parts = text.split(separator: "=")
        guard parts.count == 2, let provider = APIEmulator.Provider(name: String(parts[0])), let count = Int(parts[1]), count >= 0 else {
            fail("--corpus needs PROVIDER=COUNT, e.g. wikimedia=120")
        }
        settings.corpus[provider, default: .init(count: count)].count = count
        settings.corpus[provider]?.reportedTotal = nil
    case "-h", "--help":
        print(usage)
        exit(0)
    default:
        fail("unexpected argument \(argument)")
    }
}

let server: TestServer
do {
    server = try TestServer.start()
} catch {
    fail("cannot start the server: \(error)")
}
// TestServer always binds a port the kernel picks; for --port a forwarder listens on the fixed one and the
// emulator advertises it in endpoints and image URLs.
let forwarder: PortForwarder?
do {
    forwarder = port == 0 ? nil : try PortForwarder(listenPort: port, targetPort: server.port)
} catch {
    server.stop()
    fail("cannot listen on 127.0.0.1:\(port): \(error)")
}
let publicBase = "http://127.0.0.1:\(port == 0 ? server.port : port)"
let emulator = APIEmulator(server: server, settings: settings, advertisedBaseURL: URL(string: publicBase))

// One write, unbuffered, so a reader sees every line at once.
let assignments = emulator.environment.sorted(by: { $0.key < $1.key }).map { key, value in "\(key)=\(value)\n" }
FileHandle.standardOutput.write(Data(assignments.joined().utf8))
let summary = settings.corpus.sorted { $0.key.rawValue < $1.key.rawValue }.map { "\($0.key.rawValue) \($0.value.count)" }.joined(separator: ", ")
FileHandle.standardError.write(Data("mirror-emulator: listening on \(publicBase); corpus \(summary); images \(settings.imageBytes.lowerBound)-\(settings.imageBytes.upperBound) bytes\n".utf8))

// The server records every request; forget them now and then so a long session does not grow without bound.
let janitor = DispatchSource.makeTimerSource(queue: .global())
janitor.schedule(deadline: .now() + 30, repeating: 30)
janitor.setEventHandler { emulator.server.resetCounters() }
janitor.resume()

signal(SIGTERM, SIG_IGN)
signal(SIGINT, SIG_IGN)
signal(SIGPIPE, SIG_IGN)
let signals = [SIGTERM, SIGINT].map { number -> DispatchSourceSignal in
    let source = DispatchSource.makeSignalSource(signal: number, queue: .main)
    source.setEventHandler {
        FileHandle.standardError.write(Data("mirror-emulator: stopping (\(emulator.totalAPIRequests) API requests, \(emulator.totalImageRequests) image requests)\n".utf8))
        forwarder?.stop()
        emulator.stop()
        exit(0)
    }
    source.resume()
    return source
}
withExtendedLifetime((signals, janitor)) {
    dispatchMain()
}
