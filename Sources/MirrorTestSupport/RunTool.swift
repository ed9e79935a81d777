import Foundation

/// Runs a command-line tool (`/usr/bin/tar`, `/bin/gzip`) and returns its standard output as bytes: for reading
/// mirror's output with the tools users have.
public func runToolData(_ path: String, _ arguments: [String]) throws -> Data {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: path)
    process.arguments = arguments
    let out = Pipe()
    process.standardOutput = out
    try process.run()
    let data = out.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return data
}

/// Runs a command-line tool and returns its standard output as text.
@discardableResult
public func runTool(_ path: String, _ arguments: [String]) throws -> String {
    String(decoding: try runToolData(path, arguments), as: UTF8.self)
}
