import Foundation
import MirrorTestSupport
@testable import MirrorTransport

/// Runs one transfer and waits for its single completion.
func fetch(_ driver: CurlMultiDriver, _ request: TransferRequest) async -> Result<HTTPResponse, TransportError> {
    await withCheckedContinuation { continuation in
        driver.start(request) { continuation.resume(returning: $0) }
    }
}

func fetch(_ driver: CurlMultiDriver, _ url: URL, configure: (inout TransferRequest) -> Void = { _ in }) async -> Result<HTTPResponse, TransportError> {
    var request = TransferRequest(url: url)
    configure(&request)
    return await fetch(driver, request)
}

extension Result {
    var success: Success? { if case let .success(value) = self { value } else { nil } }
    var failure: Failure? { if case let .failure(error) = self { error } else { nil } }
}

/// The threads of this process whose name (as the kernel keeps it: the first 15 bytes) begins with `prefix`.
///
/// Counted by name, not in total: the other suites run in this same process at the same time, and their threads come
/// and go whenever they do.
func threadCount(named prefix: String) -> Int {
    let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
    let kept = String(decoding: prefix.utf8.prefix(15), as: UTF8.self)
    return tasks.filter { task in
        let name = (try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8)) ?? ""
        return name.hasPrefix(kept)
    }.count
}

/// The TCP sockets this process holds open to `port` on the other end: the client side of every connection to a test
/// server, whoever opened it.
///
/// Counted for one port, not as all descriptors: the other suites run in this same process at the same time and open
/// and close files and sockets of their own whenever they do. A socket is matched to the kernel's table of TCP
/// connections (`/proc/net/tcp`, `/proc/net/tcp6`) by its inode; a closed socket has no descriptor, so a connection
/// waiting out TIME_WAIT is not counted.
func openSocketCount(toPort port: Int) -> Int {
    let descriptors = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
    var inodes = Set<String>()
    for descriptor in descriptors {
        guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(descriptor)"),
              target.hasPrefix("socket:["), target.hasSuffix("]")
        else { continue }
        inodes.insert(String(target.dropFirst("socket:[".count).dropLast()))
    }
    let wanted = String(format: "%04X", port)
    var count = 0
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        // Read to the end: `String(contentsOfFile:)` stops after the first 4 KB of a /proc file, whose size reads as 0.
        guard let handle = FileHandle(forReadingAtPath: table), let data = try? handle.readToEnd() else { continue }
        let text = String(decoding: data, as: UTF8.self)
        // "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode"
        for line in text.split(separator: "\n").dropFirst() {
            let fields = line.split(separator: " ")
            guard fields.count > 9, fields[2].hasSuffix(":" + wanted), inodes.contains(String(fields[9])) else { continue }
            count += 1
        }
    }
    return count
}

/// A temporary file, removed when the test is done with it.
final class TemporaryFile {
    let url: URL
    let descriptor: Int32

    init() {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("mirror-transport-\(UUID().uuidString)")
        descriptor = open(url.path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0o600)
        precondition(descriptor >= 0, "could not create \(url.path)")
    }

    var contents: Data { (try? Data(contentsOf: url)) ?? Data() }

    deinit {
        Glibc.close(descriptor)
        try? FileManager.default.removeItem(at: url)
    }
}

