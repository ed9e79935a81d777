import Foundation
import MirrorConsent
import MirrorCore
import MirrorFetch
import MirrorModel
import MirrorObjectStore
import MirrorStorage

extension URLListJob {
    /// Settings of a run.
    public struct Configuration: Sendable {
        /// The output folder.
        public var directory: URL
        /// Download settings (concurrency, per-host cap, retries, limits, cache).
        public var downloads = DownloadManager.Configuration()
        /// Whether saved files are fsynced before they are published. Default true.
        public var isSyncEnabled = true
        /// What the images are written as. Default a folder.
        public var format: OutputFormat = .folder
        /// What the images are for and which reservations are set aside (`--purpose`, `--ignore-opt-out`,
        /// `--ignore-robots`, `--skip-generated`). Default: AI training, every signal honoured.
        public var consent = ConsentPolicy()
        /// Whether each origin's robots.txt and TDMRep file are read. Default true.
        public var readsSiteFiles = true
        /// How saved images are resized and re-encoded; `nil` keeps the bytes as served.
        public var transform: ImageTransform?
        /// Where in a folder the images go (`--layout`): the folder itself or numbered subfolders. Default automatic:
        /// subfolders when the table's rows the folder lacks may take it past 9,000 images, else flat
        /// (``URLListJob/layout(_:of:table:skipped:)``).
        public var layout = FolderLayout()
        /// What is taken for a duplicate of a saved image (`--dedup`). Default ``Deduplication/exact``: a row is a row.
        public var deduplication: Deduplication = .exact
        /// Which valid images are wanted (`--min-image-size`, `--max-aspect-ratio`); `nil` for all.
        public var filter: ImageFilter?
        /// This copy's share of a job run as N copies (the table source takes only its rows), or `nil`.
        public var shard: WorkShard?
        /// Object storage the WebDataset shards go to, or `nil` for ``directory``; ``directory`` is then the local
        /// state folder.
        public var objectStore: ObjectStoreDestination?
        /// Which rows that failed on an earlier run are downloaded again, or `nil` (the default) for none: a rerun
        /// then downloads nothing an earlier run settled, and reports the rows still missing.
        public var retryFailed: RetryFailed?

        public init(directory: URL) {
            self.directory = directory
        }
    }

    /// A bucket and prefix, and how to reach it.
    public struct ObjectStoreDestination: Sendable {
        public var location: S3Location
        public var settings: S3Configuration

        public init(location: S3Location, settings: S3Configuration) {
            self.location = location
            self.settings = settings
        }
    }

    /// What the images are written as.
    public enum OutputFormat: Sendable, Hashable {
        /// Files in the folder, with `manifest.jsonl`.
        case folder
        /// WebDataset tar shards of `shardSize` rows, with their records and stats (``ShardSink``).
        case webDataset(shardSize: Int)
    }
}

extension ImageTransform.Encoding {
    /// The format a dataset of `format` is written in when none is asked for: JPEG for WebDataset shards (every sample
    /// then carries `.jpg`, which Hugging Face's webdataset loader needs; served JPEGs are stored as served), the
    /// bytes as served in a folder (`imagefolder` reads any mix of formats).
    public static func `default`(for format: URLListJob.OutputFormat) -> Self {
        switch format {
        case .folder: .keep
        case .webDataset: .jpeg
        }
    }
}
