import Foundation
import MirrorCore

/// Lines of a shard's `NNNNN.jsonl`: every row, with `status` (`success`, `failed`, `invalid`, `duplicate`,
/// `filtered`, `opted_out`, `disallowed`) and `error` first, then the record's fields (null where the row has no
/// image), then the kept columns.
enum ShardRecordLine {
    package static func saved(_ json: Data) -> Data {
        Data(#"{"status":"success","error":null,"#.utf8) + json.dropFirst() + Data("\n".utf8)
    }

    package static func settled(url: URL?, provenance: ImageProvenance, outcome: SettledOutcome) -> Data {
        let text = { (value: String?) in (try? ManifestRecord.jsonText(value)) ?? "null" }
        var line = #"{"status":"# + text(outcome.status) + #","error":"# + text(outcome.message)
        for field in ManifestRecord.Field.all {
            let value: String
            switch field.key {
            case "url": value = text(url?.absoluteString)
            case "key": value = text(provenance.key)
            case "caption": value = text(provenance.caption)
            case "label": value = text(provenance.label)
            case "query": value = text(provenance.query)
            default: value = "null"
            }
            line += ",\"" + field.key + "\":" + value
        }
        for column in provenance.columns {
            line += "," + text(column.name) + ":" + column.json
        }
        return Data((line + "}\n").utf8)
    }
}
