import ArgumentParser
import Foundation
import MirrorKit

/// `mirror cache stats|clear`: the on-disk cache of images and search pages.
struct Cache: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show or clear the on-disk cache of images and search pages.",
        subcommands: [Stats.self, Clear.self]
    )

    struct Stats: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Show what the cache holds.")

        @Option(name: .customLong("cache-dir"), help: "The cache folder (default: $XDG_CACHE_HOME/mirror or ~/.cache/mirror).")
        var cacheDirectory: String?

        @Flag(help: "Print JSON.")
        var json = false

        func run() throws {
            let directory = cacheDirectory.map { URL(fileURLWithPath: $0) } ?? DiskCache.defaultDirectory()
            let stats = DiskCache(directory: directory).stats()
            if json {
                print(#"{"bytes":\#(stats.bytes),"directory":"\#(directory.path)","images":\#(stats.entries),"pages":\#(stats.pages)}"#)
            } else {
                print("\(directory.path): \(stats.entries) images, \(stats.pages) search pages, \(ProgressRenderer.format(bytes: stats.bytes))")
            }
        }
    }

    struct Clear: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Remove everything from the cache.")

        @Option(name: .customLong("cache-dir"), help: "The cache folder (default: $XDG_CACHE_HOME/mirror or ~/.cache/mirror).")
        var cacheDirectory: String?

        func run() throws {
            let directory = cacheDirectory.map { URL(fileURLWithPath: $0) } ?? DiskCache.defaultDirectory()
            do {
                try DiskCache(directory: directory).removeAll()
            } catch {
                printError("could not clear the cache at \(directory.path): \(error)")
                throw ExitStatus.failure.exitCode
            }
            print("cleared \(directory.path)")
        }
    }
}
