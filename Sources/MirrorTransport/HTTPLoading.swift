import Foundation
import MirrorSync

/// Something that can be cancelled from any thread; cancelling twice, or after the work ended, does nothing.
public protocol Cancellable: Sendable {
    /// Cancels the work.
    func cancel()
}

/// Loads HTTP transfers: the seam between mirror and its transport.
///
/// The one production implementation is ``CurlMultiDriver`` (libcurl, one multi-handle thread); unit tests put a
/// stub behind it. The API client and the download manager take `any HTTPLoading`, never the driver itself.
///
/// Contract: ``load(_:completion:)`` may be called from any thread and calls `completion` exactly once, on a thread
/// that must not be blocked (for the driver, its I/O thread): hand slow work elsewhere. A body meant for a
/// ``TransferRequest/Destination/sink(_:)`` is written to that sink, chunk by chunk, before the completion runs.
public protocol HTTPLoading: Sendable {
    /// Starts a transfer; `completion` runs exactly once.
    /// - Returns: a handle that cancels the transfer (its completion then reports ``TransportError/cancelled``).
    @discardableResult
    func load(
        _ request: TransferRequest,
        completion: @escaping @Sendable (Result<HTTPResponse, TransportError>) -> Void
    ) -> any Cancellable
}

extension HTTPLoading {
    /// Performs a transfer and returns its response; cancelling the calling task cancels the transfer.
    public func perform(_ request: TransferRequest) async throws(TransportError) -> HTTPResponse {
        let cancellation = Locked<CancellationState>(.idle)
        let result: Result<HTTPResponse, TransportError> = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let task = load(request) { continuation.resume(returning: $0) }
                let cancelNow = cancellation.withLock { state in
                    if case .cancelled = state { return true }
                    state = .started(task)
                    return false
                }
                if cancelNow { task.cancel() }
            }
        } onCancel: {
            let task = cancellation.withLock { state -> (any Cancellable)? in
                defer { state = .cancelled }
                if case let .started(task) = state { return task }
                return nil
            }
            task?.cancel()
        }
        return try result.get()
    }
}

private enum CancellationState {
    case idle
    case started(any Cancellable)
    case cancelled
}
