import Foundation
import MirrorImages

/// Which valid images are wanted: minimum dimensions and formats.
public struct ImageFilter: Sendable, Hashable {
    /// Narrower images are filtered out. Default 0.
    public var minimumWidth: Int = 0
    /// Shorter images are filtered out. Default 0.
    public var minimumHeight: Int = 0
    /// Wanted formats; nil wants all.
    public var formats: Set<ImageFormat>?
    /// Images whose shorter side is under this are filtered out (`--min-image-size`). Default 0.
    public var minimumSide: Int = 0
    /// Images whose longer side over their shorter exceeds this are filtered out (`--max-aspect-ratio`); nil for any.
    public var maximumAspectRatio: Double?

    public init(minimumWidth: Int = 0, minimumHeight: Int = 0, formats: Set<ImageFormat>? = nil) {
        self.minimumWidth = minimumWidth
        self.minimumHeight = minimumHeight
        self.formats = formats
    }

    /// Why an image is unwanted, or nil if it is wanted.
    public func rejection(for info: ImageInfo) -> String? {
        rejection(format: info.format) ?? rejection(width: info.width, height: info.height)
    }

    /// Why what a source reports about an image (before any download) already makes it unwanted, or nil when the
    /// report says nothing against it (unknown values pass: the bytes decide).
    public func rejection(reportedWidth width: Int?, reportedHeight height: Int?, mimeType: String?) -> String? {
        if let width, let height, let reason = rejection(width: width, height: height) { return reason }
        return mimeType.flatMap(ImageFormat.init(mimeType:)).flatMap(rejection(format:))
    }

    private func rejection(format: ImageFormat) -> String? {
        guard let formats, !formats.contains(format) else { return nil }
        return "\(format.rawValue) is not among the wanted formats"
    }

    private func rejection(width: Int, height: Int) -> String? {
        if width < minimumWidth || height < minimumHeight {
            return "\(width)×\(height) is smaller than \(minimumWidth)×\(minimumHeight)"
        }
        if min(width, height) < minimumSide {
            return "\(width)×\(height) has a side under \(minimumSide)"
        }
        if let maximumAspectRatio, min(width, height) > 0,
           Double(max(width, height)) / Double(min(width, height)) > maximumAspectRatio {
            return "\(width)×\(height) is more elongated than \(maximumAspectRatio):1"
        }
        return nil
    }
}

extension ImageFormat {
    /// The format a MIME type names, if any (`image/jpeg` → `.jpeg`).
    package init?(mimeType: String) {
        let type = mimeType.lowercased().split(separator: ";").first.map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
        guard let format = ImageFormat.allCases.first(where: { $0.mimeType == type }) ?? (type == "image/jpg" ? .jpeg : nil) else {
            return nil
        }
        self = format
    }
}
