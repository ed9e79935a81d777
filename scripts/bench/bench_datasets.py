"""The dataset benchmark of issue 15: `mirror urls TABLE --format webdataset` against img2dataset on the same
5,000-row CSV served by nginx on loopback.

Run by `scripts/bench/bench-datasets`, which installs what is missing and builds mirror (release). Two cells, each running
its rows REPS times, interleaved, the order rotated every repetition, all with the same connection count (16):

- bytes as served: mirror `--encode keep` and img2dataset `--resize_mode no --disable_all_reencoding True`, and
  mirror with its defaults (no --encode, no --resize: served JPEGs stored as they are, the other formats converted
  to JPEG, so every sample is a .jpg; img2dataset's own default resizes, so it has no counterpart here);
- resize: mirror `--resize center-crop --size 256 --encode jpeg --quality 95` and img2dataset
  `--resize_mode center_crop --image_size 256 --encode_format jpg --encode_quality 95`.

Then mirror alone, with the same resize, once per served format (the corpus split by extension into one table per
format: jpg, png, webp, gif) per repetition, for its CPU per image by format. `--formats-only` runs just that part.

Then blurring faces, on the same rows as a Parquet table (url, caption, face_bboxes: DataComp's column, 1 to 3 boxes
a row as fractions of the image, `list<list<double>>`): mirror `--blur-col face_bboxes` and img2dataset `--bbox_col
face_bboxes`, each with the resize above, and mirror with the resize and no blur on the same table (what the blur
costs). `--blur-only` runs just that part. Every blurred run's shards are checked as the resize's are, and mirror's
samples each say they blurred their row's boxes (`blurred_boxes`).

Reported are medians of images/s, CPU ms per image (user + sys of the whole process tree / rows) and peak RSS,
mirror/img2dataset ratios (of the medians, and paired: the median of the per-repetition ratios), and the per-format
table. Every run's shards are checked (read with Python's tarfile): every row of its table present as a sample;
bytes identical to the served files where kept; 256×256 where resized; every image a JPEG named .jpg with mirror's
defaults and wherever JPEG is asked for. A failed check or exit code makes the script exit 1 and leave
BENCHMARKS.md alone.

The report goes into BENCHMARKS.md's section "## Datasets: mirror vs img2dataset", between the markers
`<!-- bench-datasets:start -->` and `<!-- bench-datasets:end -->`, so hand-written text around them survives; the
per-format table has its own inner markers, which `--formats-only` replaces alone. Without the markers the whole
section is replaced (and the markers written for the next time).
"""
import argparse
import csv
import io
import json
import os
import shutil
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))  # scripts/lib
import benchlib  # noqa: E402  (the corpus, nginx and the measuring, shared with scripts/bench/bench)
from mirrorscripts import median, tar_members  # noqa: E402

HEADING = "## Datasets: mirror vs img2dataset"
START, END = "<!-- bench-datasets:start -->", "<!-- bench-datasets:end -->"
FORMATS_START, FORMATS_END = "<!-- bench-datasets:formats:start -->", "<!-- bench-datasets:formats:end -->"
BLUR_START, BLUR_END = "<!-- bench-datasets:blur:start -->", "<!-- bench-datasets:blur:end -->"
FORMATS = ["jpg", "png", "webp", "gif"]
FORMAT_NAMES = {"jpg": "JPEG", "png": "PNG", "webp": "WebP", "gif": "GIF"}
METADATA = ("json", "txt")  # every other member of a shard is a sample's image
RESIZE_LABEL = "resize 256 center crop, JPEG 95"

