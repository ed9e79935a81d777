"""Judges mirror's dataset outputs by their real readers: the `webdataset` package and Hugging Face `datasets`.

Run by scripts/check-datasets (which makes the virtualenv and builds mirror). Everything is local: the images are
served by Python's http.server on loopback, the search by mirror-emulator. Exits non-zero on the first failed check.
"""
import csv
import gzip
import io
import json
import os
import random
import socket
import subprocess
import sys
import tempfile
import time

import datasets
import webdataset as wds
from PIL import Image

MIRROR = sys.argv[1]
EMULATOR = sys.argv[2]
ROWS = 300
datasets.disable_progress_bars()
datasets.logging.set_verbosity_error()


def check(condition, message):
    if not condition:
        print(f"check-datasets: FAILED: {message}", file=sys.stderr)
        sys.exit(1)
    print(f"  ok: {message}")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def kind(index):
    """What row `index` is: an image, a missing one, or a bad row."""
    if index % 37 == 5:
        return "bad"
    if index % 41 == 9:
        return "missing"
    return "image"


work = tempfile.mkdtemp(prefix="mirror-check-datasets-")
served = os.path.join(work, "served")
os.makedirs(served)
for index in range(ROWS):
    if kind(index) == "image":
        # Noise seeded by the row, so that no two images are alike (mirror keeps one of identical bytes)
        size = (60 + index % 40, 50 + index % 30)
        image = Image.frombytes("RGB", size, random.Random(index).randbytes(size[0] * size[1] * 3))
        image.save(os.path.join(served, f"{index}.jpg"), quality=90)
