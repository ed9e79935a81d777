import Foundation
import MirrorModel

/// Lines of a shard's `NNNNN.jsonl`: every row, with `status` (`success`, `failed`, `invalid`, `duplicate`, `near_duplicate`,
/// `filtered`, `opted_out`, `disallowed`), `error`, `reason` (a failure's key, as the stats count it: `http-503`,
/// `timeout`, …; for a refusal, the signal that made it: `robots`, `content-signal`, `tdmrep-file`, …) and `transient`
/// (whether a failure may succeed on a later run, which `--retry-failed` retries) first, then a refusal's evidence
/// (`signal_value`, what the signal said; `signal_location`, where it was read; `tdm_policy`, the TDMRep policy it
/// names; null on other rows), then the record's fields (null where the row has no image; a refused row's `purpose` is
/// the one its signal reserved), then the kept columns.
enum ShardRecordLine {
    package static func saved(_ json: Data) -> Data {
        Data(#"{"status":""#.utf8) + Data(RowOutcome.Status.saved.rawValue.utf8) + Data(#"","error":null,"reason":null,"transient":false,"#.utf8)
            + Data(#""signal_value":null,"signal_location":null,"tdm_policy":null,"#.utf8) + json.dropFirst() + Data("\n".utf8)
    }

    /// How the row of a line ended, read back (``RowOutcome/init(recorded:reason:message:isTransient:record:value:location:purpose:)``),
    /// or `nil` when the line is not a record line, or is a saved row's and `readingRecords` is false (the record is
    /// decoded only for the stats of a rewritten shard; `--retry-failed`'s scan needs how rows failed, not what saved).
    package static func outcome(of line: some DataProtocol, readingRecords: Bool = true) -> RowOutcome? {
        let data = Data(line)
        guard let fields = try? JSONDecoder().decode(Fields.self, from: data) else { return nil }
        return RowOutcome(
            recorded: fields.status, reason: fields.reason, message: fields.error, isTransient: fields.transient ?? false,
            record: fields.status == .saved && readingRecords ? ManifestRecord.decode(data) : nil,
            value: fields.signalValue, location: fields.signalLocation, purpose: fields.purpose.flatMap(UsePurpose.init(rawValue:))
        )
    }

    /// What ``outcome(of:)`` reads of a line besides a saved row's record.
    private struct Fields: Decodable {
        var status: RowOutcome.Status
        var error: String?
        var reason: String?
        var transient: Bool?
        var signalValue: String?
        var signalLocation: String?
        var purpose: String?

        enum CodingKeys: String, CodingKey {
            case status, error, reason, transient, purpose
            case signalValue = "signal_value"
            case signalLocation = "signal_location"
        }
    }

    package static func settled(url: URL?, provenance: ImageProvenance, outcome: RowOutcome) -> Data {
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
        var line = #"{"status":"# + text(outcome.status?.rawValue) + #","error":"# + text(outcome.message)
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