# The rows of the main table: label, tool, variant; a cell's rows run interleaved.
ROWS = {
    "mirror-keep": ("mirror, bytes as served", "mirror", "keep"),
    "img2dataset-keep": ("img2dataset, bytes as served", "img2dataset", "keep"),
    "mirror-defaults": ("mirror, defaults", "mirror", "defaults"),
    "mirror-resize": (f"mirror, {RESIZE_LABEL}", "mirror", "resize"),
    "img2dataset-resize": (f"img2dataset, {RESIZE_LABEL}", "img2dataset", "resize"),
}
CELLS = [["mirror-keep", "img2dataset-keep", "mirror-defaults"], ["mirror-resize", "img2dataset-resize"]]
# The blur's rows, run interleaved on the Parquet table.
BLUR_ROWS = {
    "mirror-blur": (f"mirror, blur faces, {RESIZE_LABEL}", "mirror", "blur"),
    "img2dataset-blur": (f"img2dataset, blur faces, {RESIZE_LABEL}", "img2dataset", "blur"),
    "mirror-noblur": (f"mirror, no blur, {RESIZE_LABEL} (same Parquet table)", "mirror", "resize"),
}
PAIRS = [("bytes as served", "mirror-keep", "img2dataset-keep"), (RESIZE_LABEL, "mirror-resize", "img2dataset-resize")]

parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
parser.add_argument("--root", required=True)
parser.add_argument("--build-dir", required=True)
parser.add_argument("--rows", type=int, default=5000)
parser.add_argument("--reps", type=int, default=3)
parser.add_argument("--concurrency", type=int, default=16)
parser.add_argument("--formats-only", action="store_true",
                    help="run only mirror's per-format resize runs; replace only the per-format table in the report")
parser.add_argument("--blur-only", action="store_true",
                    help="run only the blurring of faces (mirror and img2dataset); replace only its table in the report")
parser.add_argument("--no-report", action="store_true", help="print the tables; leave BENCHMARKS.md alone")
parser.add_argument("--scratch", help="where the tables and every run's output go (default BUILD_DIR/scratch-datasets, on "
                    "disk; /dev/shm/… measures the tools' own work, without the file system's)")
args = parser.parse_args()

command_line = f"scripts/bench/bench-datasets --rows {args.rows} --reps {args.reps}"
if args.concurrency != 16:
    command_line += f" --concurrency {args.concurrency}"
if args.formats_only:
    command_line += " --formats-only"
if args.blur_only:
    command_line += " --blur-only"
if args.formats_only and args.blur_only:
    raise SystemExit("bench-datasets: --formats-only and --blur-only each run one part; give one")
report_path = os.path.join(args.root, "BENCHMARKS.md")


def section_bounds(text):
    """(start, end) of the Datasets section in `text` (end: the next "## " heading or the end), or None."""
    if HEADING not in text:
        return None
    start = text.index(HEADING)
    rest = text.find("\n## ", start + len(HEADING))
    return start, (rest + 1 if rest != -1 else len(text))


def marked(text, bounds, opening, closing):
    """(start of `opening`, end of `closing`) inside `bounds`, in that order, or None."""
    if bounds is None:
        return None
    section = text[bounds[0]:bounds[1]]
    a = section.find(opening)
    b = section.find(closing, a + len(opening)) if a != -1 else -1
    if a == -1 or b == -1:
        return None
    return bounds[0] + a, bounds[0] + b + len(closing)


def splice(text, generated, inner):
    """BENCHMARKS.md with this run's part in place: `generated` (a full run, markers included) between the outer
    markers, or (with --formats-only or --blur-only) `inner`, (opening, closing, block), between its own markers."""
    bounds = section_bounds(text)
    if inner is not None:
        opening, closing, block = inner
        outer = marked(text, bounds, START, END)
        found = marked(text, bounds, opening, closing)
        if found:
            return text[:found[0]] + block + text[found[1]:]
        at = outer[1] - len(END)  # no such table yet: it goes last inside the generated part
        return text[:at] + block + "\n\n" + text[at:]
    outer = marked(text, bounds, START, END)
    if outer:
        return text[:outer[0]] + generated + text[outer[1]:]
    section = HEADING + "\n\n" + generated + "\n"
    if bounds:  # no markers: the whole section goes, as before the markers existed
        after = text[bounds[1]:]
        return text[:bounds[0]] + section + ("\n" + after if after else "")
    return text.rstrip("\n") + "\n\n" + section


