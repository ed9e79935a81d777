import ArgumentParser
import Foundation
import MirrorKit

/// The documented exit codes; tests and cron jobs depend on them.
enum ExitStatus: Int32 {
    /// Done: the count was reached, the list was saved, or the folder was already up to date.
    case success = 0
    /// Any other runtime failure (the output folder cannot be written, …).
    case failure = 1
    /// The sources ran dry before the count (or some URLs of a list gave no image); what exists was saved.
    case exhausted = 3
    /// Configuration or authentication error: a missing or rejected key, a bad endpoint.
    case configuration = 4
    /// A provider or network failure that retries could not overcome.
    case unavailable = 5
    /// The command line was wrong.
    case usage = 64
    /// The table is malformed from some row on (a quoted field that never closes; the message names its line), so the
    /// rows after it cannot be told apart; the rows before it were processed (`EX_DATAERR`).
    case dataError = 65
    /// Another run holds the output folder's lock.
    case locked = 75
    /// Interrupted by SIGINT or SIGTERM.
    case interrupted = 130

    var exitCode: ExitCode { ExitCode(rawValue) }
}

/// Prints a one-line error to stderr in the tool's voice, each line cut to ``MessageLimit/line`` characters: an error
/// may quote a URL, a table's value or a server's words, and none of them makes a message of megabytes.
func printError(_ message: String) {
    FileHandle.standardError.write(Data("mirror: error: \(message.cuttingLines(to: MessageLimit.line))\n".utf8))
}

/// Prints `value` as one line of JSON on stdout, keys sorted, dates as ISO 8601: every `--json` of every command (a
/// run's summary, the history, the providers, a folder's counts).
func printJSON(_ value: some Encodable) {
    FileHandle.standardOutput.write(jsonLine(value) + Data("\n".utf8))
}

/// `value` as `printJSON` writes it, without the newline (`{}` for a value that does not encode, which no summary is).
func jsonLine(_ value: some Encodable) -> Data {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys]
    encoder.dateEncodingStrategy = .iso8601
    return (try? encoder.encode(value)) ?? Data("{}".utf8)
}

/// Maps a library error to its one-line message and exit status.
func describe(_ error: any Error) -> (message: String, status: ExitStatus) {
    switch error {
    case let failure as MirrorJob.Failure:
        switch failure {
        case .missingKey, .rejectedKey, .misconfigured: return (failure.description, .configuration)
        case .unavailable: return (failure.description, .unavailable)
        case .unknownProvider, .ambiguousEndpoint: return (failure.description, .usage)
        }
    case is CancellationError:
        return ("interrupted", .interrupted)
    case let store as ObjectStoreError:
        return ("\(store.description)\(store.isConfiguration ? "" : "; run again to continue (complete shards are kept)")", store.isConfiguration ? .configuration : store.isTransient ? .unavailable : .failure)
    case let mismatch as ShardSink.ShardSizeMismatch:
        return (mismatch.description, .usage)
    case let table as TableError:
        return ("\(table.description); what was saved is kept", table.isMalformed ? .dataError : .failure)
    case let held as FolderLock.Held:
        return ("\(held.description); wait for it to finish, or stop it first", .locked)
    case let file as FileError:
        if file.isOutOfSpace {
            return ("\(file.description); free some space and run again (what was saved is kept)", .failure)
        }
        return ("\(file.description)", .failure)
    default:
        return (String(describing: error), .failure)
    }
}

/// The folder the user named with `--out` (or `--state-dir`), a symbolic link resolved to the folder it leads to
/// (``OutputPath``); a link that leads nowhere useful is one line saying what it is, and exit 1, as an output path
/// that is a file is.
func outputFolder(_ path: String) throws -> URL {
    do {
        return try OutputPath.resolve(path)
    } catch {
        printError(describe(error).message)
        throw ExitStatus.failure.exitCode
    }
}
