"""The loopback bar (issue 34): CPU per image of `mirror urls` against curl's plus a SHA-256 of the same bytes.

Run by scripts/bench/bench-bar (which makes sure of the bench virtualenv, nginx and a release build):

    python scripts/bench/bench_bar.py MIRROR [MIRROR ...] [--images 2000] [--concurrency 16,64] [--latency 0] [--reps 15]
                                [--out-dir DIR] [--output FILE]

The first IMAGES JPEG photos of scripts/bench/bench's corpus (110 KB on average, 21 KB to 847 KB), served by nginx on
127.0.0.1 (with `--latency`, the echo module's non-blocking sleep before each response). For every repetition and
concurrency, curl `--parallel` and each mirror binary run once, in an order that alternates between repetitions; mirror
with its defaults (`mirror urls TABLE --out DIR --concurrency N --per-host N`; `--per-host` so that the one host is not
held to mirror's default of 6 connections), curl `--parallel-max N --remote-name-all`. Output in a fresh folder on
tmpfs (/dev/shm) unless `--out-dir` names another file system. CPU, peak RSS and the rest as scripts/bench/bench measures
them (`benchlib.measure`: CPU of the tool's whole tree from wait4, in microseconds). The hash's cost is `openssl dgst
-sha256` over the same files, one process, measured the same way. The bar is mirror's CPU per image at most 1.5 ×
(curl's + the hash's); the table prints the ratio.
"""
import argparse
import json
import os
import shutil
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))  # scripts/lib
import benchlib  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("mirror", nargs="+", help="mirror binaries (for example the build before and after a change)")
    parser.add_argument("--images", type=int, default=2000)
    parser.add_argument("--concurrency", default="16,64")
    parser.add_argument("--latency", type=int, default=0, help="milliseconds before each response")
    parser.add_argument("--reps", type=int, default=15)
    parser.add_argument("--out-dir", help="where the tools write (default a folder on /dev/shm)")
    parser.add_argument("--output", help="write the results as JSON here too")
    args = parser.parse_args()

    corpus, www, photos = benchlib.corpus_photos(args.images, "bench-bar")
    build = os.path.dirname(www)
    scratch = os.path.join(build, "bar")
    shutil.rmtree(scratch, ignore_errors=True)
    os.makedirs(scratch)
    out_root = args.out_dir or "/dev/shm"
    out = os.path.join(out_root, f"mirror-bench-bar-{os.getpid()}")
    env = dict(os.environ, XDG_CACHE_HOME=os.path.join(out_root, f"mirror-bench-bar-cache-{os.getpid()}"))

    nginx = benchlib.Nginx(www, scratch, latency_ms=args.latency)
    results = {}
    try:
        base = f"http://127.0.0.1:{nginx.port}/{os.path.basename(corpus)}"
        table = os.path.join(scratch, "photos.txt")
        with open(table, "w") as f:
            f.writelines(f"{base}/{name}\n" for name in photos)
        curlrc = os.path.join(scratch, "photos.curlrc")
        with open(curlrc, "w") as f:
            f.writelines(f'url = "{base}/{name}"\n' for name in photos)
        tools = [("curl", None)] + [(f"mirror {i + 1}", path) for i, path in enumerate(args.mirror)]
        for concurrency in (int(c) for c in args.concurrency.split(",")):
            for rep in range(args.reps):
                order = tools if rep % 2 == 0 else list(reversed(tools))
                for name, binary in order:
                    for folder in (out, env["XDG_CACHE_HOME"]):
                        shutil.rmtree(folder, ignore_errors=True)
                    os.makedirs(out)
                    if binary:
                        argv = [binary, "urls", table, "--out", out, "--concurrency", str(concurrency),
                                "--per-host", str(concurrency), "--quiet"]
                    else:
                        argv = ["curl", "--no-progress-meter", "--parallel", "--parallel-immediate", "--parallel-max",
                                str(concurrency), "--fail", "--silent", "--remote-name-all", "--output-dir", out,
                                "--config", curlrc]
                    measured = benchlib.measure(argv, env, os.path.join(scratch, "out"), os.path.join(scratch, "err"), 900)
                    cpu, wall, code = measured["user"] + measured["sys"], measured["wall"], measured["exit"]
                    rss = max(measured["rss_max_process"], measured["rss_tree_sampled"])
                    saved = sum(1 for entry in os.scandir(out) if entry.name.endswith(".jpg"))
                    if code != 0 or saved != len(photos):
                        sys.exit(f"bench-bar: {name} at {concurrency} at once exited {code} with {saved} of "
                                 f"{len(photos)} photos saved")
                    results.setdefault(f"{concurrency}", {}).setdefault(name, []).append(
                        {"cpu_ms": cpu * 1000 / len(photos), "images_per_s": len(photos) / wall, "rss_mb": rss / 1e6})
                    benchlib.log(f"bench-bar: c{concurrency} rep {rep + 1} {name}: {cpu * 1000 / len(photos):.4f} ms, "
                              f"{len(photos) / wall:.0f}/s, {rss / 1e6:.1f} MB")
    finally:
        nginx.stop()
        for folder in (out, env["XDG_CACHE_HOME"]):
            shutil.rmtree(folder, ignore_errors=True)

    files = [os.path.join(corpus, name) for name in photos]
    hashes = [benchlib.measure(["openssl", "dgst", "-sha256"] + files, env, os.path.join(scratch, "out"), os.path.join(scratch, "err"), 900)
              for _ in range(3)]
    sha = statistics.median((run["user"] + run["sys"]) * 1000 / len(photos) for run in hashes)

    def median(rows, key):
        return statistics.median(row[key] for row in rows)

    where = "tmpfs" if not args.out_dir else benchlib.fs_type(out_root)
    print(f"{len(photos)} photos from nginx on 127.0.0.1{f', {args.latency} ms before each response' if args.latency else ''}, "
          f"output on {where}, {args.reps} interleaved repetitions, medians; SHA-256 of the same bytes "
          f"(`openssl dgst`): {sha:.3f} ms per image.\n")
    print("| at once | tool | CPU ms per image | images/s | peak RSS | CPU / (curl + SHA-256) |")
    print("|---:|---|---:|---:|---:|---:|")
    for concurrency, rows in results.items():
        floor = median(rows["curl"], "cpu_ms") + sha
        for name, runs in rows.items():
            cpu = median(runs, "cpu_ms")
            ratio = "" if name == "curl" else f"{cpu / floor:.2f}×"
            print(f"| {concurrency} | {name} | {cpu:.3f} | {median(runs, 'images_per_s'):,.0f} | "
                  f"{median(runs, 'rss_mb'):.1f} MB | {ratio} |")
    if len(args.mirror) > 1:
        print("\n" + "; ".join(f"mirror {i + 1}: {path}" for i, path in enumerate(args.mirror)))
    if args.output:
        with open(args.output, "w") as f:
            json.dump({"sha_ms": sha, "results": results, "mirrors": args.mirror}, f, indent=1)


if __name__ == "__main__":
    main()