if not args.no_report:  # say now, not after the runs, what the report will do
    text = open(report_path, encoding="utf-8").read() if os.path.exists(report_path) else ""
    bounds = section_bounds(text)
    if (args.formats_only or args.blur_only) and not marked(text, bounds, START, END):
        part = "--formats-only replaces only the per-format table" if args.formats_only else \
            "--blur-only replaces only the blur's table"
        raise SystemExit(f"bench-datasets: {part} between the markers of a full run, and {report_path} has none in "
                         f"\"{HEADING}\"; run it in full once, or add --no-report")
    if bounds and not marked(text, bounds, START, END):
        lines_lost = text[bounds[0]:bounds[1]].count("\n")
        benchlib.log(f"bench-datasets: warning: \"{HEADING}\" in BENCHMARKS.md has no {START} … {END} markers: the whole "
                  f"section ({lines_lost} lines, hand-written notes included) will be replaced; put the markers "
                  "around its generated part to keep the rest")

mirror = os.path.join(args.root, ".build-release", "release", "mirror")
if not os.path.exists(mirror):
    raise SystemExit(f"bench-datasets: {mirror} is missing (scripts/lib/build makes it)")
venv_bin = os.path.join(args.build_dir, "venv", "bin")
www = os.path.join(args.build_dir, "www")
corpus_dir = os.path.join(www, f"corpus-v{benchlib.CORPUS_VERSION}-{args.rows}")
index = benchlib.generate_corpus(corpus_dir, args.rows)
files = index["files"]
served_digests = {digest for _, _, digest in files}
scratch = args.scratch or os.path.join(args.build_dir, "scratch-datasets")
logs = os.path.join(args.build_dir, "logs-datasets")
shutil.rmtree(scratch, ignore_errors=True)
os.makedirs(scratch)
os.makedirs(logs, exist_ok=True)


def megapixels(name):
    from PIL import Image
    with Image.open(os.path.join(corpus_dir, name)) as image:
        return image.size[0] * image.size[1] / 1e6


def extension(name):
    return name.rsplit(".", 1)[-1].lower()


nginx = benchlib.Nginx(www, os.path.join(args.build_dir, "state"))
base = f"http://127.0.0.1:{nginx.port}/{os.path.basename(corpus_dir)}"


def write_table(path, chosen):
    """A CSV of `chosen` corpus files; returns what the checks expect of it."""
    with open(path, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["url", "caption"])
        for name, _, _ in chosen:
            writer.writerow([f"{base}/{name}", f"image {name[1:].split('.')[0]}, a benchmark photo"])
    return {"path": path, "rows": len(chosen), "jpg_rows": sum(extension(name) == "jpg" for name, _, _ in chosen)}


tables = {"all": write_table(os.path.join(scratch, "table.csv"), files)}
for fmt in FORMATS:
    chosen = [f for f in files if extension(f[0]) == fmt]
    if chosen:
        tables[fmt] = write_table(os.path.join(scratch, f"table-{fmt}.csv"), chosen)
        tables[fmt].update(bytes=sum(size for _, size, _ in chosen),
                           median_kb=statistics.median(size for _, size, _ in chosen) / 1e3,
                           median_mp=statistics.median(megapixels(name) for name, _, _ in chosen),
                           total_mp=sum(megapixels(name) for name, _, _ in chosen))
formats = [fmt for fmt in FORMATS if fmt in tables]


def write_blur_table(path, chosen):
    """A Parquet table of `chosen` corpus files with 1 to 3 face boxes a row (fixed by the seed), DataComp's
    `face_bboxes` column; returns what the checks expect of it."""
    import random
    import pyarrow as pa
    import pyarrow.parquet as pq
    rng = random.Random(15)
    urls, captions, boxes = [], [], []
    for name, _, _ in chosen:
        urls.append(f"{base}/{name}")
        captions.append(f"image {name[1:].split('.')[0]}, a benchmark photo")
        row = []
        for _ in range(rng.randint(1, 3)):
            width, height = rng.uniform(0.05, 0.3), rng.uniform(0.05, 0.3)
            x0, y0 = rng.uniform(0, 1 - width), rng.uniform(0, 1 - height)
            row.append([round(x0, 4), round(y0, 4), round(x0 + width, 4), round(y0 + height, 4)])
        boxes.append(row)
    table = pa.table({"url": urls, "caption": captions,
                      "face_bboxes": pa.array(boxes, type=pa.list_(pa.list_(pa.float64())))})
    pq.write_table(table, path)
    return {"path": path, "rows": len(chosen), "jpg_rows": sum(extension(name) == "jpg" for name, _, _ in chosen),
            "boxes": sum(len(row) for row in boxes)}


