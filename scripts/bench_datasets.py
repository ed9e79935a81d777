"""The dataset benchmark of issue 15: `mirror urls TABLE --format webdataset` against img2dataset on the same
5,000-row CSV served by nginx on loopback, without and with resize (256 px, center crop, JPEG 95).

Run by `scripts/bench-datasets`, which installs what is missing and builds mirror (release). Each cell runs every
tool REPS times, interleaved, with the same connection count (16); reported are medians of images/s, CPU ms per image
(user + sys of the whole process tree) and peak RSS, and each run's shards are checked: every sample of the table
present (read with Python's tarfile), resized to 256×256 where asked. Appends its table to BENCHMARKS.md's
"Datasets" section (replacing an earlier one).
"""
import argparse
import csv
import io
import json
import os
import shutil
import statistics
import sys
import tarfile

sys.path.insert(0, os.path.dirname(__file__))
import bench  # noqa: E402  (the corpus, nginx and the measuring are shared with scripts/bench)

parser = argparse.ArgumentParser()
parser.add_argument("--root", required=True)
parser.add_argument("--build-dir", required=True)
parser.add_argument("--rows", type=int, default=5000)
parser.add_argument("--reps", type=int, default=3)
parser.add_argument("--concurrency", type=int, default=16)
parser.add_argument("--no-report", action="store_true", help="print the table; leave BENCHMARKS.md alone")
args = parser.parse_args()

mirror = os.path.join(args.root, ".build-release", "release", "mirror")
venv_bin = os.path.join(args.build_dir, "venv", "bin")
www = os.path.join(args.build_dir, "www")
corpus_dir = os.path.join(www, f"corpus-v{bench.CORPUS_VERSION}-{args.rows}")
index = bench.generate_corpus(corpus_dir, args.rows)
names = [name for name, _, _ in index["files"]]
scratch = os.path.join(args.build_dir, "scratch-datasets")
logs = os.path.join(args.build_dir, "logs-datasets")
shutil.rmtree(scratch, ignore_errors=True)
os.makedirs(scratch)
os.makedirs(logs, exist_ok=True)
nginx = bench.Nginx(www, os.path.join(args.build_dir, "state"))
base = f"http://127.0.0.1:{nginx.port}/{os.path.basename(corpus_dir)}"
table = os.path.join(scratch, "table.csv")
with open(table, "w", newline="") as handle:
    writer = csv.writer(handle)
    writer.writerow(["url", "caption"])
    for number, name in enumerate(names):
        writer.writerow([f"{base}/{name}", f"image {number}, a benchmark photo"])
env = dict(os.environ, XDG_CACHE_HOME=os.path.join(scratch, "xdg"), NO_ALBUMENTATIONS_UPDATE="1", no_proxy="127.0.0.1")
c = str(args.concurrency)


def command(tool, resize, out):
    if tool == "mirror":
        argv = [mirror, "urls", table, "--out", out, "--format", "webdataset", "--shard-size", "1000",
                "--concurrency", c, "--per-host", c, "--no-cache", "--quiet"]
        if resize:
            argv += ["--resize", "center-crop", "--size", "256", "--encode", "jpeg", "--quality", "95"]
        return argv
    argv = [os.path.join(venv_bin, "img2dataset"), "--url_list", table, "--input_format", "csv", "--url_col", "url",
            "--caption_col", "caption", "--output_folder", out, "--output_format", "webdataset",
            "--number_sample_per_shard", "1000", "--processes_count", "1", "--thread_count", c, "--timeout", "30",
            "--retries", "0", "--enable_wandb", "False"]
    if resize:
        argv += ["--resize_mode", "center_crop", "--image_size", "256", "--encode_format", "jpg", "--encode_quality", "95"]
    else:
        argv += ["--resize_mode", "no", "--disable_all_reencoding", "True"]
    return argv


