// mirror-bench-server: serves a directory over HTTP/1.1 on 127.0.0.1 with an injected per-request latency,
// for scripts/bench/bench. Built on MirrorTestSupport's TestServer (SwiftNIO, one event-loop thread, keep-alive).
//
//     mirror-bench-server DIR [--latency-ms N] [--port-file FILE]
//     mirror-bench-server --write-hostile-images DIR
//
// Every regular file under DIR is read into memory once and served at its path relative to DIR, with a
// Content-Type from its extension. Prints `PORT=<port>` on stdout when ready, then runs until SIGTERM,
// SIGINT or end of standard input. The test server records every request; the counters are reset every
// second so that a long benchmark does not grow the server's memory.
//
// --write-hostile-images writes MirrorTestSupport's crafted images (DIR/crafted) and the ordinary ones beside them
// (DIR/ordinary), with DIR/expected.tsv (name, the reason a resize run files, the reason a run without one files; "-"
// for saved), for scripts/check/hostile-images, and exits.
import Foundation
import MirrorTestSupport

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("mirror-bench-server: \(message)\n".utf8))
    exit(64)
}

var arguments = Array(CommandLine.arguments.dropFirst())
var latencyMS = 0
var directory: String?
while !arguments.isEmpty {
    let argument = arguments.removeFirst()
    switch argument {
    case "--latency-ms":
        guard let value = arguments.first.flatMap(Int.init), value >= 0 else { fail("--latency-ms needs a number of milliseconds") }
        arguments.removeFirst()
        latencyMS = value
    case "--write-hostile-images":
        guard let folder = arguments.first else { fail("--write-hostile-images needs a folder") }
        let base = URL(fileURLWithPath: folder)
        do {
            for kind in ["crafted", "ordinary"] {
                try FileManager.default.createDirectory(at: base.appendingPathComponent(kind), withIntermediateDirectories: true)
            }
            var expected = ""
            for sample in HostileImages.samples() {
                try sample.data.write(to: base.appendingPathComponent("crafted/\(sample.name)"))
                expected += "\(sample.name)\t\(sample.whenResized ?? "-")\t\(sample.whenNotResized ?? "-")\n"
            }
            for file in HostileImages.ordinary() { try file.data.write(to: base.appendingPathComponent("ordinary/\(file.name)")) }
            try expected.write(to: base.appendingPathComponent("expected.tsv"), atomically: true, encoding: .utf8)
        } catch {
            fail("cannot write \(folder): \(error)")
        }
        exit(0)
    case "-h", "--help":
        print("usage: mirror-bench-server DIR [--latency-ms N]")
        exit(0)
    default:
        guard directory == nil, !argument.hasPrefix("-") else { fail("unexpected argument \(argument)") }
        directory = argument
    }
}
guard let directory else { fail("usage: mirror-bench-server DIR [--latency-ms N]") }

let contentTypes = [
    "jpg": "image/jpeg", "jpeg": "image/jpeg", "png": "image/png", "gif": "image/gif", "webp": "image/webp",
    "txt": "text/plain", "json": "application/json",
]

let root = URL(fileURLWithPath: directory).standardizedFileURL
guard let walker = FileManager.default.enumerator(at: root, includingPropertiesForKeys: [.isRegularFileKey]) else {
    fail("cannot read \(directory)")
}
let server: TestServer
do {
    server = try TestServer.start(latency: .milliseconds(latencyMS))
} catch {
    fail("cannot start the server: \(error)")
}
var files = 0
var bytes = 0
let rootPath = root.path.hasSuffix("/") ? root.path : root.path + "/"
for case let url as URL in walker {
    guard (try? url.resourceValues(forKeys: [.isRegularFileKey]).isRegularFile) == true else { continue }
    let path = url.standardizedFileURL.path
    guard path.hasPrefix(rootPath), let data = FileManager.default.contents(atPath: path) else { continue }
    let relative = String(path.dropFirst(rootPath.count))
    let type = contentTypes[url.pathExtension.lowercased()] ?? "application/octet-stream"
    server.route("/" + relative, .ok(data, contentType: type))
    files += 1
    bytes += data.count
}
FileHandle.standardError.write(Data("mirror-bench-server: \(files) files, \(bytes) bytes, latency \(latencyMS) ms\n".utf8))
FileHandle.standardOutput.write(Data("PORT=\(server.port)\n".utf8))

// Stop on SIGTERM / SIGINT or when standard input closes (the parent died).
signal(SIGTERM, SIG_IGN)
signal(SIGINT, SIG_IGN)
let signals = [SIGTERM, SIGINT].map { number -> DispatchSourceSignal in
    let source = DispatchSource.makeSignalSource(signal: number, queue: .main)
    source.setEventHandler {
        server.stop()
        exit(0)
    }
    source.resume()
    return source
}
Thread.detachNewThread {
    while FileHandle.standardInput.availableData.count > 0 {}
    server.stop()
    exit(0)
}
Thread.detachNewThread {
    while true {
        Thread.sleep(forTimeInterval: 1)
        server.resetCounters()
    }
}
withExtendedLifetime(signals) { dispatchMain() }