if not args.formats_only:
    tables["blur"] = write_blur_table(os.path.join(scratch, "table-blur.parquet"), files)
env = dict(os.environ, XDG_CACHE_HOME=os.path.join(scratch, "xdg"), NO_ALBUMENTATIONS_UPDATE="1", no_proxy="127.0.0.1")
for variable in ("http_proxy", "HTTP_PROXY"):
    env.pop(variable, None)
c = str(args.concurrency)


def command(tool, variant, table, out):
    if tool == "mirror":
        argv = [mirror, "urls", table, "--out", out, "--format", "webdataset", "--shard-size", "1000",
                "--concurrency", c, "--per-host", c, "--no-cache", "--quiet"]
        if variant == "keep":
            argv += ["--encode", "keep"]
        elif variant in ("resize", "blur"):
            argv += ["--resize", "center-crop", "--size", "256", "--encode", "jpeg", "--quality", "95"]
        if variant == "blur":
            argv += ["--blur-col", "face_bboxes"]
        return argv  # "defaults": neither --encode nor --resize
    input_format = "parquet" if table.endswith(".parquet") else "csv"
    argv = [os.path.join(venv_bin, "img2dataset"), "--url_list", table, "--input_format", input_format, "--url_col",
            "url", "--caption_col", "caption", "--output_folder", out, "--output_format", "webdataset",
            "--number_sample_per_shard", "1000", "--processes_count", "1", "--thread_count", c, "--timeout", "30",
            "--retries", "0", "--enable_wandb", "False"]
    if variant in ("resize", "blur"):
        argv += ["--resize_mode", "center_crop", "--image_size", "256", "--encode_format", "jpg", "--encode_quality", "95"]
    if variant == "blur":
        argv += ["--bbox_col", "face_bboxes"]
    else:
        argv += ["--resize_mode", "no", "--disable_all_reencoding", "True"]
    return argv


def inspect(out, resized):
    """What the run's tar shards hold: samples (image members), those named .jpg with JPEG bytes, those whose bytes
    are a served file's, and (when resized) those that are 256×256; plus the image extensions seen."""
    from PIL import Image
    seen = {"samples": 0, "jpeg": 0, "as_served": 0, "square": 0, "extensions": {}, "blurred_boxes": 0}
    for name in sorted(os.listdir(out)) if os.path.isdir(out) else []:
        if not name.endswith(".tar"):
            continue
        for member, data in tar_members(os.path.join(out, name)):
            if data is not None and extension(member) == "json":
                seen["blurred_boxes"] += json.loads(data).get("blurred_boxes") or 0
            if data is None or extension(member) in METADATA:
                continue
            ext = member.rsplit(".", 1)[-1] if "." in member else ""
            seen["samples"] += 1
            seen["extensions"][ext] = seen["extensions"].get(ext, 0) + 1
            seen["jpeg"] += ext == "jpg" and data[:3] == b"\xff\xd8\xff"
            seen["as_served"] += benchlib.digest_bytes(data) in served_digests
            if resized:
                try:
                    seen["square"] += Image.open(io.BytesIO(data)).size == (256, 256)
                except Exception:  # noqa: BLE001  (not an image: counted as not square)
                    pass
    return seen


