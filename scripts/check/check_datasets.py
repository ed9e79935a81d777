"""Judges mirror's dataset outputs by their real readers: the `webdataset` package and Hugging Face `datasets`.

Run by scripts/check/check-datasets (which makes the virtualenv and builds mirror). Everything is local: the images are
served by Python's http.server on loopback (mirrorscripts.serve_files, which can answer 503 as a host that is down),
the search by mirror-emulator.

The served corpus is mixed the way real hosts serve it, every file distinct (seeded noise) and of its own size
(40–300 px a side, some square, some smaller and some larger than the 64 px resize target): half JPEG (RGB, a few
grayscale), then PNG (RGB, RGBA with a transparent quarter, a palette PNG with a transparent index), WebP (lossy,
some with alpha), GIF (animated, each frame its own colour, and still); a few non-JPEGs are served under a `.jpg`
name, as CDNs do. Bad rows (`not a url`) and missing ones (404) are mixed in, so every `mirror urls` run exits 3.

What it proves:
- WebDataset shards with no --encode are one extension throughout (`KEY.jpg`), so `datasets.load_dataset("webdataset")`
  loads them: JPEGs are stored byte for byte as served, the rest converted (alpha onto white, an animation's first
  frame), each at its served size; `webdataset.WebDataset` reads the same samples. With `--resize center-crop --size
  64` every image is 64×64 (small ones upscaled) and both readers load them.
- Each sample's record carries `format` and the served `original_format`, `original_width`, `original_height` and
  `original_bytes`; `sizes.json` beside the shards counts each tar's samples (open_clip reads it); each shard has
  its `NNNNN_stats.json`, and the stats add up to the table's rows.
- `--encode keep` shards keep the served bytes under their own extensions, which `webdataset` reads (`datasets`
  cannot load mixed extensions; that is documented, not checked).
- `--retry-failed`: a run while the host answers 503 for a third of the image rows of shards 1 and 3 (`--retries 0`)
  exits 5 and files them transient (records' `reason` http-503, `transient` true); once the host recovers, a run with
  `--retry-failed` requests those rows once more and no other (no 404 row), exits 3 (the 404s and bad rows remain),
  rewrites only shards 1 and 3 (the others keep their bytes and mtimes), and both readers read the merged shards as
  they read the first section's: each key exactly once, in row order, every row but the 404s and the bad ones.
- `--format folder` (bytes as served) and `--format folder --resize center-crop --size 64` (each format kept, GIF as
  PNG) load with `datasets.load_dataset("imagefolder")` with their captions and recorded sizes; `metadata.jsonl` is a
  regular file with the manifest's bytes.
- Labelled folders (`--queries`, against mirror-emulator) load with their labels; the README's Parquet recipe works.
- A folder the Hugging Face Hub takes (issue 45): a 12,500-row table (small images, JPEG, PNG with and without alpha,
  WebP, GIF, each made distinct by its row number in a comment) into a folder: no folder holds more than 10,000 files
  (the images are in 00000/ … 00012/, 1,000 each, in saving order), `metadata.jsonl` is the manifest's copy with every
  image on exactly one line, `load_dataset("imagefolder")` loads 12,500 rows whose images are those files; a rerun makes
  no request (the server's log); a top-up of 600 rows adds 600, fills 00012/ and opens 00013/, and keeps the rule; and
  what the README's `hf upload` line would upload is the images and the two jsonl files, never `.mirror/`.

Every check says what it found when it fails; a failed check stops its section, the other sections still run, and
the script exits 1 if any check failed.
"""
import csv
import gzip
import hashlib
import io
import json
import os
import random
import shlex
import struct
import subprocess
import sys
import tempfile
import time
import zlib
from dataclasses import dataclass, field

import datasets
import webdataset as wds
from PIL import Image, ImageStat

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))  # scripts/lib: mirrorscripts
from mirrorscripts import (Checks, emulator_environment, free_port, requests_logged, start_file_server, stop,
                           tar_members)

MIRROR = sys.argv[1]
EMULATOR = sys.argv[2]
ROWS = 300
SHARD_ROWS = 64
FLAKY_SHARDS = (1, 3)  # the shards whose rows answer 503 at first in the --retry-failed section
SIZE = 64  # the --size of the resized runs
EXTENSIONS = {"jpeg": "jpg", "png": "png", "webp": "webp", "gif": "gif"}
datasets.disable_progress_bars()
datasets.logging.set_verbosity_error()


# Checks ---------------------------------------------------------------------------------------------------------------

checks = Checks("check-datasets")
# check(condition, message): passes, or records the failure (`message` says what was found) and stops the section
check, section = checks.check, checks.section


def check_each(items, predicate, message, describe=str):
    """Checks `predicate` for every item; a failure names how many failed and the first few (by `describe`)."""
    wrong = [item for item in items if not predicate(item)]
    found = f" — {len(wrong)} of {len(items)} not, e.g. {'; '.join(describe(item) for item in wrong[:3])}" if wrong else ""
    check(items and not wrong, f"{message} ({len(items)} checked){found}")


def loads(what, load):
    """Runs a reader, turning an exception into a failed check that quotes it."""
    try:
        result = load()
    except Exception as error:
        check(False, f"{what}: {type(error).__name__}: {str(error)[:400]}")
    return result


# The served corpus ----------------------------------------------------------------------------------------------------

# Twenty variants repeat along the table: half JPEG, the rest the other formats real hosts serve.
VARIANTS = (["jpeg"] * 9 + ["jpeg-gray"] + ["png", "png", "png-alpha", "png-alpha", "png-palette"]
            + ["webp", "webp", "webp-alpha"] + ["gif-animated", "gif"])
FRAME_COLOURS = [(200, 40, 40), (40, 200, 40), (40, 40, 200)]


@dataclass
class Served:
    index: int
    name: str  # the file name served (also the URL's path)
    format: str  # jpeg, png, webp, gif
    variant: str
    width: int
    height: int
    bytes: int = 0
    sha256: str = ""
    alpha: bool = False  # has a fully transparent top-left quarter (black beneath)
    frame_colours: list = field(default_factory=list)  # an animation's colour per frame


