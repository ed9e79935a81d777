import ArgumentParser
import Foundation
import MirrorKit

/// `mirror history`: the searches made into a folder.
struct History: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List the searches made into a folder (query, providers, last run, images saved).",
        discussion: "History lives in the folder's own state (DIR/.mirror/state.sqlite), so it travels with the images."
    )

    @Option(name: .customLong("out"), help: "The output folder whose history to show.")
    var output: String = "."

    @Flag(help: "Print JSON.")
    var json = false

    @Flag(help: "Forget the history (the images and the manifest stay).")
    var clear = false

    func run() throws {
        let database = URL(fileURLWithPath: output).appendingPathComponent(".mirror/state.sqlite")
        guard FileManager.default.fileExists(atPath: database.path) else {
            if json { print("[]") } else { print("no searches recorded in \(output)") }
            return
        }
        let store: StateStore
        do {
            store = try StateStore(url: database)
            if clear {
                try store.clearSearches()
                print("cleared the search history of \(output)")
                return
            }
        } catch {
            printError("could not read \(database.path): \(error)")
            throw ExitStatus.failure.exitCode
        }
        let searches = (try? store.searches()) ?? []
        if json {
            printJSON(searches)
            return
        }
        guard !searches.isEmpty else {
            print("no searches recorded in \(output)")
            return
        }
        let formatter = ISO8601DateFormatter()
        for search in searches {
            let ended = search.exhausted ? ", sources ran dry" : ""
            print("\(search.query)  [\(search.providers)]  last run \(formatter.string(from: search.lastRun)), \(search.runs) runs, \(search.saved) saved, \(search.pagesFetched) pages\(ended)")
        }
    }
}
