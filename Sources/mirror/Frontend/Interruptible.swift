import ArgumentParser
import Foundation

/// Runs a job in a task that SIGINT and SIGTERM cancel, and turns a thrown error into its one-line
/// message on stderr and its documented exit status.
///
/// - Returns: the job's value, and whether a signal arrived while it ran.
func runInterruptibly<Value: Sendable>(
    renderer: ProgressRenderer,
    _ job: @escaping @Sendable () async throws -> Value
) async throws -> (value: Value, interrupted: Bool) {
    let work = Task { try await job() }
    let interrupts = InterruptHandler { work.cancel() }
    do {
        let value = try await work.value
        renderer.finish()
        return (value, interrupts.wasInterrupted)
    } catch {
        renderer.finish()
        let (message, status) = describe(error)
        printError(message)
        throw status.exitCode
    }
}