def kind(index):
    """What row `index` is: an image, a missing one, or a bad row."""
    if index % 37 == 5:
        return "bad"
    if index % 41 == 9:
        return "missing"
    return "image"


def noisy(size, base, seed, amount=0.3):
    """`base` colour with seeded noise over it: no two images alike (mirror keeps one of identical bytes)."""
    noise = Image.frombytes("RGB", size, random.Random(seed).randbytes(size[0] * size[1] * 3))
    return Image.blend(Image.new("RGB", size, base), noise, amount)


def with_transparent_quarter(image):
    """RGBA with the top-left quarter fully transparent and black beneath (so dropping alpha would show black)."""
    rgba = image.convert("RGBA")
    rgba.paste((0, 0, 0, 0), (0, 0, image.width // 2, image.height // 2))
    return rgba


def make(index, directory):
    """Writes row `index`'s image into `directory` and describes it."""
    rng = random.Random(f"size {index}")
    small = index % 7 == 3  # smaller than SIZE both ways, to be upscaled
    width = rng.randint(40, SIZE - 1) if small else rng.randint(40, 300)
    height = width if rng.random() < 0.3 else (rng.randint(40, SIZE - 1) if small else rng.randint(40, 300))
    size = (width, height)
    variant = VARIANTS[index % len(VARIANTS)]
    fmt = variant.split("-")[0]
    base = tuple(rng.randint(0, 180) for _ in range(3))  # never white-ish, so a white pixel means composited
    image = noisy(size, base, index)
    served = Served(index, "", fmt, variant, width, height)
    # A few non-JPEGs under a .jpg name, as CDNs serve them (the type is sniffed from the bytes)
    extension = "jpg" if fmt != "jpeg" and index % 7 == 0 else EXTENSIONS[fmt]
    served.name = f"{index}.{extension}"
    path = os.path.join(directory, served.name)
    if variant == "jpeg":
        image.save(path, "JPEG", quality=90)
    elif variant == "jpeg-gray":
        image.convert("L").save(path, "JPEG", quality=90)
    elif variant == "png":
        image.save(path, "PNG")
    elif variant == "png-alpha":
        with_transparent_quarter(image).save(path, "PNG")
        served.alpha = True
    elif variant == "png-palette":
        palette = image.quantize(colors=255)
        colours = (palette.getpalette() + [0] * 768)[:255 * 3] + [0, 0, 0]  # index 255: black, transparent
        palette.putpalette(colours)
        palette.paste(255, (0, 0, width // 2, height // 2))
        palette.save(path, "PNG", transparency=255)
        served.alpha = True
    elif variant == "webp":
        image.save(path, "WEBP", quality=80)
    elif variant == "webp-alpha":
        with_transparent_quarter(image).save(path, "WEBP", quality=80)
        served.alpha = True
    elif variant == "gif":
        image.convert("P", palette=Image.ADAPTIVE).save(path, "GIF")
    elif variant == "gif-animated":
        count = 2 + index % 2
        served.frame_colours = [FRAME_COLOURS[(index + n) % 3] for n in range(count)]
        frames = [noisy(size, colour, f"{index} frame {n}", 0.2).convert("P", palette=Image.ADAPTIVE)
                  for n, colour in enumerate(served.frame_colours)]
        frames[0].save(path, "GIF", save_all=True, append_images=frames[1:], duration=100, loop=0)
    data = open(path, "rb").read()
    served.bytes, served.sha256 = len(data), hashlib.sha256(data).hexdigest()
    # The corpus is what it claims to be
    with Image.open(path) as opened:
        assert opened.size == size and opened.format.lower() == fmt, (path, opened.size, opened.format)
        assert not served.alpha or "A" in opened.mode or "transparency" in opened.info, path
        assert getattr(opened, "n_frames", 1) == max(1, len(served.frame_colours)), path
    return served


def sha256(data):
    return hashlib.sha256(data).hexdigest()


def rgb(image):
    image.load()  # decodes the pixels, not only the header
    return image.convert("RGB")


def white_ish(pixel):
    return all(channel > 230 for channel in pixel)


def quarter_points(size):
    """A point inside the transparent top-left quarter and one inside the opaque bottom-right, in an image of
    `size`: the served one, or a center crop of it (the quarters map onto the crop's quarters)."""
    width, height = size
    return (width // 4, height // 4), (3 * width // 4, 3 * height // 4)


def composited_on_white(image):
    """Whether a transparent pixel came out white and an opaque one did not."""
    pixels = rgb(image)
    clear, opaque = quarter_points(pixels.size)
    return white_ish(pixels.getpixel(clear)) and not white_ish(pixels.getpixel(opaque))


def nearest_frame(image, served):
    """Which of the animation's frame colours the image's mean colour is nearest."""
    mean = ImageStat.Stat(rgb(image)).mean
    distances = [sum((a - b) ** 2 for a, b in zip(mean, colour)) for colour in served.frame_colours]
    return distances.index(min(distances))


# The run's inputs and outputs -----------------------------------------------------------------------------------------

work = tempfile.mkdtemp(prefix="mirror-check-datasets-")
served_directory = os.path.join(work, "served")
os.makedirs(served_directory)
SERVED = {index: make(index, served_directory) for index in range(ROWS) if kind(index) == "image"}
EXPECTED = len(SERVED)
port = 0


def url_of(index):
    if kind(index) == "bad":
        return "not a url"
    name = SERVED[index].name if index in SERVED else f"{index}.jpg"  # a missing row: 404
    return f"http://127.0.0.1:{port}/{name}"


def mirror(arguments, expected_status, env):
    """Runs mirror and checks its exit status; returns the completed process."""
    run = subprocess.run([MIRROR, *arguments], capture_output=True, text=True, env=env)
    shown = " ".join(argument.replace(work + os.sep, "") for argument in arguments)
    found = "" if run.returncode == expected_status else f": {run.returncode} {run.stderr[-300:]}"
    check(run.returncode == expected_status, f"mirror {shown} exits {expected_status}{found}")
    return run


def served_of(key):
    return SERVED[int(key)]


def read_shards(directory):
    """The shards' tar members read directly: `{tar name: {key: {extension: bytes}}}`."""
    shards = {}
    for name in sorted(n for n in os.listdir(directory) if n.endswith(".tar")):
        samples = shards.setdefault(name, {})
        for member, data in tar_members(os.path.join(directory, name)):
            key, _, extension = os.path.basename(member).partition(".")
            samples.setdefault(key, {})[extension] = data
    return shards


def check_shard_files(directory, shards):
    """The shard count, each shard's stats, and sizes.json against the samples each tar holds."""
    check(len(shards) == (ROWS + SHARD_ROWS - 1) // SHARD_ROWS, f"{len(shards)} shards of {SHARD_ROWS} rows for {ROWS} rows")
    stems = [name[:-len(".tar")] for name in shards]
    missing = [stem for stem in stems if not os.path.exists(os.path.join(directory, stem + "_stats.json"))]
    check(not missing, "every shard has its NNNNN_stats.json" + (f"; missing: {missing}" if missing else ""))
    stats = [json.load(open(os.path.join(directory, stem + "_stats.json"))) for stem in stems]
    rows = sum(s["rows"] for s in stats)
    check(rows == ROWS, f"the stats add up to the table's {ROWS} rows: {rows}")
    path = os.path.join(directory, "sizes.json")
    check(os.path.exists(path), "sizes.json is beside the shards" + ("" if os.path.exists(path) else f": {sorted(os.listdir(directory))}"))
    sizes = json.load(open(path))
    counts = {name: len(samples) for name, samples in shards.items()}
    check(sizes == counts, "sizes.json counts each tar's samples" + ("" if sizes == counts else f": {sizes}, the tars hold {counts}"))
    samples = {key: parts for tar in shards.values() for key, parts in tar.items()}
    check(len(samples) == EXPECTED, f"the tars hold {len(samples)} samples, {EXPECTED} expected")
    return samples


def check_records(records, written_format, written_size=None):
    """Each record against what was served: `written_format(served)` is the format expected in the file,
    `written_size` the size (None: the served size)."""
    items = sorted(records.items())

    def describe(item):
        key, record = item
        s = served_of(key)
        return (f"{key} served {s.format} {s.width}×{s.height} {s.bytes} B: format={record.get('format')} "
                f"original_format={record.get('original_format')} original={record.get('original_width')}×"
                f"{record.get('original_height')} original_bytes={record.get('original_bytes')} "
                f"size={record.get('width')}×{record.get('height')}")

    check_each(items, lambda i: i[1].get("format") == written_format(served_of(i[0])),
               "each record's `format` is the written format", describe)
    check_each(items, lambda i: i[1].get("original_format") == served_of(i[0]).format,
               "each record's `original_format` is the served format", describe)
    check_each(items, lambda i: all(type(i[1].get(f)) is int for f in ("original_width", "original_height", "original_bytes"))
               and (i[1]["original_width"], i[1]["original_height"]) == (served_of(i[0]).width, served_of(i[0]).height),
               "each record's `original_width`/`original_height` are the served size, as integers", describe)
    check_each(items, lambda i: i[1].get("original_bytes") == served_of(i[0]).bytes,
               "each record's `original_bytes` is the served file's size", describe)
    check_each(items, lambda i: (i[1].get("width"), i[1].get("height"))
               == (written_size or (served_of(i[0]).width, served_of(i[0]).height)),
               f"each record's `width`/`height` is {'%d×%d' % written_size if written_size else 'the served size'}", describe)


def check_row_fields(records, captions):
    """The key, URL, caption and kept column of each record (`captions`: the caption read back, by key)."""
    items = sorted(records.items())
    check_each(items, lambda i: i[1].get("key") == i[0] and i[1].get("url") == url_of(int(i[0])),
               "each record carries its row's key and URL", lambda i: f"{i[0]}: {i[1].get('key')} {i[1].get('url')}")
    check_each(items, lambda i: captions.get(i[0]) == caption_of(int(i[0])) == i[1].get("caption"),
               "each caption is its row's", lambda i: f"{i[0]}: {captions.get(i[0])!r}")
    check_each(items, lambda i: i[1].get("source") == "check", "each record keeps the `source` column",
               lambda i: f"{i[0]}: {i[1].get('source')!r}")


def caption_of(index):
    return f'photo {index}, "quoted", ünïcode'


def check_pixels(images):
    """`images` by key, decoded: alpha composited onto white, an animation's first frame."""
    alpha = sorted((key, image) for key, image in images.items() if served_of(key).alpha)
    animated = sorted((key, image) for key, image in images.items() if served_of(key).frame_colours)
    check_each(alpha, lambda i: composited_on_white(i[1]),
               "a transparent pixel of each image with alpha (PNG, palette PNG, WebP) is white, an opaque one is not",
               lambda i: f"{i[0]} ({served_of(i[0]).variant}): {[rgb(i[1]).getpixel(p) for p in quarter_points(i[1].size)]}")
    check_each(animated, lambda i: nearest_frame(i[1], served_of(i[0])) == 0,
               "each animated GIF is its first frame (by its colour)",
               lambda i: f"{i[0]}: mean {[round(c) for c in ImageStat.Stat(rgb(i[1])).mean]}, frames {served_of(i[0]).frame_colours}")


def check_jpeg_shards(directory, size):
    """Shards made with no --encode, resized to `size` (None: not resized): one `.jpg` per sample, read by both readers."""
    shards = read_shards(directory)
    samples = check_shard_files(directory, shards)
    check_each(sorted(samples.items()), lambda i: set(i[1]) == {"jpg", "json", "txt"},
               "every sample is KEY.jpg + KEY.json + KEY.txt", lambda i: f"{i[0]}: {sorted(i[1])}")
    check_each(sorted(samples.items()), lambda i: i[1]["jpg"][:3] == b"\xff\xd8\xff", "every KEY.jpg holds JPEG bytes",
               lambda i: f"{i[0]}: {i[1]['jpg'][:8]!r}")
    if size is None:
        jpegs = sorted((k, p) for k, p in samples.items() if served_of(k).format == "jpeg")
        check_each(jpegs, lambda i: sha256(i[1]["jpg"]) == served_of(i[0]).sha256,
                   "each JPEG served is stored byte for byte (sha256)", lambda i: f"{i[0]} ({served_of(i[0]).variant})")
    records = {key: json.loads(parts["json"]) for key, parts in samples.items()}
    check_records(records, lambda s: "jpeg", size)
    check_row_fields(records, {key: parts["txt"].decode() for key, parts in samples.items()})
    expected_size = (lambda s: size) if size else (lambda s: (s.width, s.height))
    describe_size = lambda i: f"{i[0]} ({served_of(i[0]).variant}, served {served_of(i[0]).width}×{served_of(i[0]).height}): {i[1].size}"

    decoded = loads("webdataset reads the shards",
                    lambda: list(wds.WebDataset(sorted(os.path.join(directory, n) for n in shards), shardshuffle=False).decode("pil")))
    check(len(decoded) == EXPECTED, f"webdataset reads {len(decoded)} samples, {EXPECTED} expected")
    check_each(decoded, lambda s: {k for k in s if not k.startswith("__")} == {"jpg", "json", "txt"},
               "webdataset reads each sample as jpg, json and txt", lambda s: f"{s['__key__']}: {sorted(s)}")
    images = {s["__key__"]: s["jpg"] for s in decoded}
    check_each(sorted(images.items()), lambda i: rgb(i[1]).size == expected_size(served_of(i[0])),
               f"webdataset decodes every image at {'%d×%d' % size if size else 'its served size'}", describe_size)
    check_pixels(images)

    hf = loads('datasets.load_dataset("webdataset") loads the shards',
               lambda: datasets.load_dataset("webdataset", data_files={"train": sorted(os.path.join(directory, n) for n in shards)}, split="train"))
    check(hf.num_rows == EXPECTED, f"datasets' webdataset loader reads {hf.num_rows} rows, {EXPECTED} expected")
    rows = loads("datasets decodes every image", lambda: {row["__key__"]: (row["jpg"], row["txt"]) for row in hf})
    # Features are inferred from the first samples: a later sample with another extension loads with no image
    check_each(sorted(rows.items()), lambda i: i[1][0] is not None, "datasets gives every row its image",
               lambda i: f"{i[0]} ({served_of(i[0]).variant}): jpg is None")
    check_each(sorted(rows.items()), lambda i: rgb(i[1][0]).size == expected_size(served_of(i[0])),
               f"datasets decodes every image at {'%d×%d' % size if size else 'its served size'}",
               lambda i: describe_size((i[0], i[1][0])))
    check(sorted(text for _, text in rows.values()) == sorted(s["txt"] for s in decoded), "datasets reads the same captions")


# The sections ---------------------------------------------------------------------------------------------------------

def webdataset_as_served_size():
    out = os.path.join(work, "shards")
    mirror(["urls", table, "--out", out, "--format", "webdataset", "--shard-size", str(SHARD_ROWS),
            "--keep-cols", "source", "--quiet"], 3, env)
    check_jpeg_shards(out, None)


def webdataset_resized():
    out = os.path.join(work, "shards-resized")
    mirror(["urls", table, "--out", out, "--format", "webdataset", "--shard-size", str(SHARD_ROWS),
            "--resize", "center-crop", "--size", str(SIZE), "--keep-cols", "source", "--quiet"], 3, env)
    smaller = [s for s in SERVED.values() if s.width < SIZE and s.height < SIZE]
    check(smaller, f"the corpus has {len(smaller)} images smaller than {SIZE} px both ways, to be upscaled")
    check_jpeg_shards(out, (SIZE, SIZE))


def webdataset_keep():
    out = os.path.join(work, "shards-keep")
    mirror(["urls", table, "--out", out, "--format", "webdataset", "--shard-size", str(SHARD_ROWS),
            "--encode", "keep", "--keep-cols", "source", "--quiet"], 3, env)
    shards = read_shards(out)
    samples = check_shard_files(out, shards)
    own = lambda s: {EXTENSIONS[s.format], "json", "txt"}
    check_each(sorted(samples.items()), lambda i: set(i[1]) == own(served_of(i[0])),
               "every sample's image has its served format's extension",
               lambda i: f"{i[0]} served {served_of(i[0]).format}: {sorted(i[1])}")
    extensions = {ext for parts in samples.values() for ext in parts} - {"json", "txt"}
    check(extensions == set(EXTENSIONS.values()), f"the extensions are mixed: {sorted(extensions)}")
    check_each(sorted(samples.items()), lambda i: sha256(i[1][EXTENSIONS[served_of(i[0]).format]]) == served_of(i[0]).sha256,
               "every image is stored byte for byte as served (sha256)", lambda i: f"{i[0]} ({served_of(i[0]).variant})")
    records = {key: json.loads(parts["json"]) for key, parts in samples.items()}
    check_records(records, lambda s: s.format)
    decoded = loads("webdataset reads the shards",
                    lambda: list(wds.WebDataset(sorted(os.path.join(out, n) for n in shards), shardshuffle=False).decode("pil")))
    check(len(decoded) == EXPECTED, f"webdataset reads {len(decoded)} samples, {EXPECTED} expected")
    image_of = lambda s: s[EXTENSIONS[served_of(s["__key__"]).format]]
    check_each(decoded, lambda s: rgb(image_of(s)).size == (served_of(s["__key__"]).width, served_of(s["__key__"]).height),
               "webdataset decodes every image (jpg, png, webp, gif) at its served size", lambda s: s["__key__"])


def webdataset_retry_failed():
    """A run while the host answers 503 for a third of the image rows of shards 1 and 3, then `--retry-failed` once it
    has recovered: only those two shards are written anew, and both readers read the merged shards whole."""
    out = os.path.join(work, "shards-retry")
    flaky = [i for i in sorted(SERVED) if i // SHARD_ROWS in FLAKY_SHARDS and i % 3 == 0]
    paths = sorted("/" + SERVED[i].name for i in flaky)
    shard_names = [f"{n:05d}{suffix}" for n in range((ROWS + SHARD_ROWS - 1) // SHARD_ROWS)
                   for suffix in (".tar", ".jsonl", "_stats.json")]
    arguments = ["urls", table, "--out", out, "--format", "webdataset", "--shard-size", str(SHARD_ROWS),
                 "--keep-cols", "source", "--quiet", "--json", "--retries", "0", "--no-cache"]  # the earlier runs' cache has them
    with open(UNAVAILABLE, "w") as handle:
        handle.write("\n".join(paths) + "\n")
    try:
        first = mirror(arguments, 5, env)
    finally:
        os.remove(UNAVAILABLE)
    summary = json.loads(first.stdout.strip().splitlines()[-1])
    check(summary.get("failures", {}).get("http-503") == len(flaky) and summary.get("transientFailures") == len(flaky),
          f"the first run filed the {len(flaky)} rows that answered 503 as transient failures: "
          f"failures {summary.get('failures')}, transientFailures {summary.get('transientFailures')}")
    lines = [json.loads(line) for n in sorted(os.listdir(out)) if n.endswith(".jsonl") for line in open(os.path.join(out, n))]
    refused = sorted(int(line["key"]) for line in lines if line.get("reason") == "http-503" and line.get("transient") is True)
    check(refused == flaky, f"the records file the {len(refused)} rows that answered 503 with reason http-503 and transient true")
    before = {name: (os.stat(os.path.join(out, name)).st_mtime_ns, open(os.path.join(out, name), "rb").read())
              for name in shard_names}

    start = requests_logged(IMAGE_LOG)[1]
    retry = mirror(arguments + ["--retry-failed"], 3, env)
    requested = [r for r in requests_logged(IMAGE_LOG, start)[0] if r[1] != "/robots.txt"]
    summary = json.loads(retry.stdout.strip().splitlines()[-1])
    got = {k: summary.get(k) for k in ("saved", "shardsRewritten", "missingTransient")}
    want = {"saved": len(flaky), "shardsRewritten": len(FLAKY_SHARDS), "missingTransient": 0}
    check(got == want, f"--retry-failed saved the rows that answered 503 and rewrote their shards: {got}, {want} expected")
    check(sorted(path for _, path, _ in requested) == paths,
          f"--retry-failed requested each of those {len(paths)} rows once, and no other (no 404 row): {len(requested)} requests")
    after = {name: (os.stat(os.path.join(out, name)).st_mtime_ns, open(os.path.join(out, name), "rb").read())
             for name in shard_names}
    steady = [name for name in shard_names if int(name[:5]) not in FLAKY_SHARDS]
    touched = [name for name in steady if before[name] != after[name]]
    check(not touched, f"the shards without a 503 row are not touched (same bytes, same mtime): {touched or len(steady)} files")
    same = [name for name in shard_names if int(name[:5]) in FLAKY_SHARDS and before[name][1] == after[name][1]]
    check(not same, f"shards {list(FLAKY_SHARDS)} were rewritten (tar, jsonl and stats)" + (f"; unchanged: {same}" if same else ""))

    # The merged shards by their readers: every check of the first section, and each key once, in row order
    check_jpeg_shards(out, None)
    tars = sorted(os.path.join(out, name) for name in os.listdir(out) if name.endswith(".tar"))
    keys = loads("webdataset reads the rewritten shards", lambda: [s["__key__"] for s in wds.WebDataset(tars, shardshuffle=False)])
    missing = sum(1 for i in range(ROWS) if kind(i) == "missing")
    bad = sum(1 for i in range(ROWS) if kind(i) == "bad")
    check(keys == [f"{i:09d}" for i in sorted(SERVED)],
          f"webdataset reads each key exactly once, in row order: {len(keys)} samples = {ROWS} rows - {missing} 404s - {bad} bad rows"
          + ("" if len(keys) == len(set(keys)) else f"; {len(keys) - len(set(keys))} keys twice"))
    hf = loads('datasets.load_dataset("webdataset") loads the rewritten shards',
               lambda: datasets.load_dataset("webdataset", data_files={"train": tars}, split="train"))
    hf_keys = list(hf["__key__"])
    check(sorted(hf_keys) == [f"{i:09d}" for i in sorted(SERVED)],
          f"datasets' webdataset loader reads each key exactly once: {len(hf_keys)} rows, {len(set(hf_keys))} distinct")


def check_metadata_copy(out):
    """metadata.jsonl is a regular file (not a link) holding the manifest's bytes."""
    metadata = os.path.join(out, "metadata.jsonl")
    regular = os.path.isfile(metadata) and not os.path.islink(metadata)
    check(regular, "metadata.jsonl is a regular file" + ("" if regular else f": link {os.path.islink(metadata)}, exists {os.path.exists(metadata)}"))
    same = open(metadata, "rb").read() == open(os.path.join(out, "manifest.jsonl"), "rb").read()
    check(same, "metadata.jsonl holds the manifest's bytes")


def read_folder(out):
    """The folder as imagefolder loads it, and its manifest's records by key."""
    hf = loads('datasets.load_dataset("imagefolder") loads the folder',
               lambda: datasets.load_dataset("imagefolder", data_dir=out, split="train"))
    check(hf.num_rows == EXPECTED, f"imagefolder reads {hf.num_rows} images, {EXPECTED} expected")
    records = {r["key"]: r for r in map(json.loads, open(os.path.join(out, "manifest.jsonl")))}
    check(len(records) == EXPECTED, f"the manifest has {len(records)} records, {EXPECTED} expected")
    check_metadata_copy(out)
    rows = loads("imagefolder decodes every image", lambda: {row["key"]: row for row in hf})
    check_each(sorted(rows.items()), lambda i: rgb(i[1]["image"]).size == (i[1]["width"], i[1]["height"]),
               "each image has its recorded size", lambda i: f"{i[0]}: {i[1]['image'].size} recorded {i[1]['width']}×{i[1]['height']}")
    check_row_fields(records, {key: row["caption"] for key, row in rows.items()})
    check_each(sorted(records.items()), lambda i: i[1]["file_name"].rsplit(".", 1)[-1] == EXTENSIONS[i[1]["format"]],
               "each file's extension is its format's", lambda i: f"{i[0]}: {i[1]['file_name']} {i[1]['format']}")
    return rows, records


def folder_as_served():
    out = os.path.join(work, "folder")
    mirror(["urls", table, "--out", out, "--keep-cols", "source", "--quiet"], 3, env)
    rows, records = read_folder(out)
    check_records(records, lambda s: s.format)
    check_each(sorted(records.items()), lambda i: sha256(open(os.path.join(out, i[1]["file_name"]), "rb").read()) == served_of(i[0]).sha256,
               "every file is the served bytes (sha256)", lambda i: f"{i[0]} ({served_of(i[0]).variant}): {i[1]['file_name']}")
    extensions = {record["file_name"].rsplit(".", 1)[-1] for record in records.values()}
    check(extensions == set(EXTENSIONS.values()), f"the extensions are mixed: {sorted(extensions)}")


def folder_resized():
    out = os.path.join(work, "folder-resized")
    mirror(["urls", table, "--out", out, "--resize", "center-crop", "--size", str(SIZE), "--keep-cols", "source", "--quiet"], 3, env)
    rows, records = read_folder(out)
    check_records(records, lambda s: "png" if s.format == "gif" else s.format, (SIZE, SIZE))
    check_each(sorted(rows.items()), lambda i: i[1]["image"].size == (SIZE, SIZE), f"imagefolder decodes every image at {SIZE}×{SIZE}",
               lambda i: f"{i[0]}: {i[1]['image'].size}")
    animated = sorted((key, row["image"]) for key, row in rows.items() if served_of(key).frame_colours)
    check_each(animated, lambda i: nearest_frame(i[1], served_of(i[0])) == 0, "each animated GIF is its first frame, as PNG",
               lambda i: f"{i[0]}: mean {[round(c) for c in ImageStat.Stat(rgb(i[1])).mean]}, frames {served_of(i[0]).frame_colours}")


def labelled_folders():
    emulator = subprocess.Popen([EMULATOR], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        search_env = dict(env, MIRROR_API_INTERVAL_MS="0")
        search_env.update(emulator_environment(emulator))
        queries = os.path.join(work, "queries.txt")
        with open(queries, "w") as handle:
            handle.write("kittens\npuppies\nred fox\n")
        labelled = os.path.join(work, "labelled")
        mirror(["--queries", queries, "--count", "8", "--out", labelled, "--provider", "openverse", "--quiet"], 0, search_env)
    finally:
        stop(emulator)
    hf = loads('datasets.load_dataset("imagefolder") loads the labelled folders',
               lambda: datasets.load_dataset("imagefolder", data_dir=labelled, split="train"))
    check(hf.num_rows == 24, f"imagefolder reads {hf.num_rows} labelled images")
    labels = list(hf["label"])
    names = sorted(set(labels))
    check(names == ["kittens", "puppies", "red fox"], f"the labels are the queries: {names}")
    check(all(labels.count(name) == 8 for name in names), f"each label has exactly its count: {[labels.count(n) for n in names]}")
    records = [json.loads(line) for line in open(os.path.join(labelled, "manifest.jsonl"))]
    folders = {"kittens": "kittens", "puppies": "puppies", "red fox": "red-fox"}
    check_each(records, lambda r: r["file_name"].split("/")[0] == folders[r["label"]], "each file sits in its label's folder",
               lambda r: f"{r['file_name']} ({r['label']})")


# A folder the Hub takes -----------------------------------------------------------------------------------------------

HUB_ROWS = 12_500  # more images than the Hub takes in one folder
HUB_TOP_UP = 600
HUB_FOLDER_LIMIT = 10_000  # files (and folders) in one folder, the most the Hugging Face Hub takes
HUB_VARIANTS = ["jpeg", "png", "png-alpha", "webp", "gif"]
HUB_MARK = b"row-0000000"  # stamped with each row's number, so that no two images are the same bytes


def hub_bases():
    """Per variant, four small images (8–40 px) carrying HUB_MARK once, in a comment or a metadata chunk."""
    from PIL.PngImagePlugin import PngInfo
    bases = {}
    for variant in HUB_VARIANTS:
        bases[variant] = []
        for number, size in enumerate([(12, 12), (24, 16), (16, 30), (40, 24)]):
            image = noisy(size, (90, 60, 120), f"hub {variant} {number}")
            buffer = io.BytesIO()
            if variant == "jpeg":
                image.save(buffer, "JPEG", quality=90, comment=HUB_MARK)
            elif variant.startswith("png"):
                info = PngInfo()
                info.add_text("row", HUB_MARK.decode())
                (with_transparent_quarter(image) if variant == "png-alpha" else image).save(buffer, "PNG", pnginfo=info)
            elif variant == "webp":
                exif = Image.Exif()
                exif[0x010E] = HUB_MARK.decode()  # ImageDescription
                image.save(buffer, "WEBP", quality=80, exif=exif.tobytes())
            else:
                image.convert("P", palette=Image.ADAPTIVE).save(buffer, "GIF", comment=HUB_MARK)
            data = buffer.getvalue()
            assert data.count(HUB_MARK) == 1, (variant, number)
            bases[variant].append((data, size))
    return bases


def hub_image(bases, index):
    """Row `index`'s image: (bytes, extension, size)."""
    variant = HUB_VARIANTS[index % len(HUB_VARIANTS)]
    data, size = bases[variant][(index // len(HUB_VARIANTS)) % 4]
    data = data.replace(HUB_MARK, f"row-{index:07d}".encode())
    if variant.startswith("png"):  # a tEXt chunk's CRC covers its data
        at = data.index(b"tEXtrow\x00")
        length = struct.unpack(">I", data[at - 4:at])[0]
        data = data[:at + 4 + length] + struct.pack(">I", zlib.crc32(data[at:at + 4 + length])) + data[at + 8 + length:]
    return data, EXTENSIONS[variant.split("-")[0]], size


def folder_entries(root):
    """Every folder under `root` (itself and `.mirror/` included) with how many entries it holds, files and folders."""
    counts = {}
    for directory, folders, files in os.walk(root):
        counts[os.path.relpath(directory, root)] = len(folders) + len(files)
    return counts


def check_hub_folder(out, rows, sized):
    """The rule and the files of a folder `rows` rows filled: no folder over the limit, the images in numbered folders
    of 1,000 in saving order, metadata.jsonl the manifest's copy with every image on one line, imagefolder loading
    them all. Returns the manifest's records."""
    entries = folder_entries(out)
    fullest = max(entries.items(), key=lambda item: item[1])
    check(fullest[1] <= HUB_FOLDER_LIMIT,
          f"no folder holds more than {HUB_FOLDER_LIMIT:,} files: the fullest, {fullest[0]!r}, holds {fullest[1]:,} ({len(entries)} folders)")
    records = [json.loads(line) for line in open(os.path.join(out, "manifest.jsonl"), "rb")]
    check(len(records) == rows, f"the manifest has {len(records):,} lines, {rows:,} expected")
    names = [record["file_name"] for record in records]
    folders = [name.split("/")[0] for name in names]
    shapes = {len(name.split("/")) for name in names}
    expected_folders = [f"{n:05d}" for n in range((rows + 999) // 1000)]
    sizes = {folder: folders.count(folder) for folder in dict.fromkeys(folders)}
    check(shapes == {2} and list(sizes) == expected_folders and folders == sorted(folders)
          and all(count == 1000 for count in list(sizes.values())[:-1]),
          f"every image is in a numbered folder of 1,000, filled in saving order (manifest order): {sizes}")
    on_disk = sorted(os.path.relpath(os.path.join(directory, name), out) for directory, _, files in os.walk(out)
                     if not os.path.relpath(directory, out).startswith(".mirror") for name in files
                     if name not in ("manifest.jsonl", "metadata.jsonl"))
    check_metadata_copy(out)
    check(sorted(names) == on_disk and len(set(names)) == len(names),
          f"every image on disk is on exactly one metadata.jsonl line: {len(on_disk):,} files, {len(names):,} lines, "
          f"{len(set(names)):,} distinct")
    started = time.monotonic()
    hf = loads('datasets.load_dataset("imagefolder") loads the folder',
               lambda: datasets.load_dataset("imagefolder", data_dir=out, split="train"))
    loaded = time.monotonic() - started
    check(hf.num_rows == rows, f"imagefolder loads {hf.num_rows:,} rows, {rows:,} expected ({loaded:.1f} s)")
    paths = [row["path"] for row in hf.cast_column("image", datasets.Image(decode=False))["image"]]
    from_out = sorted(os.path.relpath(path, out) for path in paths)
    check(from_out == sorted(names), "imagefolder's rows are the files metadata.jsonl names, each once")
    keys = list(hf["key"])
    check(len(set(keys)) == rows, f"each row's key once: {len(set(keys)):,} distinct of {rows:,}")
    sample = range(0, rows, 25)
    decoded = loads("imagefolder decodes every 25th image", lambda: [(hf[i]["key"], rgb(hf[i]["image"]).size) for i in sample])
    wrong = [(key, size) for key, size in decoded if size != sized(int(key))]
    check(not wrong, f"each of {len(decoded)} images decoded has its served size" + (f"; not: {wrong[:3]}" if wrong else ""))
    return records


def hub_folder():
    served = os.path.join(served_directory, "hub")
    os.makedirs(served)
    bases = hub_bases()
    total = HUB_ROWS + HUB_TOP_UP
    sizes = {}
    for index in range(total):
        data, extension, sizes[index] = hub_image(bases, index)
        with open(os.path.join(served, f"{index}.{extension}"), "wb") as handle:
            handle.write(data)
    extensions = {index: hub_image(bases, index)[1] for index in range(total)}

    def table(rows):
        path = os.path.join(work, f"hub-{rows}.csv.gz")
        with gzip.open(path, "wt", newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow(["url", "caption"])
            for index in range(rows):
                writer.writerow([f"http://127.0.0.1:{port}/hub/{index}.{extensions[index]}", f"picture {index}"])
        return path

    out = os.path.join(work, "hub-folder")
    arguments = lambda rows: ["urls", table(rows), "--out", out, "--quiet", "--json", "--no-cache"]
    start = requests_logged(IMAGE_LOG)[1]
    began = time.monotonic()
    first = mirror(arguments(HUB_ROWS), 0, env)
    took = time.monotonic() - began
    summary = json.loads(first.stdout.strip().splitlines()[-1])
    requested, start = requests_logged(IMAGE_LOG, start)
    images = [path for _, path, _ in requested if path.startswith("/hub/")]
    check(summary.get("saved") == HUB_ROWS and len(images) == HUB_ROWS,
          f"the run saved {summary.get('saved')} of {HUB_ROWS:,} rows with {len(images):,} image requests in {took:.1f} s")
    check_hub_folder(out, HUB_ROWS, sizes.get)

    # A rerun makes no request (robots.txt is remembered for a day in .mirror/sites.sqlite)
    again = mirror(arguments(HUB_ROWS), 0, env)
    requested, start = requests_logged(IMAGE_LOG, start)
    summary = json.loads(again.stdout.strip().splitlines()[-1])
    check(not requested and summary.get("saved") == 0,
          f"a rerun makes no request: {len(requested)} requests, saved {summary.get('saved')}, already there {summary.get('alreadySaved')}")

    # A top-up: the table grows by 600 rows
    before = {name: os.stat(os.path.join(out, name)).st_ino for name in (r["file_name"] for r in
              map(json.loads, open(os.path.join(out, "manifest.jsonl"), "rb")))}
    topped = mirror(arguments(total), 0, env)
    requested, start = requests_logged(IMAGE_LOG, start)
    summary = json.loads(topped.stdout.strip().splitlines()[-1])
    new_paths = sorted(path for _, path, _ in requested if path.startswith("/hub/"))
    expected_paths = sorted(f"/hub/{i}.{extensions[i]}" for i in range(HUB_ROWS, total))
    check(summary.get("saved") == HUB_TOP_UP and new_paths == expected_paths,
          f"a top-up of {HUB_TOP_UP} rows saves {summary.get('saved')} and requests those {len(new_paths)} images only")
    moved = [name for name, inode in before.items() if not os.path.exists(os.path.join(out, name))
             or os.stat(os.path.join(out, name)).st_ino != inode]
    check(not moved, f"the top-up moved no saved image ({len(before):,} where they were)" + (f"; moved: {moved[:3]}" if moved else ""))
    records = check_hub_folder(out, total, sizes.get)
    last = [r["file_name"].split("/")[0] for r in records[HUB_ROWS:]]
    check(set(last) == {"00012", "00013"}, f"the top-up filled 00012/ and went on in 00013/: {sorted(set(last))}")

    # What the README's `hf upload` line sends: the images and the two jsonl files, never .mirror/
    from huggingface_hub.utils import filter_repo_objects
    readme = open(os.path.join(os.path.dirname(__file__), "..", "..", "README.md"), encoding="utf-8").read()
    line = next(line for line in readme.splitlines() if line.startswith("hf upload "))
    words = shlex.split(line.split("#")[0])
    excluded = [words[i + 1] for i, word in enumerate(words) if word == "--exclude"]
    every = [os.path.relpath(os.path.join(directory, name), out) for directory, _, files in os.walk(out) for name in files]
    sent = list(filter_repo_objects(every, ignore_patterns=excluded))
    check(len(sent) == total + 2 and "metadata.jsonl" in sent and not any(".mirror" in name for name in sent),
          f"`{line.split('#')[0].strip()}` would send {len(sent):,} files: the {total:,} images, manifest.jsonl and "
          f"metadata.jsonl, none of .mirror/ ({len(every) - len(sent)} left out)")


def parquet_recipe():
    import pyarrow as pa
    import pyarrow.parquet as pq
    parquet = os.path.join(work, "urls.parquet")
    indices = sorted(SERVED)[:50]
    pq.write_table(pa.table({"url": [url_of(i) for i in indices], "caption": [caption_of(i) for i in indices]}), parquet)
    from_parquet = os.path.join(work, "from-parquet")
    run = subprocess.run([MIRROR, "urls", parquet, "--out", from_parquet, "--quiet"], capture_output=True, text=True, env=env)
    check(run.returncode == 0, "mirror urls FILE.parquet exits 0" + ("" if run.returncode == 0 else f": {run.returncode} {run.stderr[-300:]}"))
    hf = loads('datasets.load_dataset("imagefolder") loads the folder',
               lambda: datasets.load_dataset("imagefolder", data_dir=from_parquet, split="train"))
    expected = sorted(caption_of(i) for i in indices)
    check(hf.num_rows == 50 and sorted(hf["caption"]) == expected,
          f"every Parquet row's image and caption arrived: {hf.num_rows} rows")


port = free_port()
# http.server in a process of its own (mirrorscripts.serve_files): it logs every request, and answers 503 for the
# paths UNAVAILABLE lists while that file exists (the --retry-failed section)
UNAVAILABLE = os.path.join(work, "unavailable.txt")
IMAGE_LOG = os.path.join(work, "image-requests.log")
server = start_file_server(served_directory, port, unavailable=UNAVAILABLE, log=IMAGE_LOG)

table = os.path.join(work, "table.csv.gz")
with gzip.open(table, "wt", newline="") as handle:
    writer = csv.writer(handle)
    writer.writerow(["url", "caption", "source"])
    for index in range(ROWS):
        writer.writerow([url_of(index), caption_of(index), "check"])
env = dict(os.environ, XDG_CACHE_HOME=os.path.join(work, "cache"))
variants = {v: sum(1 for s in SERVED.values() if s.variant == v) for v in dict.fromkeys(VARIANTS)}
print(f"Serving {EXPECTED} images ({', '.join(f'{n} {v}' for v, n in variants.items())}), "
      f"{ROWS - EXPECTED} bad or missing rows; work in {work}")

try:
    section("WebDataset shards, no --encode: every image KEY.jpg at its served size", webdataset_as_served_size)
    section(f"WebDataset shards, --resize center-crop --size {SIZE}: every image KEY.jpg, {SIZE}×{SIZE}", webdataset_resized)
    section("WebDataset shards, --encode keep: the served bytes, mixed extensions (webdataset only)", webdataset_keep)
    section("WebDataset shards with rows that answered 503, then --retry-failed once the host recovered", webdataset_retry_failed)
    section("Folder (imagefolder, metadata.jsonl the manifest's copy): the served bytes", folder_as_served)
    section(f"Folder, --resize center-crop --size {SIZE}: formats kept, GIF as PNG", folder_resized)
    section("Labelled folders (--queries)", labelled_folders)
    section("Parquet written by pyarrow, read natively (mirror urls FILE.parquet)", parquet_recipe)
    section(f"A folder the Hub takes: {HUB_ROWS:,} rows, a rerun, a top-up of {HUB_TOP_UP}", hub_folder)
finally:
    stop(server)

sys.exit(checks.summary())