def problems_of(tool, variant, table, seen, exit_code):
    """What in a run's output contradicts what it was asked for (empty when nothing)."""
    n = table["rows"]
    out = []
    if exit_code != 0:
        out.append(f"exit {exit_code}")
    if seen["samples"] != n:
        out.append(f"{seen['samples']} samples for {n} rows")
    if variant == "keep" and seen["as_served"] != seen["samples"]:
        out.append(f"{seen['samples'] - seen['as_served']} not byte for byte as served")
    if variant == "defaults":
        if seen["as_served"] != table["jpg_rows"]:
            out.append(f"{seen['as_served']} samples as served, not the {table['jpg_rows']} served JPEGs")
    if variant in ("defaults", "resize", "blur") and seen["jpeg"] != seen["samples"]:
        others = ", ".join(f"{count} .{ext}" for ext, count in sorted(seen["extensions"].items()) if ext != "jpg")
        out.append(f"{seen['samples'] - seen['jpeg']} not a JPEG named .jpg ({others or 'JPEG bytes missing'})")
    if variant in ("resize", "blur") and seen["square"] != seen["samples"]:
        out.append(f"{seen['samples'] - seen['square']} not 256×256")
    if variant == "blur" and tool == "mirror" and seen["blurred_boxes"] != table["boxes"]:
        out.append(f"{seen['blurred_boxes']} boxes blurred of the table's {table['boxes']}")
    return out


def run(key, tool, variant, table, rep, cell):
    out = os.path.join(scratch, "out", f"{key}-r{rep}")
    shutil.rmtree(out, ignore_errors=True)
    stem = os.path.join(logs, f"{key}-r{rep}")
    result = benchlib.measure(command(tool, variant, table["path"], out), env, stem + ".out", stem + ".err", timeout=900)
    seen = inspect(out, variant in ("resize", "blur"))
    problems = problems_of(tool, variant, table, seen, result["exit"])
    n = table["rows"]
    record = {"key": key, "tool": tool, "variant": variant, "cell": cell, "rep": rep, "rows": n, **seen, **result,
              "problems": problems, "images_per_s": n / result["wall"],
              "cpu_ms": (result["user"] + result["sys"]) / n * 1000,
              "rss": max(result["rss_max_process"], result["rss_tree_sampled"])}
    benchlib.log(f"bench-datasets: {key} rep {rep}: {seen['samples']}/{n} samples, {record['images_per_s']:.0f} img/s, "
              f"{record['cpu_ms']:.2f} ms CPU/img, {record['rss'] / 1e6:.0f} MB, exit {result['exit']}"
              + (f" — FAILED: {'; '.join(problems)} (output kept in {out})" if problems else ""))
    if not problems:
        shutil.rmtree(out, ignore_errors=True)  # 600 MB a run at 5,000 rows
    return record


records = []
try:
    if not args.formats_only and not args.blur_only:
        for cell, keys in enumerate(CELLS):
            for rep in range(args.reps):
                shift = rep % len(keys)
                for key in keys[shift:] + keys[:shift]:
                    _, tool, variant = ROWS[key]
                    records.append(run(key, tool, variant, tables["all"], rep, cell))
    for rep in range(args.reps if not args.blur_only else 0):
        shift = rep % len(formats)
        for fmt in formats[shift:] + formats[:shift]:
            records.append(run(f"mirror-resize-{fmt}", "mirror", "resize", tables[fmt], rep, "formats"))
    blur_keys = list(BLUR_ROWS)
    for rep in range(args.reps if not args.formats_only else 0):
        shift = rep % len(blur_keys)
        for key in blur_keys[shift:] + blur_keys[:shift]:
            _, tool, variant = BLUR_ROWS[key]
            records.append(run(key, tool, variant, tables["blur"], rep, "blur"))
finally:
    nginx.stop()
results_name = ("results-datasets-formats.json" if args.formats_only else
                "results-datasets-blur.json" if args.blur_only else "results-datasets.json")
with open(os.path.join(args.build_dir, results_name), "w") as handle:
    json.dump({"command": command_line, "records": records}, handle, indent=1)


def of(key):
    return [r for r in records if r["key"] == key]


def samples_cell(cell, rows, variant):
    """The "samples in the shards" column: the smallest count, and what every run's check confirmed."""
    samples = min(r["samples"] for r in cell)
    failed = sorted({p for r in cell for p in r["problems"]})
    if failed:
        return f"{samples:,} of {rows:,} — FAILED: {'; '.join(failed)}"
    confirmed = {"keep": "bytes as served", "defaults": "all .jpg", "resize": "all 256×256 .jpg",
                 "blur": "all 256×256 .jpg"}[variant]
    return f"{samples:,} of {rows:,} ({confirmed})"


