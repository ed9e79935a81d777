"""Checks what mirror makes of images the real writers marked, end to end.

Run by scripts/check/check-consent, which makes fresh samples with exiftool and the C2PA SDK (scripts/fixtures/consent_samples.py:
XMP `plus:DataMining` in every value and RDF form, in JPEG, PNG, WebP and GIF, extended XMP; IPTC digital source
types; C2PA and CAWG training-mining assertions, allowed, notAllowed and constrained, in all four formats; generated
images) and builds mirror. Here the samples are served on loopback (Python's http.server: no robots.txt, no TDMRep
file, so every outcome comes from the images themselves) and collected with `mirror urls`:

- for AI training (the default) into a folder: every sample whose marks reserve training is refused as `opted_out`
  with the right signal (`iptc` before `c2pa` when both) and recorded in the folder's state database; every other
  sample is saved, its record saying `generated`, `source_type`, `source_type_from` and `c2pa` as the writers wrote;
- the same into WebDataset shards: the record lines say the same, with the signal as `reason`;
- for a search index (`--purpose search`): only `DMI-PROHIBITED` (and its `-SEE…` forms) and C2PA `data_mining`
  reservations refuse.
"""
import json
import os
import sqlite3
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))  # scripts/lib: mirrorscripts
from mirrorscripts import Checks, free_port, start_file_server, stop

MIRROR = sys.argv[1]
SAMPLES = sys.argv[2]
PROHIBITING = {
    "ai-train": {"DMI-PROHIBITED-AIMLTRAINING", "DMI-PROHIBITED-GENAIMLTRAINING", "DMI-PROHIBITED-EXCEPTSEARCHENGINEINDEXING",
                 "DMI-PROHIBITED", "DMI-PROHIBITED-SEECONSTRAINT", "DMI-PROHIBITED-SEEEMBEDDEDRIGHTSEXPR",
                 "DMI-PROHIBITED-SEELINKEDRIGHTSEXPR"},
    "search": {"DMI-PROHIBITED", "DMI-PROHIBITED-SEECONSTRAINT", "DMI-PROHIBITED-SEEEMBEDDEDRIGHTSEXPR",
               "DMI-PROHIBITED-SEELINKEDRIGHTSEXPR"},
}
RESERVED_ENTRIES = {"ai-train": {"ai_training", "ai_generative_training", "data_mining"}, "search": {"data_mining"}}
GENERATED = {"trainedAlgorithmicMedia", "compositeWithTrainedAlgorithmicMedia", "algorithmicMedia"}


def expected(sample, purpose):
    """The signal that refuses `sample` for `purpose`, or None: IPTC Data Mining is read before C2PA."""
    code = (sample.get("data_mining") or "").rsplit("/", 1)[-1]
    if code in PROHIBITING[purpose]:
        return "iptc"
    for entry in sample.get("training_mining") or []:
        name = entry["entry"].split(".", 1)[-1]
        if entry["use"] in ("notAllowed", "constrained") and name in RESERVED_ENTRIES[purpose]:
            return "c2pa"
    return None


def run(arguments):
    result = subprocess.run([MIRROR] + arguments, capture_output=True, text=True, timeout=300)
    return result.returncode, result.stdout, result.stderr


