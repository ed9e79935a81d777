#!/usr/bin/env python3
"""What `mirror hash` costs per image, by served format, for two (or more) builds in the same run (issue 45).

    python scripts/bench/bench_hash.py MIRROR [MIRROR ...] [--images 300] [--reps 5] [--scratch DIR]

The first IMAGES JPEG photos of scripts/bench/bench's corpus (made by `scripts/bench/bench --quick` if missing; MIRROR_BENCH_DIR
names another bench folder), and the same pictures written by Pillow as PNG, WebP (quality 80) and GIF (Pillow's
palette), in SCRATCH (default /dev/shm). For every repetition and format, each binary runs `mirror hash` over all the
files and over the first file alone, in an order that rotates between repetitions; CPU is user + sys of the process
(scripts/lib/benchlib.py's `measure`, wait4 of GNU time), and a file's cost is (all − one) / (IMAGES − 1), so that the start of
the process is not counted. Prints a Markdown table of medians (and the range over repetitions); needs Pillow.
"""
import argparse
import os
import shutil
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))  # scripts/lib
import benchlib  # noqa: E402

FORMATS = [("jpg", None, {}), ("png", "PNG", {}), ("webp", "WEBP", {"quality": 80}), ("gif", "GIF", {})]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("mirror", nargs="+", help="mirror binaries (for example the build before and after a change)")
    parser.add_argument("--images", type=int, default=300)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--scratch", default="/dev/shm")
    args = parser.parse_args()
    from PIL import Image

    corpus, _, photos = benchlib.corpus_photos(args.images, "bench-hash")
    root = os.path.join(args.scratch, f"mirror-bench-hash-{os.getpid()}")
    files, sizes = {}, {}
    try:
        for extension, fmt, options in FORMATS:
            folder = os.path.join(root, extension)
            os.makedirs(folder)
            files[extension] = []
            for name in photos:
                path = os.path.join(folder, name[:-3] + extension)
                if fmt is None:
                    shutil.copy(os.path.join(corpus, name), path)
                else:
                    Image.open(os.path.join(corpus, name)).convert("RGB").save(path, fmt, **options)
                files[extension].append(path)
            sizes[extension] = statistics.median(os.path.getsize(p) for p in files[extension])
        pixels = [Image.open(p).size for p in files["jpg"]]
        benchlib.log(f"bench-hash: {args.images} photos, median {statistics.median(w for w, _ in pixels):.0f} x "
                  f"{statistics.median(h for _, h in pixels):.0f}, mean {statistics.mean(w for w, _ in pixels):.0f} x "
                  f"{statistics.mean(h for _, h in pixels):.0f}, median {sizes['jpg'] / 1000:.0f} KB")
        per_image = {(m, e): [] for m in range(len(args.mirror)) for e in files}
        for rep in range(args.reps):
            for extension in files:
                order = list(range(len(args.mirror)))
                order = order[rep % len(order):] + order[:rep % len(order)]
                for index in order:
                    cpu = []
                    for subset in (files[extension], files[extension][:1]):
                        stdout = os.path.join(root, "out")
                        run = benchlib.measure([args.mirror[index], "hash"] + subset, None, stdout, stdout + ".err", 600)
                        if run["exit"] != 0:
                            raise SystemExit(f"bench-hash: {args.mirror[index]} hash exited {run['exit']} on {extension}")
                        cpu.append(run["user"] + run["sys"])
                    per_image[(index, extension)].append((cpu[0] - cpu[1]) * 1000 / (len(files[extension]) - 1))
                    benchlib.log(f"bench-hash: rep {rep + 1} {extension} mirror {index + 1}: "
                              f"{per_image[(index, extension)][-1]:.3f} ms")
        print("| format (median size) | " + " | ".join(f"mirror {i + 1}" for i in range(len(args.mirror))) + " |")
        print("| --- |" + " ---: |" * len(args.mirror))
        for extension in files:
            cells = []
            for index in range(len(args.mirror)):
                values = per_image[(index, extension)]
                cells.append(f"{statistics.median(values):.2f} ms ({min(values):.2f}–{max(values):.2f})")
            print(f"| {extension.upper()} ({sizes[extension] / 1000:.0f} KB) | " + " | ".join(cells) + " |")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