def check(out, resize):
    """Samples with an image in the run's tar shards, and whether every one is 256×256 when resized."""
    from PIL import Image
    samples, square = 0, True
    for name in sorted(os.listdir(out)):
        if not name.endswith(".tar"):
            continue
        with tarfile.open(os.path.join(out, name)) as tar:
            for member in tar.getmembers():
                extension = member.name.rsplit(".", 1)[-1]
                if extension in ("jpg", "png", "webp", "gif", "bmp", "tif", "avif", "heic", "heif"):
                    samples += 1
                    if resize:
                        square &= Image.open(io.BytesIO(tar.extractfile(member).read())).size == (256, 256)
    return samples, square


records = []
for resize in (False, True):
    for rep in range(args.reps):
        order = ["mirror", "img2dataset"] if rep % 2 == 0 else ["img2dataset", "mirror"]
        for tool in order:
            out = os.path.join(scratch, "out", tool)
            shutil.rmtree(out, ignore_errors=True)
            stem = os.path.join(logs, f"{tool}-{'resize' if resize else 'plain'}-r{rep}")
            result = bench.measure(command(tool, resize, out), env, stem + ".out", stem + ".err", timeout=900)
            samples, square = check(out, resize)
            n = len(names)
            record = {"tool": tool, "resize": resize, "rep": rep, "samples": samples, "square": square, **result,
                      "images_per_s": n / result["wall"], "cpu_ms": (result["user"] + result["sys"]) / n * 1000,
                      "rss": max(result["rss_max_process"], result["rss_tree_sampled"])}
            records.append(record)
            bench.log(f"bench-datasets: {tool} {'resize' if resize else 'plain'} rep {rep}: {samples}/{n} samples, "
                      f"{record['images_per_s']:.0f} img/s, {record['cpu_ms']:.2f} ms CPU/img, "
                      f"{record['rss'] / 1e6:.0f} MB, exit {result['exit']}")
nginx.stop()
with open(os.path.join(args.build_dir, "results-datasets.json"), "w") as handle:
    json.dump(records, handle, indent=1)

lines = [
    f"{args.rows:,}-row CSV (url, caption) of the benchmark corpus "
    f"({sum(size for _, size, _ in index['files']) / 1e6:.0f} MB of JPEG/PNG/WebP/GIF), served by nginx on loopback, "
    f"{args.concurrency} connections each, WebDataset shards of 1,000; medians of {args.reps} interleaved runs "
    "(`scripts/bench-datasets`). CPU is user + sys of the whole process tree per image; RSS the peak of the tree.",
    "",
    "| | images/s | CPU ms / image | peak RSS | samples in the shards |",
    "| --- | ---: | ---: | ---: | ---: |",
]
for resize in (False, True):
    for tool in ("mirror", "img2dataset"):
        cell = [r for r in records if r["tool"] == tool and r["resize"] == resize]
        label = f"{tool}, {'resize 256 center crop, JPEG 95' if resize else 'bytes as served'}"
        samples = min(r["samples"] for r in cell)
        lines.append(
            f"| {label} | {statistics.median(r['images_per_s'] for r in cell):,.0f} "
            f"| {statistics.median(r['cpu_ms'] for r in cell):.2f} | {statistics.median(r['rss'] for r in cell) / 1e6:.0f} MB "
            f"| {samples:,} of {args.rows:,}{' (all 256×256)' if resize and all(r['square'] for r in cell) else ''} |"
        )
report = "\n".join(lines) + "\n"
print(report)
if not args.no_report:
    path = os.path.join(args.root, "BENCHMARKS.md")
    text = open(path, encoding="utf-8").read()
    heading = "## Datasets: mirror vs img2dataset"
    if heading in text:
        start = text.index(heading)
        rest = text.find("\n## ", start + len(heading))
        text = text[:start] + text[rest + 1:] if rest != -1 else text[:start]
    text = text.rstrip("\n") + "\n\n" + heading + "\n\n" + report
    open(path, "w", encoding="utf-8").write(text)