def ratio_text(mirror_runs, other_runs, field):
    """"2.51× (paired 2.45×, 2.10–2.80)": the ratio of the medians and the median of the per-repetition ratios."""
    of_medians = median(r[field] for r in mirror_runs) / median(r[field] for r in other_runs)
    by_rep = {r["rep"]: r for r in other_runs}
    paired = [r[field] / by_rep[r["rep"]][field] for r in mirror_runs if r["rep"] in by_rep]
    spread = f", {min(paired):.2f}–{max(paired):.2f}" if len(paired) > 1 else ""
    return f"{of_medians:.2f}× (paired per repetition {median(paired):.2f}×{spread})"


runs = f"medians of {args.reps} runs" if args.reps > 1 else "one run"
mix = ", ".join(f"{FORMAT_NAMES[fmt]} {tables[fmt]['rows'] / args.rows:.0%}" for fmt in formats)
main_lines = []
if not args.formats_only and not args.blur_only:
    main_lines = [
        f"{args.rows:,}-row CSV (url, caption) of the benchmark corpus "
        f"({sum(size for _, size, _ in files) / 1e6:.0f} MB: {mix}), served by nginx on loopback, "
        f"{args.concurrency} connections each, WebDataset shards of 1,000; {runs}, interleaved "
        "within each group of rows (bytes as served and defaults; resize), the order rotated every repetition. "
        "CPU is user + sys of the whole process tree per image; RSS the peak of the tree. *Bytes as served*: mirror "
        "`--encode keep`, img2dataset `--resize_mode no --disable_all_reencoding True`. *Defaults*: mirror with no "
        "`--encode` or `--resize` (served JPEGs stored as they are, other formats converted to JPEG; img2dataset's "
        "default resizes, so it has no row here). *Resize*: mirror `--resize center-crop --size 256 --encode jpeg "
        "--quality 95`, img2dataset `--resize_mode center_crop --image_size 256 --encode_format jpg "
        "--encode_quality 95`. The last column says what was checked in every run's shards.",
        "",
        "| | images/s | CPU ms / image | peak RSS | samples in the shards |",
        "| --- | ---: | ---: | ---: | --- |",
    ]
    for keys in CELLS:
        for key in keys:
            label, _, variant = ROWS[key]
            cell = of(key)
            main_lines.append(
                f"| {label} | {median(r['images_per_s'] for r in cell):,.0f} | {median(r['cpu_ms'] for r in cell):.2f} "
                f"| {median(r['rss'] for r in cell) / 1e6:.0f} MB | {samples_cell(cell, args.rows, variant)} |")
    main_lines += ["", "mirror / img2dataset (ratio of the medians; paired: the median of the ratios within each "
                       "repetition, and their range):", ""]
    for label, mirror_key, other_key in PAIRS:
        main_lines.append(f"- {label}: images/s {ratio_text(of(mirror_key), of(other_key), 'images_per_s')}; "
                          f"CPU per image {ratio_text(of(mirror_key), of(other_key), 'cpu_ms')}.")