def main():
    with open(os.path.join(SAMPLES, "samples.json"), encoding="utf-8") as handle:
        samples = json.load(handle)
    checks = Checks("check-consent")
    port = free_port()
    server = start_file_server(SAMPLES, port)
    work = tempfile.mkdtemp()
    table = os.path.join(work, "table.csv")
    with open(table, "w", encoding="utf-8") as handle:
        handle.write("url,caption\n")
        for sample in samples:
            handle.write(f"http://127.0.0.1:{port}/{sample['file']},{sample['file']}\n")
    try:
        def folder(purpose):
            def section():
                out = os.path.join(work, f"folder-{purpose}")
                status, stdout, stderr = run(["urls", table, "--out", out, "--json", "--purpose", purpose])
                checks.check(status == 0, f"mirror urls --purpose {purpose} exits 0", stderr[-2000:])
                summary = json.loads(stdout)
                refusals = {}
                for sample in samples:
                    signal = expected(sample, purpose)
                    if signal:
                        refusals[signal] = refusals.get(signal, 0) + 1
                checks.check(summary["refusals"] == refusals, f"refusals by signal are {refusals}", f"summary: {summary['refusals']}")
                records = {}
                with open(os.path.join(out, "manifest.jsonl"), encoding="utf-8") as manifest:
                    for line in manifest:
                        record = json.loads(line)
                        records[record["caption"]] = record
                database = sqlite3.connect(os.path.join(out, ".mirror", "state.sqlite"))
                refused = {url.rsplit("/", 1)[-1]: (signal, value, location, recorded)
                           for url, signal, value, location, recorded in database.execute(
                               "SELECT url, signal, value, location, purpose FROM attempts WHERE signal IS NOT NULL")}
                for sample in samples:
                    name, signal = sample["file"], expected(sample, purpose)
                    if signal:
                        checks.check(name not in records and refused.get(name, (None,))[0] == signal,
                                     f"{name}: refused by {signal}", f"record: {records.get(name)}, state: {refused.get(name)}")
                        checks.check(refused[name][3] == purpose, f"{name}: the refusal names the purpose {purpose}")
                        continue
                    record = records.get(name)
                    checks.check(record is not None, f"{name}: saved", f"state: {refused.get(name)}")
                    source_type = sample.get("digital_source_type")
                    generated = bool(source_type) and source_type.rsplit("/", 1)[-1] in GENERATED
                    checks.check(record["generated"] == generated and record["c2pa"] == bool(sample["c2pa"]),
                                 f"{name}: generated {generated}, c2pa {bool(sample['c2pa'])}",
                                 f"record: generated {record['generated']}, c2pa {record['c2pa']}")
                    if source_type:
                        checks.check(record["source_type"] == source_type, f"{name}: declares {source_type.rsplit('/', 1)[-1]}",
                                     f"record: {record['source_type']} from {record['source_type_from']}")
                    checks.check(record["purpose"] == purpose, f"{name}: record says purpose {purpose}")
            return section

        def shards():
            out = os.path.join(work, "shards")
            status, _, stderr = run(["urls", table, "--out", out, "--format", "webdataset", "--shard-size", "1000"])
            checks.check(status == 0, "mirror urls --format webdataset exits 0", stderr[-2000:])
            with open(os.path.join(out, "00000.jsonl"), encoding="utf-8") as handle:
                lines = {json.loads(line)["caption"]: json.loads(line) for line in handle}
            checks.check(len(lines) == len(samples), f"the shard's records hold all {len(samples)} rows", f"{len(lines)}")
            for sample in samples:
                line, signal = lines[sample["file"]], expected(sample, "ai-train")
                if signal:
                    checks.check(line["status"] == "opted_out" and line["reason"] == signal and line["signal_value"],
                                 f"{sample['file']}: record opted_out by {signal}, with the value read", json.dumps(line)[:400])
                else:
                    checks.check(line["status"] == "success" and line["c2pa"] == bool(sample["c2pa"]),
                                 f"{sample['file']}: record saved, c2pa {bool(sample['c2pa'])}", json.dumps(line)[:400])
            with open(os.path.join(out, "00000_stats.json"), encoding="utf-8") as handle:
                stats = json.load(handle)
            refused = sum(1 for sample in samples if expected(sample, "ai-train"))
            checks.check(stats["optedOut"] == refused and sum(stats.get("refusals", {}).values()) == refused,
                         f"the stats count {refused} refusals", json.dumps(stats)[:400])

        checks.section("A folder for AI training", folder("ai-train"))
        checks.section("A folder for a search index", folder("search"))
        checks.section("WebDataset shards for AI training", shards)
    finally:
        stop(server)
    sys.exit(checks.summary())


if __name__ == "__main__":
    main()
