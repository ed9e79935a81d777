"""Judges `--dedup near` on real photographs: scripts/check/near_truth.py's ground truth (every photograph in the
scikit-image and scikit-learn wheels, text pages, quarters of some as pictures of their own — a sky, a motion-blurred
clock, the moon's surface: low-contrast —, their variants — half, 60 % and quarter size, JPEG quality 15 and 40, WebP,
PNG, 3 % trimmed, 4 % trimmed and enlarged back, 8 % and 15 % brighter, blurred, grey — and the hard cases that must
stay apart: 60 % crops of one photograph, a quarter against the whole, a stereo pair, quarters of one star field or
texture), served on loopback, downloaded by mirror.

Run by scripts/check/check-datasets (which makes the virtualenv, with `webdataset`, `datasets`, Pillow, and the two wheels'
image files, and builds mirror), after check_datasets.py:

    python scripts/check/check_near.py MIRROR [--report FILE]

What it proves (issue 45's bar):
- `mirror urls TABLE --format webdataset --dedup near --concurrency 1` over every file, each picture's original first:
  at least 97 % of the pictures end with one sample, and at least 97 % of those with copies (textures, text and
  low-contrast pictures among them, each reported), with the default concurrency, whatever order the copies arrive in,
  at least 95 %; no row is dropped as a copy of another picture's sample (every `near_duplicate` record names a sample
  of its own picture), and no hard case is merged with its partner; the shards load with `webdataset.WebDataset` and
  `datasets.load_dataset("webdataset")`, as many samples as saved.
- The same table into a folder with `--dedup near` loads with `datasets.load_dataset("imagefolder")` (its `pdq`,
  `pdq_quality`, `pdq_trimmed` and `pdq_version` columns included), and a rerun fetches nothing.
- The distances `mirror hash` measures (the smallest between any of two files' hashes: whole image and trimmed
  centres), same-picture pairs against different-picture and hard pairs, apart for pairs where either quality is under
  50: histograms and percentiles printed and written to the report (default: beside the files), with the largest same
  distance and the smallest other one; and no pair of different pictures that NearDuplicatePolicy's rule (below) would merge.
"""
import argparse
import collections
import itertools
import json
import os
import subprocess
import sys
import tempfile

import datasets
import webdataset as wds

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))  # scripts/lib: mirrorscripts
from mirrorscripts import Checks, free_port, start_file_server, stop
from near_truth import make_truth

THRESHOLD = 31  # NearDuplicatePolicy.defaultDistance: both hashes of PDQ quality 50 or more
LOW_QUALITY_THRESHOLD = 26  # NearDuplicatePolicy.defaultLowQualityDistance: either under 50 (and neither flat, 0)
RELIABLE_QUALITY = 50  # PerceptualHash.reliableQuality
MINIMUM_SIDE = 64  # NearDuplicatePolicy.defaultMinimumSide


def allowed(one, other):
    """The largest distance at which two files' hashes (hashes_of's entries) are one picture, or None: the rule of
    NearDuplicatePolicy."""
    (_, quality_a, side_a), (_, quality_b, side_b) = one, other
    if quality_a <= 0 or quality_b <= 0 or side_a < MINIMUM_SIDE or side_b < MINIMUM_SIDE:
        return None
    return THRESHOLD if quality_a >= RELIABLE_QUALITY and quality_b >= RELIABLE_QUALITY else min(THRESHOLD, LOW_QUALITY_THRESHOLD)


def hashes_of(mirror, folder, files):
    """File name -> (hashes as ints: the whole image's first, quality, shorter side), by `mirror hash --json`."""
    run = subprocess.run([mirror, "hash", "--json"] + [os.path.join(folder, f) for f in files], capture_output=True, text=True)
    result = {}
    for line in run.stdout.splitlines():
        record = json.loads(line)
        if "pdq" in record:
            name = os.path.basename(record["file"])
            result[name] = ([int(record["pdq"], 16)] + [int(h, 16) for h in record["trimmed"]], record["quality"], min(record["width"], record["height"]))
            assert record["version"] == 2, f"mirror hash says version {record['version']}"
    return result


def distance(a, b):
    return min(bin(x ^ y).count("1") for x in a for y in b)


