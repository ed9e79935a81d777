import Foundation

/// The package's folder (the one holding `Package.swift`), found from this file's place, whatever folder a test is in.
enum PackageRoot {
    static let url: URL = {
        var folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        while folder.path != "/", !FileManager.default.fileExists(atPath: folder.appendingPathComponent("Package.swift").path) {
            folder.deleteLastPathComponent()
        }
        return folder
    }()
}
