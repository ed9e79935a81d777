"""Many hosts: `mirror urls` over a table of ROWS distinct small images spread over HOSTS host names, against the same
table over one host name: peak RSS and rows/s, interleaved, REPS times each (issue 26: per-host state stays bounded).

Run by scripts/bench/bench-hosts (which makes sure of the bench virtualenv, nginx and a release build):

    python scripts/bench/bench_hosts.py MIRROR [--rows 100000] [--hosts 20000] [--reps 3] [--output FILE]

Every host name (`h123.test`) is sent to one nginx on loopback by `--connect-to ::127.0.0.1:PORT`, so that each is a
host of its own to mirror — its own limits, robots.txt fetch (a 404 from nginx), slow-down state and libcurl DNS cache
entry — while the server stays one fast process. Both runs: 64 downloads at once and 64 per host (so that the one-host
run is not held to 6 connections), WebDataset shards of 10,000 rows with the bytes kept (`--encode keep`), no cache,
output on tmpfs when /dev/shm has room (else the scratch folder). Peak RSS is GNU time's maximum resident set of the
mirror process; rows/s is rows over wall time.
"""
import argparse
import json
import os
import shutil
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))  # scripts/lib
import benchlib  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("mirror")
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--hosts", type=int, default=20_000)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--output", help="write the results as JSON here")
    args = parser.parse_args()

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    build = os.environ.get("MIRROR_BENCH_DIR", os.path.join(root, ".build-bench"))
    www = os.path.join(build, "www")
    small_dir = os.path.join(www, f"small-v{benchlib.CORPUS_VERSION}")
    corpus = benchlib.generate_small_corpus(small_dir, args.rows)
    names = [name for name, _, _ in corpus["files"][:args.rows]]
    scratch = os.path.join(build, "hosts")
    shutil.rmtree(scratch, ignore_errors=True)
    os.makedirs(scratch)
    shm = "/dev/shm" if shutil.disk_usage("/dev/shm").free > 4 * 3200 * args.rows else scratch
    nginx = benchlib.Nginx(www, scratch)
    try:
        port = nginx.port
        folder = os.path.basename(small_dir)
        tables = {}
        for label, hosts in (("many", args.hosts), ("one", 1)):
            path = os.path.join(scratch, f"{label}.txt")
            with open(path, "w") as f:
                for index, name in enumerate(names):
                    host = f"h{index % hosts}.test" if hosts > 1 else "one.test"
                    f.write(f"http://{host}:{port}/{folder}/{name}\n")
            tables[label] = path
        results = {"one": [], "many": []}
        for rep in range(args.reps):
            for label in (("one", "many") if rep % 2 == 0 else ("many", "one")):
                out = os.path.join(shm, f"mirror-hosts-{os.getpid()}-{label}")
                shutil.rmtree(out, ignore_errors=True)
                argv = [args.mirror, "urls", tables[label], "--out", out, "--format", "webdataset", "--shard-size", "10000",
                        "--encode", "keep", "--no-cache", "--concurrency", "64", "--per-host", "64",
                        "--connect-to", f"::127.0.0.1:{port}", "--quiet", "--json"]
                log_base = os.path.join(scratch, f"{label}-{rep}")
                measured = benchlib.measure(argv, dict(os.environ), log_base + ".out", log_base + ".err", 3600)
                with open(log_base + ".out") as f:
                    text = f.read().strip()
                summary = json.loads(text.splitlines()[-1]) if text else {}
                shutil.rmtree(out, ignore_errors=True)
                record = {
                    "rep": rep, "label": label, "exit": measured["exit"], "wall": measured["wall"],
                    "rss_mb": measured["rss_max_process"] / 1e6, "cpu": measured["user"] + measured["sys"],
                    "saved": summary.get("saved"), "rows_per_s": args.rows / measured["wall"] if measured["wall"] else 0,
                }
                results[label].append(record)
                benchlib.log(f"bench-hosts: {label} rep {rep}: exit {record['exit']}, {record['saved']} saved, "
                          f"{record['wall']:.1f} s ({record['rows_per_s']:.0f} rows/s), peak RSS {record['rss_mb']:.1f} MB, "
                          f"CPU {record['cpu']:.1f} s")
    finally:
        nginx.stop()

    def med(label, key):
        return statistics.median(r[key] for r in results[label])

    report = {
        "rows": args.rows, "hosts": args.hosts, "reps": args.reps, "output": shm,
        "one": {key: med("one", key) for key in ("wall", "rss_mb", "cpu", "rows_per_s")},
        "many": {key: med("many", key) for key in ("wall", "rss_mb", "cpu", "rows_per_s")},
        "runs": results["one"] + results["many"],
    }
    report["rss_ratio"] = report["many"]["rss_mb"] / report["one"]["rss_mb"]
    print(json.dumps(report, indent=2))
    if args.output:
        with open(args.output, "w") as f:
            json.dump(report, f, indent=2)
    failed = [r for r in report["runs"] if r["exit"] != 0 or r["saved"] != args.rows]
    if failed:
        sys.exit(f"bench-hosts: {len(failed)} run(s) did not save every row: {failed}")


if __name__ == "__main__":
    main()