port = free_port()
server = subprocess.Popen(
    [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1", "--directory", served],
    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
)
for _ in range(100):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
        break
    except OSError:
        time.sleep(0.05)

captions = {}
table = os.path.join(work, "table.csv.gz")
with gzip.open(table, "wt", newline="") as handle:
    writer = csv.writer(handle)
    writer.writerow(["url", "caption", "source"])
    for index in range(ROWS):
        url = "not a url" if kind(index) == "bad" else f"http://127.0.0.1:{port}/{index}.jpg"
        caption = f'photo {index}, "quoted", ünïcode'
        captions[url] = caption
        writer.writerow([url, caption, "check"])
expected = sum(1 for index in range(ROWS) if kind(index) == "image")
env = dict(os.environ, XDG_CACHE_HOME=os.path.join(work, "cache"))

try:
    print("WebDataset shards (64 rows each, center-cropped to 32 px, JPEG)")
    shards = os.path.join(work, "shards")
    run = subprocess.run(
        [MIRROR, "urls", table, "--out", shards, "--format", "webdataset", "--shard-size", "64",
         "--resize", "center-crop", "--size", "32", "--encode", "jpeg", "--keep-cols", "source", "--quiet", "--json"],
        capture_output=True, text=True, env=env,
    )
    check(run.returncode == 3, f"mirror urls exits 3 (some rows gave no image): {run.returncode} {run.stderr[-300:]}")
    tars = sorted(os.path.join(shards, name) for name in os.listdir(shards) if name.endswith(".tar"))
    check(len(tars) == (ROWS + 63) // 64, f"{len(tars)} shards of 64 rows for {ROWS} rows")
    samples = list(wds.WebDataset(tars, shardshuffle=False).decode("pil"))
    check(len(samples) == expected, f"webdataset reads {len(samples)} samples, {expected} expected")
    check(all(set(s) >= {"jpg", "json", "txt"} for s in samples), "every sample has jpg, json and txt")
    check(all(s["jpg"].size == (32, 32) for s in samples), "every image is 32×32")
    check(all(s["txt"] == captions[s["json"]["url"]] for s in samples), "every caption matches its row")
    check(all(s["json"]["source"] == "check" and s["__key__"] == s["json"]["key"] for s in samples), "records carry the key and kept columns")
    stats = [json.load(open(os.path.join(shards, n))) for n in sorted(os.listdir(shards)) if n.endswith("_stats.json")]
    check(sum(s["rows"] for s in stats) == ROWS, "the stats add up to the table's rows")
    hf = datasets.load_dataset("webdataset", data_files={"train": tars}, split="train")
    check(hf.num_rows == expected, f"datasets' webdataset loader reads {hf.num_rows} rows")
    check(all(image.size == (32, 32) for image in hf["jpg"]), "datasets decodes every image at 32×32")
    check(sorted(hf["txt"]) == sorted(s["txt"] for s in samples), "datasets reads the same captions")

    print("Folder (imagefolder, with metadata.jsonl → manifest.jsonl)")
    folder = os.path.join(work, "folder")
    run = subprocess.run([MIRROR, "urls", table, "--out", folder, "--keep-cols", "source", "--quiet"], capture_output=True, text=True, env=env)
    check(run.returncode == 3, f"mirror urls into a folder exits 3: {run.returncode} {run.stderr[-300:]}")
    hf = datasets.load_dataset("imagefolder", data_dir=folder, split="train")
    check(hf.num_rows == expected, f"imagefolder reads {hf.num_rows} images")
    check(all(caption == captions[url] for caption, url in zip(hf["caption"], hf["url"])), "imagefolder reads each caption as metadata")
    check(all(image.size == (w, h) for image, w, h in zip(hf["image"], hf["width"], hf["height"])), "each image has its recorded size")

    print("Labelled folders (--queries)")
    emulator = subprocess.Popen([EMULATOR], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        lines = []
        while sum("=" in line for line in lines) < 15:
            line = emulator.stdout.readline()
            if not line:
                break
            lines.append(line.strip())
        search_env = dict(env, MIRROR_API_INTERVAL_MS="0")
        for line in lines:
            if "=" in line:
                key, value = line.split("=", 1)
                search_env[key] = value
        queries = os.path.join(work, "queries.txt")
        with open(queries, "w") as handle:
            handle.write("kittens\npuppies\nred fox\n")
        labelled = os.path.join(work, "labelled")
        run = subprocess.run(
            [MIRROR, "--queries", queries, "--count", "8", "--out", labelled, "--provider", "openverse", "--quiet"],
            capture_output=True, text=True, env=search_env,
        )
        check(run.returncode == 0, f"mirror --queries exits 0: {run.returncode} {run.stderr[-300:]}")
    finally:
        emulator.terminate()
    hf = datasets.load_dataset("imagefolder", data_dir=labelled, split="train")
    check(hf.num_rows == 24, f"imagefolder reads {hf.num_rows} labelled images")
    names = sorted(set(hf["label"]))
    check(names == ["kittens", "puppies", "red fox"], f"the labels are the queries: {names}")
    check(all(hf["label"].count(name) == 8 for name in names), "each label has exactly its count")
    check(all(file.split("/")[0] == {"kittens": "kittens", "puppies": "puppies", "red fox": "red-fox"}[label]
              for file, label in zip([json.loads(l)["file_name"] for l in open(os.path.join(labelled, "manifest.jsonl"))],
                                     [json.loads(l)["label"] for l in open(os.path.join(labelled, "manifest.jsonl"))])),
          "each file sits in its label's folder")
    print("Parquet, through the README's one-line recipe")
    import pyarrow as pa
    import pyarrow.parquet as pq
    parquet = os.path.join(work, "urls.parquet")
    urls = [f"http://127.0.0.1:{port}/{index}.jpg" for index in range(ROWS) if kind(index) == "image"][:50]
    pq.write_table(pa.table({"url": urls, "caption": [captions[u] for u in urls]}), parquet)
    readme = open(os.path.join(os.path.dirname(__file__), "..", "README.md"), encoding="utf-8").read()
    recipe = next(line for line in readme.splitlines() if line.startswith("python3 -c 'import sys, pyarrow.parquet"))
    from_parquet = os.path.join(work, "from-parquet")
    command = (recipe.replace("urls.parquet", parquet).replace("| mirror urls", f"| {MIRROR} urls")
               .replace("./dataset", from_parquet) + " --quiet")
    path_env = dict(env, PATH=os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", ""))
    run = subprocess.run(["bash", "-o", "pipefail", "-c", command], capture_output=True, text=True, env=path_env)
    check(run.returncode == 0, f"the recipe exits 0: {run.returncode} {run.stderr[-300:]}")
    hf = datasets.load_dataset("imagefolder", data_dir=from_parquet, split="train")
    check(hf.num_rows == 50 and sorted(hf["caption"]) == sorted(captions[u] for u in urls), "every Parquet row's image and caption arrived")
    print("check-datasets: all checks passed")
finally:
    server.terminate()