format_lines = []
if not args.blur_only:
    format_lines = [
        f"### mirror by served format ({RESIZE_LABEL})",
        "",
        f"The same corpus split by extension into one table per format, mirror alone with `--resize center-crop --size "
        f"256 --encode jpeg --quality 95`, {args.concurrency} connections, once per format per repetition (the order "
        f"rotated); {runs}. CPU is user + sys per image; per megapixel, over the served images' pixels.",
        "",
        "| served format | images | median size | median megapixels | images/s | CPU ms / image | CPU ms / megapixel "
        "| peak RSS | samples in the shards |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for fmt in formats:
        cell, table = of(f"mirror-resize-{fmt}"), tables[fmt]
        cpu_ms = median(r["cpu_ms"] for r in cell)
        format_lines.append(
            f"| {FORMAT_NAMES[fmt]} | {table['rows']:,} | {table['median_kb']:.0f} KB | {table['median_mp']:.2f} "
            f"| {median(r['images_per_s'] for r in cell):,.0f} | {cpu_ms:.2f} "
            f"| {cpu_ms * table['rows'] / table['total_mp']:.2f} | {median(r['rss'] for r in cell) / 1e6:.0f} MB "
            f"| {samples_cell(cell, table['rows'], 'resize')} |")
    if args.formats_only:
        format_lines += ["", f"Measured separately: `{command_line}`."]

blur_lines = []
if not args.formats_only:
    import importlib.metadata
    albumentations = importlib.metadata.version("albumentations")
    img2dataset_version = importlib.metadata.version("img2dataset")
    blur_table = tables["blur"]
    blur_lines = [
        f"### Blurring faces: mirror `--blur-col` vs img2dataset `--bbox_col` ({RESIZE_LABEL})",
        "",
        f"The same {blur_table['rows']:,} rows as a Parquet table (url, caption, `face_bboxes` as DataComp has it, "
        f"`list<list<double>>`: 1 to 3 boxes a row, {blur_table['boxes']:,} in all, each 5–30% of the image's width "
        f"and height), {args.concurrency} connections each, {runs}, interleaved, the order rotated every repetition. "
        f"mirror `--blur-col face_bboxes` and img2dataset `--input_format parquet --bbox_col face_bboxes` "
        f"(img2dataset {img2dataset_version}, albumentations {albumentations}), each with the resize above; and "
        "mirror with the resize alone on the same table, for what the blur costs it. Checked in every run's shards "
        "as the resize is, and mirror's samples' `blurred_boxes` summed to the table's boxes.",
        "",
        "| | images/s | CPU ms / image | peak RSS | samples in the shards |",
        "| --- | ---: | ---: | ---: | --- |",
    ]
    for key, (label, _, variant) in BLUR_ROWS.items():
        cell = of(key)
        blur_lines.append(
            f"| {label} | {median(r['images_per_s'] for r in cell):,.0f} | {median(r['cpu_ms'] for r in cell):.2f} "
            f"| {median(r['rss'] for r in cell) / 1e6:.0f} MB | {samples_cell(cell, blur_table['rows'], variant)} |")
    blur_cost = median(r["cpu_ms"] for r in of("mirror-blur")) - median(r["cpu_ms"] for r in of("mirror-noblur"))
    blur_lines += [
        "",
        f"- mirror / img2dataset, blurring: images/s {ratio_text(of('mirror-blur'), of('img2dataset-blur'), 'images_per_s')}; "
        f"CPU per image {ratio_text(of('mirror-blur'), of('img2dataset-blur'), 'cpu_ms')}.",
        f"- What the blur adds to mirror's CPU per image (medians, blur minus no blur): {blur_cost:.2f} ms.",
    ]
    if args.blur_only:
        blur_lines += ["", f"Measured separately: `{command_line}`."]

command_lines = ["", f"Command: `{command_line}`."]
full = not args.formats_only and not args.blur_only
sections = [lines for lines in (main_lines, format_lines, blur_lines) if lines]
printed = []
for lines in sections:
    printed += ([""] if printed else []) + lines
print("\n".join(printed + (command_lines if full else [])))
failures = [r for r in records if r["problems"]]
if failures:
    benchlib.log(f"bench-datasets: {len(failures)} run(s) failed their checks: "
              + "; ".join(f"{r['key']} rep {r['rep']}: {', '.join(r['problems'])}" for r in failures)
              + ("" if args.no_report else "; BENCHMARKS.md left alone"))
    sys.exit(1)
if not args.no_report:
    # Blank lines around the markers, so that no table or paragraph runs into an HTML comment.
    formats_block = "\n".join([FORMATS_START, "", *format_lines, "", FORMATS_END])
    blur_block = "\n".join([BLUR_START, "", *blur_lines, "", BLUR_END])
    generated = "\n".join([START, "", *main_lines, *([""] if main_lines else []), formats_block, "", blur_block,
                           *command_lines, "", END])
    inner = ((FORMATS_START, FORMATS_END, formats_block) if args.formats_only else
             (BLUR_START, BLUR_END, blur_block) if args.blur_only else None)
    text = open(report_path, encoding="utf-8").read() if os.path.exists(report_path) else ""
    text = splice(text, generated, inner)
    with open(report_path, "w", encoding="utf-8") as handle:
        handle.write(text)
    benchlib.log(f"bench-datasets: wrote {report_path}")
