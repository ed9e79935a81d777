import Foundation

/// The split a dataset's images are for (`--split`): the name of the folder they go into inside the output, which
/// Hugging Face `datasets` reads as that split (`load_dataset("imagefolder", data_dir=OUT)` gives `train`, `validation`
/// and `test`; its `webdataset` loader reads shards the same way). Each split's folder is a folder job's own output:
/// its images, `manifest.jsonl` and `metadata.jsonl` (`file_name` from the split's folder), and `.mirror/` state.
public enum DatasetSplit: String, Sendable, Hashable, CaseIterable {
    case train, validation, test

    /// The output's folder for this split.
    public func directory(in output: URL) -> URL {
        output.appendingPathComponent(rawValue, isDirectory: true)
    }
}
