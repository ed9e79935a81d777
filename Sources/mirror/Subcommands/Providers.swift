import ArgumentParser
import Foundation
import MirrorKit

/// `mirror providers`: which providers exist and which need which key.
struct Providers: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "List the image providers, the keys they need, and whether those are set.")

    @Flag(help: "Print JSON instead of a table.")
    var json = false

    func run() throws {
        let environment = ProcessInfo.processInfo.environment
        let rows = ProviderRegistry.descriptors.map { descriptor -> [String: String] in
            let missing = descriptor.requiredEnvironment.filter { (environment[$0] ?? "").trimmingCharacters(in: .whitespaces).isEmpty }
            return [
                "name": descriptor.name,
                "display_name": descriptor.displayName,
                "keys": descriptor.requiredEnvironment.isEmpty ? "none" : descriptor.requiredEnvironment.joined(separator: " + "),
                "ready": missing.isEmpty ? "yes" : "no (set \(missing.joined(separator: ", ")))",
                "default": ProviderRegistry.defaultNames.contains(descriptor.name) ? "yes" : "",
                "endpoint_variable": descriptor.endpointVariable,
            ]
        }
        if json {
            printJSON(rows)
            return
        }
        let columns = ["name", "keys", "ready", "default", "endpoint_variable"]
        let headers = ["PROVIDER", "KEYS", "READY", "DEFAULT", "ENDPOINT OVERRIDE"]
        var widths = headers.map(\.count)
        for row in rows {
            for (index, column) in columns.enumerated() { widths[index] = max(widths[index], row[column, default: ""].count) }
        }
        func line(_ values: [String]) -> String {
            zip(values, widths).map { $0.padding(toLength: $1, withPad: " ", startingAt: 0) }.joined(separator: "  ")
                .trimmingCharacters(in: .whitespaces)
        }
        print(line(headers))
        for row in rows { print(line(columns.map { row[$0, default: ""] })) }
    }
}
