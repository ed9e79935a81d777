import Foundation
import MirrorCore

/// Lines of a shard's `NNNNN.jsonl`: every row, with `status` (`success`, `failed`, `invalid`, `duplicate`, `near_duplicate`,
/// `filtered`, `opted_out`, `disallowed`), `error`, `reason` (a failure's key, as the stats count it: `http-503`,
/// `timeout`, …; for a refusal, the signal that made it: `robots`, `content-signal`, `tdmrep-file`, …) and `transient`
/// (whether a failure may succeed on a later run, which `--retry-failed` retries) first, then a refusal's evidence
/// (`signal_value`, what the signal said; `signal_location`, where it was read; `tdm_policy`, the TDMRep policy it
/// names; null on other rows), then the record's fields (null where the row has no image; a refused row's `purpose` is
/// the one its signal reserved), then the kept columns.
enum ShardRecordLine {
    package static func saved(_ json: Data) -> Data {
        Data(#"{"status":""#.utf8) + Data(RowStatus.saved.rawValue.utf8) + Data(#"","error":null,"reason":null,"transient":false,"#.utf8)
            + Data(#""signal_value":null,"signal_location":null,"tdm_policy":null,"#.utf8) + json.dropFirst() + Data("\n".utf8)
    }

    /// How a line's row ended, as far as `--retry-failed` and a rewritten shard's stats need it.
    package struct Outcome: Equatable {
        package var status: RowStatus
        package var reason: String?
        package var isTransient: Bool
        /// A saved row's bytes.
        package var bytes: Int64
        /// Whether a saved row's image declares it was generated.
        package var generated = false

        /// Whether a run with `--retry-failed scope` downloads the row again: a failure that may pass (`transient`), or
        /// every row without a sample but a duplicate (`all`).
        package func isRetried(by scope: RetryFailed) -> Bool {
            switch scope {
            case .transient: status == .failed && isTransient
            case .all: status != .saved && status != .duplicate && status != .nearDuplicate
            }
        }

        /// Counts the row as the stats do.
        package func count(into tally: inout Tally) {
            tally.count(status, reason: reason, isTransient: isTransient, bytes: bytes, generated: generated)
        }
    }

    /// How the row of a line ended, or `nil` when the line is not a record line.
    package static func outcome(of line: some DataProtocol) -> Outcome? {
        guard let fields = try? JSONDecoder().decode(Fields.self, from: Data(line)) else { return nil }
        return Outcome(
            status: fields.status, reason: fields.reason, isTransient: fields.transient ?? false, bytes: fields.bytes ?? 0,
            generated: fields.generated ?? false
        )
    }

    /// What ``outcome(of:)`` reads of a line.
    private struct Fields: Decodable {
        var status: RowStatus
        var reason: String?
        var transient: Bool?
        var bytes: Int64?
        var generated: Bool?
    }

    package static func settled(url: URL?, provenance: ImageProvenance, outcome: SettledOutcome) -> Data {
        let text = { (value: String?) in (try? ManifestRecord.jsonText(value)) ?? "null" }
        var (reason, transient) = ("null", "false")
        var refusal: Reservation?
        switch outcome {
        case let .failed(key, _, isTransient): (reason, transient) = (text(key), isTransient ? "true" : "false")
        case let .optedOut(reservation), let .disallowed(reservation):
            reason = text(reservation.signal.rawValue)
            refusal = reservation
        default: break
        }
        var line = #"{"status":"# + text(outcome.status.rawValue) + #","error":"# + text(outcome.message)
        line += #","reason":"# + reason + #","transient":"# + transient
        line += #","signal_value":"# + text(refusal?.evidence.value) + #","signal_location":"# + text(refusal?.evidence.location)
        line += #","tdm_policy":"# + text(refusal?.evidence.policy)
        for field in ManifestRecord.Field.all {
            let value: String
            switch field.key {
            case "url": value = text(url?.absoluteString)
            case "key": value = text(provenance.key)
            case "caption": value = text(provenance.caption)
            case "label": value = text(provenance.label)
            case "query": value = text(provenance.query)
            case "purpose": value = text(refusal?.purpose.rawValue)
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