def histogram(values, width=8):
    counts = collections.Counter(v // width * width for v in values)
    return " ".join(f"{k}-{k + width - 1}:{counts[k]}" for k in sorted(counts))


def percentiles(values, points=(1, 5, 50, 95, 99)):
    """Nearest-rank percentiles of sorted `values`, as "p1 N p5 N ..."."""
    return " ".join(f"p{p} {values[min(len(values) - 1, max(0, -(-p * len(values) // 100) - 1))]}" for p in points)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("mirror")
    parser.add_argument("--report")
    arguments = parser.parse_args()
    checks = Checks("check-near")
    work = tempfile.mkdtemp(prefix="check-near-")
    files_folder = os.path.join(work, "files")
    truth = make_truth(files_folder)
    files = list(truth["files"])
    picture = {f: truth["files"][f]["picture"] for f in files}
    copies = collections.Counter(picture.values())
    port = free_port()
    server = start_file_server(files_folder, port)
    table = os.path.join(work, "urls.txt")
    with open(table, "w") as handle:
        handle.write("".join(f"http://127.0.0.1:{port}/{f}\n" for f in files))
    hashes = hashes_of(arguments.mirror, files_folder, files)

    def shards(concurrency, bar):
        out = os.path.join(work, f"shards-{concurrency}")
        run = subprocess.run([arguments.mirror, "urls", table, "--out", out, "--format", "webdataset", "--shard-size", "100",
                              "--dedup", "near", "--concurrency", str(concurrency), "--json", "--quiet"], capture_output=True, text=True)
        checks.check(run.returncode == 0, "mirror urls --format webdataset --dedup near exits 0", run.stderr[-2000:])
        summary = json.loads(run.stdout)
        records = []
        for name in sorted(os.listdir(out)):
            if name.endswith(".jsonl"):
                with open(os.path.join(out, name)) as handle:
                    records += [json.loads(line) for line in handle if line.strip()]
        checks.check(len(records) == len(files), f"a record for each of the {len(files)} rows", f"{len(records)} records")
        file_of = {r["key"]: os.path.basename(r["url"]) for r in records}
        saved = [r for r in records if r["status"] == "success"]
        dropped = [r for r in records if r["status"] == "near_duplicate"]
        per_picture = collections.Counter(picture[os.path.basename(r["url"])] for r in saved)
        pictures = sorted(set(picture.values()))
        several = sorted(p for p in pictures if per_picture[p] != 1)
        flat = sorted(p for p in several if all(hashes[f][1] <= 0 for f in files if picture[f] == p))
        share = sum(1 for p in pictures if per_picture[p] == 1) / len(pictures)
        print(f"  {len(saved)} samples of {len(pictures)} pictures; {len(dropped)} near-duplicates; pictures with more than one "
              f"sample: {several} (flat throughout, quality 0: {flat})")
        checks.check(share >= bar, f"at least {bar:.0%} of the pictures end with one sample ({share:.1%})", f"several: {several}")
        copied = [p for p in pictures if copies[p] > 1]
        share = sum(1 for p in copied if per_picture[p] == 1) / len(copied)
        checks.check(share >= bar, f"at least {bar:.0%} of the {len(copied)} pictures with copies end with one sample ({share:.1%})",
                     f"several: {several}")
        for kind in ("texture", "text", "low_contrast"):
            members = [p for p in copied if truth["pictures"][p].get(kind)]
            print(f"  {kind.replace('_', '-')} pictures with copies: {sum(per_picture[p] == 1 for p in members)} of {len(members)} "
                  f"end with one sample")
        wrong = []
        for row in dropped:
            key = row["error"].split(" ")[4] if row["error"] and row["error"].startswith("looks the same as ") else None
            if key is None or picture.get(file_of.get(key)) != picture[os.path.basename(row["url"])]:
                wrong.append((os.path.basename(row["url"]), row["error"]))
        checks.check(not wrong, "every near_duplicate record names a sample of its own picture (no false merge)", f"{wrong[:5]}")
        merged_hard = [(a, b) for a, b, _ in truth["hard_distinct"] if per_picture[picture[a]] == 0 or per_picture[picture[b]] == 0]
        checks.check(not merged_hard, f"both pictures of each of the {len(truth['hard_distinct'])} hard pairs keep a sample of their own",
                     f"{merged_hard[:5]}")
        checks.check(summary.get("nearDuplicates") == len(dropped) and summary.get("saved") == len(saved),
                     "--json counts nearDuplicates apart", f"{summary}")
        tars = sorted(os.path.join(out, n) for n in os.listdir(out) if n.endswith(".tar"))
        samples = list(wds.WebDataset(tars, shardshuffle=False))
        checks.check(len(samples) == len(saved), f"webdataset reads {len(saved)} samples", f"{len(samples)}")
        loaded = datasets.load_dataset("webdataset", data_files={"train": tars}, split="train")
        checks.check(len(loaded) == len(saved), f"datasets.load_dataset('webdataset') loads {len(saved)} samples", f"{len(loaded)}")

    def folder():
        out = os.path.join(work, "folder")
        for attempt in (1, 2):
            run = subprocess.run([arguments.mirror, "urls", table, "--out", out, "--dedup", "near", "--json", "--quiet"],
                                 capture_output=True, text=True)
            checks.check(run.returncode == 0, f"mirror urls --dedup near into a folder exits 0 (run {attempt})", run.stderr[-2000:])
            summary = json.loads(run.stdout)
            if attempt == 1:
                first = summary
            else:
                checks.check(summary["saved"] == 0 and summary["nearDuplicates"] == 0,
                             "a rerun saves nothing and drops nothing: it fetches nothing again", f"{summary}")
        loaded = datasets.load_dataset("imagefolder", data_dir=out, split="train")
        checks.check(len(loaded) == first["saved"], f"imagefolder loads the {first['saved']} saved images", f"{len(loaded)}")
        checks.check({"pdq", "pdq_quality", "pdq_trimmed", "pdq_version"} <= set(loaded.column_names), "with their pdq columns",
                     f"{loaded.column_names}")

    def distances():
        groups = collections.defaultdict(list)
        hard = {frozenset((picture[a], picture[b])) for a, b, _ in truth["hard_distinct"]}
        family = {f: truth["pictures"][picture[f]].get("family", picture[f]) for f in files}
        merged = []
        for a, b in itertools.combinations([f for f in files if f in hashes], 2):
            if picture[a] == picture[b]:
                kind = "grey" if "__grey" in a or "__grey" in b else "same"
            elif frozenset((picture[a], picture[b])) in hard:
                kind = "hard"
            elif family[a] == family[b]:
                kind = "related"
            else:
                kind = "different"
            low = min(hashes[a][1], hashes[b][1]) < RELIABLE_QUALITY
            measured = distance(hashes[a][0], hashes[b][0])
            groups[(kind, low)].append((measured, a, b))
            limit = allowed(hashes[a], hashes[b])
            if kind not in ("same", "grey") and limit is not None and measured <= limit:
                merged.append((measured, a, b))
        report = {}
        for kind in ("same", "grey", "hard", "related", "different"):
            for low in (False, True):
                values = sorted(groups[(kind, low)])
                if not values:
                    continue
                name = f"{kind}, quality under 50" if low else kind
                extreme = values[-1] if kind in ("same", "grey") else values[0]
                report[name] = {"pairs": len(values), "min": values[0][0], "max": values[-1][0],
                                "histogram": histogram([v[0] for v in values]),
                                "percentiles": percentiles([v[0] for v in values]), "extreme": extreme}
                print(f"  {name}: {len(values)} pairs, {values[0][0]}-{values[-1][0]} bits; {report[name]['histogram']}; "
                      f"{report[name]['percentiles']}; extreme {extreme}")
        for kind in ("same", "grey"):  # each copy against its picture's original: what a first-saved original must reach
            for low in (False, True):
                values = sorted(v for v in groups[(kind, low)] if "__original." in v[1] or "__original." in v[2])
                if values:
                    report[f"{kind} to the original{', quality under 50' if low else ''}"] = {"pairs": len(values), "max": values[-1][0],
                                                                                             "extreme": values[-1]}
                    print(f"  {kind} to the original{', quality under 50' if low else ''}: at most {values[-1][0]} bits {values[-1]}")
        others = [groups[(kind, low)] for kind in ("hard", "related", "different") for low in (False, True)]
        closest_other = min(v[0][0] for v in map(sorted, others) if v)
        report["thresholds"] = {"distance": THRESHOLD, "low_quality_distance": LOW_QUALITY_THRESHOLD, "closest_other": closest_other}
        checks.check(not merged, f"no pair of different pictures within the rule's {THRESHOLD} bits ({LOW_QUALITY_THRESHOLD} when either "
                                 f"quality is under 50; closest {closest_other})", f"{merged[:5]}")
        path = arguments.report or os.path.join(work, "near_report.json")
        with open(path, "w") as handle:
            json.dump(report, handle, indent=1)
        print(f"  report: {path}")

    try:
        # One download at a time, the rows are kept in table order (each picture's original first): the bar. With the
        # default concurrency the smaller copies often arrive first, and whichever arrives first is kept; PDQ's
        # distances between the copies of a texture close-up (brick, gravel) then decide (PDQ is weak on textures: their
        # hashes are mid-frequency phases), so fewer may end with one sample, never a false merge.
        checks.section("Ground truth into WebDataset shards with --dedup near, rows in table order", lambda: shards(1, 0.97))
        checks.section("The same with the default concurrency (any order)", lambda: shards(16, 0.95))
        checks.section("Ground truth into a folder with --dedup near", folder)
        checks.section("Distances mirror hash measures", distances)
    finally:
        stop(server)
    return checks.summary()


if __name__ == "__main__":
    sys.exit(main())
