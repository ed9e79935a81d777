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

/// The number of threads in this process, from /proc/self/task.
///
/// libvips' workers ("libvips worker") are left out: they belong to the process once any test has resized an image
/// (MirrorKit's transform tests run in this same process, at the same time) and never end, so counting them would
/// make this number depend on which other test ran when.
func threadCount() -> Int {
    let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
    guard !tasks.isEmpty else { return -1 }
    return tasks.filter { task in
        let name = (try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8)) ?? ""
        return !name.hasPrefix("libvips worker")
    }.count
}

/// The number of open file descriptors in this process, from /proc/self/fd.
func openDescriptorCount() -> Int {
    (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? -1
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

