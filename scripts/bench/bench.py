"""The benchmark of issue 6: `mirror urls` against curl --parallel, aria2c, wget and img2dataset.

Run it through scripts/bench/bench (which installs the tools and the virtualenv). It builds mirror in release
mode, generates (or reuses) a corpus of distinct images under the build folder, serves it from nginx on
loopback (with the echo module's `echo_sleep` before each response for injected latency), runs every tool on the same URL list
at each concurrency with its output on tmpfs (/dev/shm: the tools' own work) and on the machine's disk (the build
folder: what users get), interleaved, repetitions rotating the tool and file system order, checks every tool's output
by content, runs a scaling series of `mirror urls` and, when `mirror` has a search command and mirror-emulator exists,
a search run against the emulated APIs (both on disk); then writes BENCHMARKS.md, a PNG chart and results.json.
The corpus, nginx and the measuring are scripts/lib/benchlib.py's, which the other benchmarks share.
"""
import argparse
import datetime
import json
import math
import os
import platform
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))  # scripts/lib
# The corpus, nginx and the measuring, which the other benchmarks share; then the scripts' shared helpers.
from benchlib import (CORPUS_VERSION, Nginx, count_valid, fs_type, generate_corpus, generate_small_corpus,  # noqa: E402
                      log, measure, mount_of)
from mirrorscripts import emulator_environment, median, stop  # noqa: E402

TOOLS = ["mirror", "mirror-nofsync", "curl", "aria2c", "wget", "img2dataset"]
FILESYSTEMS = ["tmpfs", "disk"]  # the report's order: tmpfs first
FS_ROLE = {"tmpfs": "the tools' own work", "disk": "what users get"}
SHM = "/dev/shm"


# ---------------------------------------------------------------- output file systems

def make_tmpfs_base(needed):
    """A fresh folder /dev/shm/mirror-bench-PID, or (None, why not) when /dev/shm is no tmpfs or too small."""
    if not os.path.isdir(SHM):
        return None, f"{SHM} does not exist"
    kind = fs_type(SHM)
    if kind != "tmpfs":
        return None, f"{SHM} is {kind}, not a tmpfs"
    stats = os.statvfs(SHM)
    free = stats.f_bavail * stats.f_frsize
    if free < needed:
        return None, f"{SHM} has {free / 1e6:,.0f} MB free and one run writes up to about {needed / 1e6:,.0f} MB"
    remove_stale_tmpfs_bases()
    base = os.path.join(SHM, f"mirror-bench-{os.getpid()}")
    shutil.rmtree(base, ignore_errors=True)
    os.makedirs(os.path.join(base, "out"))
    return base, None


def output_roots(filesystems, scratch, needed):
    """Where each file system's runs put their tools' output folders.

    Returns ({fs: folder}, {fs: description for the report}, the tmpfs folder to remove at the end or None).
    Only the output moves: URL lists, logs and the XDG cache stay in the build folder whatever the file system.
    """
    roots, where, base = {}, {}, None
    for fs in [f for f in FILESYSTEMS if f in filesystems]:
        if fs == "disk":
            roots[fs] = os.path.join(scratch, "out")
            os.makedirs(roots[fs], exist_ok=True)
            entry = mount_of(scratch)
            where[fs] = {"type": fs_type(scratch), "device": entry[0] if entry else "?",
                         "mount": entry[1] if entry else "?", "path": os.path.join(roots[fs], "<tool>")}
            continue
        base, reason = make_tmpfs_base(needed)
        if base is None:
            log(f"bench: NOT measuring on tmpfs: {reason}; the runs write to disk only")
            where[fs] = {"type": "tmpfs", "skipped": reason}
            continue
        roots[fs] = os.path.join(base, "out")
        where[fs] = {"type": "tmpfs", "device": "tmpfs", "mount": SHM,
                     "path": os.path.join(SHM, "mirror-bench-<pid>", "out", "<tool>")}
        log(f"bench: tmpfs output under {roots[fs]}")
    return roots, where, base


def remove_stale_tmpfs_bases():
    """Removes /dev/shm/mirror-bench-PID folders whose benchmark process is gone (it was killed with SIGKILL)."""
    for entry in os.scandir(SHM):
        pid = entry.name[len("mirror-bench-"):]
        if entry.name.startswith("mirror-bench-") and pid.isdigit() and not os.path.exists(f"/proc/{pid}"):
            shutil.rmtree(entry.path, ignore_errors=True)
            log(f"bench: removed {entry.path}, left by an earlier run")


def remove_tmpfs_base(base):
    """Removes the benchmark's folder under /dev/shm (tmpfs holds it in memory until then)."""
    if base and os.path.exists(base):
        shutil.rmtree(base, ignore_errors=True)
        log(f"bench: removed {base}")


# ---------------------------------------------------------------- tools

class Tools:
    def __init__(self, args, mirror, venv_bin, scratch):
        self.args = args
        self.mirror = mirror
        self.venv_bin = venv_bin
        self.scratch = scratch
        self.env = dict(os.environ)
        self.env["XDG_CACHE_HOME"] = os.path.join(scratch, "xdg-cache")  # belt and braces next to --no-cache
        self.env["NO_ALBUMENTATIONS_UPDATE"] = "1"  # img2dataset imports albumentations, which phones home
        self.env.pop("http_proxy", None)
        self.env.pop("HTTP_PROXY", None)
        self.env["no_proxy"] = "127.0.0.1,localhost"

    def command(self, tool, list_path, urls, concurrency, out):
        if tool in ("mirror", "mirror-nofsync"):
            # mirror-nofsync: the same job without fsync, to show what durability against power loss costs.
            extra = ["--no-fsync"] if tool == "mirror-nofsync" else []
            return [self.mirror, "urls", list_path, "--out", out, "--concurrency", str(concurrency),
                    "--per-host", str(min(concurrency, 64)), "--no-cache", "--json", "--quiet"] + extra
        if tool == "curl":
            config = list_path + ".curlrc"
            if not os.path.exists(config):
                with open(config, "w") as f:
                    for url in urls:
                        f.write(f'url = "{url}"\n')
            return ["curl", "--parallel", "--parallel-immediate", "--parallel-max", str(concurrency),
                    "--fail", "--silent", "--show-error", "--remote-name-all", "--output-dir", out,
                    "--config", config]
        if tool == "aria2c":
            return ["aria2c", "--input-file", list_path, "--dir", out, "--max-concurrent-downloads", str(concurrency),
                    "--max-connection-per-server", "1", "--split", "1", "--quiet=true",
                    "--console-log-level=error", "--summary-interval=0", "--file-allocation=none",
                    "--allow-overwrite=true", "--auto-file-renaming=false",
                    "--auto-save-interval=0",  # without it aria2 keeps .aria2 control files up to date: 3x slower here
                    "--no-conf=true"]
        if tool == "wget":
            return ["wget", "--no-config", "--quiet", "--no-directories", "--directory-prefix", out,
                    "--input-file", list_path]
        if tool == "img2dataset":
            return [os.path.join(self.venv_bin, "img2dataset"), "--url_list", list_path, "--input_format", "txt",
                    "--output_folder", out, "--output_format", "files", "--resize_mode", "no",
                    "--disable_all_reencoding", "True", "--processes_count", "1",
                    "--thread_count", str(concurrency), "--timeout", "30", "--retries", "0",
                    "--extract_exif", "False", "--disallowed_header_directives", "[]",
                    "--enable_wandb", "False"]
        raise ValueError(tool)


def write_list(path, base_url, names):
    urls = [f"{base_url}/{name}" for name in names]
    with open(path, "w") as f:
        f.write("\n".join(urls) + "\n")
    return urls


class DiskTrash:
    """Where the runs' output on disk goes once measured, removed only after the last run.

    ext4 without a journal (this project's machines) skips inodes freed in the last 60 s (360 s while their inode
    table block is dirty) when it allocates new ones (`recently_deleted` in fs/ext4/ialloc.c). Deleting one run's
    5,000 files just before the next made every file that run created scan past them: 0.3-0.4 ms of CPU per image
    for curl and mirror alike (`perf record`: `find_get_block_common` under `recently_deleted`), varying from run
    to run, where a user's new files cost none of it. Moved aside instead, nothing is freed until every run is over.
    When the disk cannot hold every run's output, each is removed at once, and the report says so.
    """

    def __init__(self, path, needed):
        self.path = path
        if os.path.exists(path):
            # A bench that was stopped left its trash: free it, then wait out the window before measuring.
            log(f"bench: removing {path} from an earlier bench and waiting 65 s for ext4 to stop skipping its inodes")
            shutil.rmtree(path, ignore_errors=True)
            os.sync()
            time.sleep(65)
        os.makedirs(path)
        free = shutil.disk_usage(path).free
        self.keeps = free > needed + 4_000_000_000
        if not self.keeps:
            log(f"bench: only {free / 1e9:.1f} GB free for {needed / 1e9:.1f} GB of output: disk runs are deleted "
                "between runs (their file creation then pays for the deletions)")
        self.count = 0

    def discard(self, out):
        if not self.keeps or not os.path.exists(out):
            shutil.rmtree(out, ignore_errors=True)
            return
        self.count += 1
        os.rename(out, os.path.join(self.path, str(self.count)))

    def remove(self):
        shutil.rmtree(self.path, ignore_errors=True)


def run_one(tools, tool, corpus_files, base_url, concurrency, latency, rep, scratch, logs, timeout, label,
            fs="disk", out_root=None, trash=None):
    """One tool over one URL list, its output in `out_root`/`tool` (on file system `fs`); returns the record (with
    the output checked by content). The URL list and the logs stay under `scratch` and `logs` whatever `fs` is."""
    names = [name for name, _, _ in corpus_files]
    key = f"{label}-{len(names)}-{base_url.rsplit(':', 1)[1].split('/')[0]}"
    list_path = os.path.join(scratch, f"list-{key}.txt")
    urls = write_list(list_path, base_url, names)
    out = os.path.join(out_root or os.path.join(scratch, "out"), tool)
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(os.path.dirname(out), exist_ok=True)
    if tool != "img2dataset":  # img2dataset wants to create its folder itself
        os.makedirs(out)
    argv = tools.command(tool, list_path, urls, concurrency, out)
    stem = os.path.join(logs, f"{tool}-{fs}-c{concurrency}-l{latency}-r{rep}")
    os.sync()  # no run pays for the write-back of the one before it (outside the measured time)
    result = measure(argv, tools.env, stem + ".out", stem + ".err", timeout)
    expected = {name: (size, digest) for name, size, digest in corpus_files}
    valid = count_valid(out, expected)
    total_bytes = sum(size for _, size, _ in corpus_files)
    n = len(corpus_files)
    record = {
        "tool": tool, "fs": fs, "concurrency": concurrency, "latency_ms": latency, "rep": rep, "images": n,
        "bytes": total_bytes, "valid": valid, **result,
    }
    record["ok"] = valid == n and result["exit"] in (0,)
    if tool == "img2dataset" and result["exit"] == 0 and valid == n:
        record["ok"] = True
    record["images_per_s"] = n / result["wall"]
    record["mb_per_s"] = total_bytes / 1e6 / result["wall"]
    record["cpu_per_1k"] = (result["user"] + result["sys"]) / n * 1000
    record["rss"] = max(result["rss_max_process"], result["rss_tree_sampled"])
    record["cs_per_image"] = result["cs"] / n
    record["command"] = " ".join(shlex.quote(a) for a in argv)
    if tool == "mirror":
        try:
            with open(stem + ".out") as f:
                record["summary"] = json.loads(f.read().strip().splitlines()[-1])
        except (OSError, ValueError, IndexError):
            pass
    if fs == "disk" and trash:
        trash.discard(out)
    else:
        shutil.rmtree(out, ignore_errors=True)
    status = "ok  " if record["ok"] else f"FAIL (exit {result['exit']}, see {stem}.err)"
    log(f"  {tool:<14} {fs:<5} c{concurrency:<3} {latency:>3} ms rep {rep + 1}: {valid:>6}/{n:<6} {result['wall']:7.2f} s "
        f"{record['images_per_s']:8.0f} img/s {record['mb_per_s']:7.1f} MB/s  cpu {record['cpu_per_1k']:6.2f} s/1k  "
        f"cs {record['cs_per_image']:6.1f}/img  rss {record['rss'] / 1e6:6.1f} MB  {status}")
    return record


# ---------------------------------------------------------------- search benchmark

def search_benchmark(args, mirror, emulator, scratch, logs):
    help_text = subprocess.run([mirror, "--help"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True).stdout
    subcommands = help_text.split("SUBCOMMANDS:", 1)[1] if "SUBCOMMANDS:" in help_text else ""
    if "search" not in subcommands:
        return {"skipped": "`mirror --help` lists no search command yet"}
    if not emulator:
        return {"skipped": "no mirror-emulator executable (product not in Package.swift or it did not build)"}
    # Anonymous Openverse reaches 400 results and the default Wikimedia corpus is 500: give Wikimedia enough
    # for the count, so the run is about speed and request economy, not exhaustion.
    emulator_argv = [emulator, "--api-latency-ms", str(args.api_latency), "--corpus",
                     f"wikimedia={args.search_count + 500}"]
    process = subprocess.Popen(emulator_argv, stdin=subprocess.DEVNULL,
                               stdout=subprocess.PIPE, stderr=open(os.path.join(logs, "emulator.err"), "w"), text=True)
    env = dict(os.environ)
    env["XDG_CACHE_HOME"] = os.path.join(scratch, "xdg-cache")
    env["no_proxy"] = "127.0.0.1,localhost"
    try:
        variables = emulator_environment(process)
        if not any(k.endswith("_ENDPOINT") for k in variables):
            return {"skipped": "mirror-emulator printed no MIRROR_*_ENDPOINT variables"}
        env.update(variables)
        out = os.path.join(scratch, "out", "search")
        shutil.rmtree(out, ignore_errors=True)
        first = [None]

        def watch(elapsed):
            if first[0] is None:
                try:
                    if os.path.getsize(os.path.join(out, "manifest.jsonl")) > 0:
                        first[0] = elapsed
                except OSError:
                    pass

        argv = [mirror, args.query, "--count", str(args.search_count), "--out", out, "--concurrency", "64",
                "--per-host", "64", "--no-cache", "--json", "--quiet"]
        stem = os.path.join(logs, "search")
        result = measure(argv, env, stem + ".out", stem + ".err", 600, watch=watch)
        summary = {}
        try:
            with open(stem + ".out") as f:
                summary = json.loads(f.read().strip().splitlines()[-1])
        except (OSError, ValueError, IndexError):
            pass
        saved = summary.get("saved", summary.get("total"))
        record = {"command": " ".join(shlex.quote(a) for a in ["mirror"] + argv[1:]).replace(scratch, "SCRATCH"),
                  "emulator": " ".join(shlex.quote(os.path.basename(a) if i == 0 else a) for i, a in enumerate(emulator_argv)),
                  "count": args.search_count,
                  "api_latency_ms": args.api_latency, "first_image_s": first[0], "summary": summary,
                  "saved": saved, **result}
        shutil.rmtree(out, ignore_errors=True)
        log(f"  search: exit {result['exit']}, {saved} saved in {result['wall']:.2f} s, first image after "
            f"{first[0] if first[0] is None else round(first[0], 3)} s, API requests {summary.get('apiRequests')}, "
            f"pages {summary.get('pages')}")
        return record
    finally:
        stop(process)


# ---------------------------------------------------------------- report

def aggregate(records):
    """The cells of the results tables, keyed by (fs, latency, concurrency, tool): medians over the good runs."""
    cells = {}
    for r in records:
        cells.setdefault((r.get("fs", "disk"), r["latency_ms"], r["concurrency"], r["tool"]), []).append(r)
    table = {}
    for key, rs in cells.items():
        good = [r for r in rs if r["ok"]]
        table[key] = {
            "runs": len(rs), "ok": len(good), "images": rs[0]["images"],
            "images_per_s": median([r["images_per_s"] for r in good]),
            "images_per_s_min": min((r["images_per_s"] for r in good), default=float("nan")),
            "images_per_s_max": max((r["images_per_s"] for r in good), default=float("nan")),
            "mb_per_s": median([r["mb_per_s"] for r in good]),
            "cpu_per_1k": median([r["cpu_per_1k"] for r in good]),
            "cs_per_image": median([r["cs_per_image"] for r in good if "cs_per_image" in r]),
            "rss": max((r["rss"] for r in good), default=float("nan")),
            "failed": [f"{r['valid']}/{r['images']} exit {r['exit']}" for r in rs if not r["ok"]],
        }
    return table


def fmt(value, digits=0):
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    return f"{value:,.{digits}f}"


def machine_info():
    model = "unknown"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    memory = "unknown"
    try:
        with open("/proc/meminfo") as f:
            kb = int(f.readline().split()[1])
            memory = f"{kb / 1024 / 1024:.1f} GiB"
    except (OSError, ValueError):
        pass
    versions = {}
    for name, argv in [("curl", ["curl", "--version"]), ("aria2c", ["aria2c", "--version"]),
                       ("wget", ["wget", "--version"]), ("nginx", ["nginx", "-v"]),
                       ("swift", ["swift", "--version"])]:
        try:
            text = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True).stdout
            versions[name] = text.strip().splitlines()[0]
        except (OSError, IndexError):
            versions[name] = "?"
    return {"nproc": os.cpu_count(), "model": model, "memory": memory, "kernel": platform.release(),
            "os": distro(), "versions": versions}


def distro():
    try:
        with open("/etc/os-release") as f:
            for line in f:
                if line.startswith("PRETTY_NAME="):
                    return line.split("=", 1)[1].strip().strip('"')
    except OSError:
        pass
    return platform.system()


def write_chart(path, table, tools, latencies, concurrencies, scaling, fs):
    """Throughput and CPU per image of every tool with its output on `fs` (one file system: tmpfs when measured),
    and the scaling run (on disk)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    colours = {"mirror": "#d62728", "mirror-nofsync": "#ff9896", "curl": "#1f77b4", "aria2c": "#2ca02c", "wget": "#7f7f7f",
               "img2dataset": "#9467bd"}
    panels = 3 if scaling else 2
    figure, axes = plt.subplots(1, panels, figsize=(6 * panels, 4.6))
    cells = [(l, c) for l in latencies for c in concurrencies]
    width = 0.8 / len(tools)
    ax = axes[0]
    plotted = []
    for i, tool in enumerate(tools):
        values = []
        for latency, concurrency in cells:
            key = (fs, latency, 1 if tool == "wget" else concurrency, tool)
            values.append(table.get(key, {}).get("images_per_s", float("nan")))
        plotted += values
        ax.bar([x + (i - (len(tools) - 1) / 2) * width for x in range(len(cells))], values, width,
               label=tool, color=colours.get(tool))
    ax.set_xticks(range(len(cells)))
    ax.set_xticklabels([f"{l} ms\n{c} at once" for l, c in cells], fontsize=8)
    if any(v > 0 for v in plotted):  # a log axis over no data (every run failed) raises
        ax.set_yscale("log")
    ax.set_ylabel("images/s (median; log scale)")
    ax.set_title(f"Throughput, output on {fs} (wget is serial)")
    ax.legend(fontsize=8)
    ax = axes[1]
    zero = [c for c in concurrencies]
    plotted = []
    for i, tool in enumerate(tools):
        values = [table.get((fs, 0, 1 if tool == "wget" else c, tool), {}).get("cpu_per_1k", float("nan"))
                  for c in zero]
        plotted += values
        ax.bar([x + (i - (len(tools) - 1) / 2) * width for x in range(len(zero))], values, width,
               label=tool, color=colours.get(tool))
    ax.set_xticks(range(len(zero)))
    ax.set_xticklabels([f"0 ms, {c} at once" for c in zero], fontsize=8)
    if any(v > 0 for v in plotted):  # a log axis over no data (no 0 ms run) raises
        ax.set_yscale("log")
    ax.set_ylabel("CPU s (user+sys) per 1,000 images (log)")
    ax.set_title(f"Client CPU cost at zero latency, output on {fs}")
    if scaling:
        ax = axes[2]
        xs = [s["images"] for s in scaling if s["ok"]]
        ax.plot(xs, [s["wall"] for s in scaling if s["ok"]], "o-", color=colours["mirror"], label="wall s")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("images (tiny PNGs, 64 at once, 0 ms)")
        ax.set_ylabel("wall seconds (log)")
        twin = ax.twinx()
        twin.plot(xs, [s["rss"] / 1e6 for s in scaling if s["ok"]], "s--", color="#444444", label="peak RSS MB")
        twin.set_ylabel("peak RSS MB")
        twin.set_ylim(bottom=0)
        ax.set_title("mirror urls scaling (output on disk)")
        lines = ax.get_legend_handles_labels()
        more = twin.get_legend_handles_labels()
        ax.legend(lines[0] + more[0], lines[1] + more[1], fontsize=8, loc="upper left")
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def measured_filesystems(where):
    """The file systems the runs wrote to, tmpfs first."""
    return [fs for fs in FILESYSTEMS if fs in where and not where[fs].get("skipped")]


def fs_heading(fs, where, root):
    """'Output on tmpfs (`/dev/shm/…`): the tools' own work' or 'Output on disk (ext4 on /dev/vda, `…`): what users get'."""
    w = where[fs]
    path = w["path"] if fs == "tmpfs" else os.path.relpath(w["path"], root)
    kind = "in memory" if fs == "tmpfs" else f"{w['type']} on {w['device']}"
    return f"Output on {fs} ({kind}, `{path}`): {FS_ROLE[fs]}"


def results_table(add, table, fs, tools, latencies, concurrencies):
    """The main results table of the runs with their output on `fs`."""
    add("| latency | at once | tool | images | images/s | MB/s | CPU ms / image | ctx switches / image | peak RSS MB | runs ok |")
    add("|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|")
    for latency in latencies:
        for concurrency in concurrencies:
            for tool in tools:
                c = 1 if tool == "wget" else concurrency
                if tool == "wget" and concurrency != concurrencies[0]:
                    continue
                cell = table.get((fs, latency, c, tool))
                if not cell:
                    continue
                name = f"**{tool}**" if tool == "mirror" else tool
                spread = (f" ({fmt(cell['images_per_s_min'])}–{fmt(cell['images_per_s_max'])})"
                          if cell["ok"] > 1 else "")
                failed = f" ✗ {'; '.join(cell['failed'])}" if cell["failed"] else ""
                add(f"| {latency} ms | {c} | {name} | {cell['images']:,} | {fmt(cell['images_per_s'])}{spread} | "
                    f"{fmt(cell['mb_per_s'], 1)} | {fmt(cell['cpu_per_1k'], 2)} | {fmt(cell['cs_per_image'], 1)} | "
                    f"{fmt(cell['rss'] / 1e6, 1)} | {cell['ok']}/{cell['runs']}{failed} |")


def peer_table(add, table, fs, tools, latencies, concurrencies):
    """mirror's throughput and CPU ratios to every other tool, the output of both on `fs`."""
    peers = [t for t in tools if t != "mirror"]
    add("| latency | at once | " + " | ".join(f"vs {p}: speed / CPU" for p in peers) + " |")
    add("|---:|---:|" + "---:|" * len(peers))
    for latency in latencies:
        for concurrency in concurrencies:
            m = table.get((fs, latency, concurrency, "mirror"))
            if not m:
                continue
            row = [f"{latency} ms", str(concurrency)]
            for peer in peers:
                p = table.get((fs, latency, 1 if peer == "wget" else concurrency, peer))
                if peer == "wget" and concurrency != concurrencies[0]:
                    row.append("")
                    continue
                if not p or not m["ok"] or not p["ok"]:
                    row.append("—")
                    continue
                row.append(f"{m['images_per_s'] / p['images_per_s']:.2f}× / {m['cpu_per_1k'] / p['cpu_per_1k']:.2f}×")
            add("| " + " | ".join(row) + " |")


def paired_rows(add, records, fs, reps, latencies, concurrencies):
    """The rows of the mirror/curl table paired by repetition, both runs with their output on `fs`."""
    for latency in latencies:
        for concurrency in concurrencies:
            pairs = []
            for rep in range(reps):
                m = next((r for r in records if r["tool"] == "mirror" and r.get("fs", "disk") == fs
                          and r["latency_ms"] == latency and r["concurrency"] == concurrency and r["rep"] == rep
                          and r["ok"]), None)
                c = next((r for r in records if r["tool"] == "curl" and r.get("fs", "disk") == fs
                          and r["latency_ms"] == latency and r["concurrency"] == concurrency and r["rep"] == rep
                          and r["ok"]), None)
                if m and c:
                    pairs.append((m, c))
            if not pairs:
                continue
            speed = [m["images_per_s"] / c["images_per_s"] for m, c in pairs]
            cpu = [m["cpu_per_1k"] / c["cpu_per_1k"] for m, c in pairs]
            limit = concurrency / (latency / 1000) if latency else None
            mirror_ips = median([m["images_per_s"] for m, _ in pairs])
            add(f"| {fs} | {latency} ms | {concurrency} | {fmt(mirror_ips)} | {fmt(median([c['images_per_s'] for _, c in pairs]))} | "
                f"{median(speed):.2f}× ({min(speed):.2f}–{max(speed):.2f}) | "
                f"{median([m['cpu_per_1k'] for m, _ in pairs]):.3f} | {median([c['cpu_per_1k'] for _, c in pairs]):.3f} | "
                f"{median(cpu):.2f}× ({min(cpu):.2f}–{max(cpu):.2f}) | "
                f"{(f'{mirror_ips / limit:.0%}' if limit else '—')} | {median([m['rss'] for m, _ in pairs]) / 1e6:.1f} |")


def method_filesystems(where, root):
    """The Method bullet on where the tools' output went."""
    parts = []
    if "tmpfs" in where:
        if where["tmpfs"].get("skipped"):
            parts.append(f"**tmpfs** was not measured in this run ({where['tmpfs']['skipped']})")
        else:
            parts.append(f"**tmpfs** (`{where['tmpfs']['path']}`: memory, no device under the writes and an fsync "
                         "that returns at once, so what is measured is the tools' own work)")
    if "disk" in where:
        d = where["disk"]
        parts.append(f"the machine's **disk** (`{os.path.relpath(d['path'], root)}`, {d['type']} on {d['device']} "
                     f"mounted at `{d['mount']}`: what users get, write-back and fsync included)")
        parts[-1] += (". A disk run's output is moved aside and deleted after the last run: ext4 without a journal "
                      "makes new files skip inodes freed in the last minute, which cost both tools 0.3-0.4 ms of CPU "
                      "per image when the previous run's 5,000 files had just been deleted"
                      if d.get("trash_kept", False) else
                      ". A disk run's output was deleted before the next run (too little free space to keep it "
                      "until the end), so creating files paid for those deletions on ext4 without a journal")
    return ("- Where the output went: " + " and ".join(parts) + ". Only the output moves: URL lists, logs and the "
            "XDG cache stay in the build folder on disk. `sync` runs before every run, outside the measured time, so "
            "no run pays for the write-back of the one before it. The scaling and search runs write to disk only.")


def write_report(path, chart_name, args, info, table, records, scaling, search, tools, latencies, concurrencies,
                 corpus_stats, started, finished, command, where, chart_fs):
    lines = []
    add = lines.append
    filesystems = measured_filesystems(where)

    def table_per_filesystem(write_table):
        for fs in filesystems:
            add("")
            add(f"### {fs_heading(fs, where, args.root)}")
            add("")
            write_table(add, table, fs, tools, latencies, concurrencies)

    title = "# Benchmarks"
    add(title)
    add("")
    if args.quick:
        add("> **SMOKE RUN (`scripts/bench/bench --quick`)**: a few hundred images, one repetition, on a machine that was "
            "busy with other builds. It shows that the script works end to end; its numbers are **not** "
            "the benchmark. Replace this file with a full `scripts/bench/bench` run on a quiet machine.")
        add("")
    add(f"Produced by `{command}` on {finished:%Y-%m-%d %H:%M} UTC ({(finished - started).total_seconds() / 60:.1f} "
        f"minutes). Everything below comes from that run; raw records are in `{os.path.relpath(args.results, args.root)}`.")
    add("")
    add("## Machine")
    add("")
    add(f"- CPU: {info['model']}, `nproc` = {info['nproc']}; RAM {info['memory']}; {info['os']}, kernel {info['kernel']}")
    for name, version in info["versions"].items():
        add(f"- {name}: {version}")
    add(f"- img2dataset {img2dataset_version()} (pip, in the benchmark's virtualenv)")
    add("")
    add("## Method")
    add("")
    add(f"- Corpus: {corpus_stats['count']:,} distinct images ({corpus_stats['mix']}), {corpus_stats['min'] / 1e3:.0f} KB to "
        f"{corpus_stats['max'] / 1e3:.0f} KB, median {corpus_stats['median'] / 1e3:.0f} KB, "
        f"{corpus_stats['total'] / 1e6:.0f} MB in all; variants of a few hundred generated base images that differ by "
        "a unique comment / metadata chunk, so every file is a valid image with distinct bytes.")
    add("- Server: nginx (1 worker, sendfile, keep-alive) on 127.0.0.1 for every cell; injected latency is the echo "
        "module's non-blocking `echo_sleep` before each response, then the file by sendfile (so the server is never "
        "the bottleneck: the project's SwiftNIO bench server topped out near 1,000 images/s).")
    add(f"- Every tool gets the same URL list per cell, into an empty folder, once on each file system "
        f"({' and '.join(filesystems)}). Within each repetition and concurrency every tool runs on every file system, "
        f"its runs back to back; the tool order and the file system order both rotate every repetition, so no tool and "
        f"no file system is always first; {args.reps} repetition(s); tables show the **median** (images/s range in "
        "brackets).")
    add(method_filesystems(where, args.root))
    add("- A run counts only if the tool exited 0 **and** every image of the list is in its folder, byte for byte "
        "(size and content digest): a fast failure cannot pass as a fast success.")
    add("- CPU = user + sys of the tool's whole process tree (wait4). Context switches = voluntary + involuntary "
        "(ru_nvcsw + ru_nivcsw) of the same tree, per image. Peak RSS = the larger of the kernel's max RSS "
        "of the largest process and the tree's summed RSS sampled every 20 ms (img2dataset runs a worker process; "
        "the sum counts shared pages twice).")
    add(f"- `wget` is serial (one at a time): it runs once per repetition and file system, shown under concurrency 1; "
        f"with injected latency it gets the first {args.wget_images_latency} URLs of the list (serial time is "
        "latency-bound: images/s is what matters).")
    add("- Settings: `mirror urls --concurrency N --per-host N --no-cache --json --quiet`; "
        "`curl --parallel --parallel-immediate --parallel-max N --fail --remote-name-all --output-dir` with a `--config` "
        "of `url =` lines; `aria2c -i -j N -x 1 --file-allocation=none --auto-save-interval=0`; `wget -i -nd -P`; "
        "`img2dataset --output_format files --resize_mode no --disable_all_reencoding True --processes_count 1 "
        "--thread_count N --disallowed_header_directives '[]' --extract_exif False` (saves the original bytes; "
        "opt-out header check off). mirror validates every image (magic, header, dimensions, completeness), hashes "
        "it (SHA-256), publishes it atomically with batched fsync and records it in its state database and manifest; "
        "curl, aria2c and wget only write bytes; img2dataset also hashes (SHA-256) and writes a .json per image.")
    add("")
    add(f"![chart]({chart_name})")
    add("")
    if chart_fs:
        add(f"The chart's throughput and CPU panels are the runs with the output on {chart_fs}"
            + ("; the scaling panel is on disk." if scaling else "."))
        add("")
    add("## Results: tool × concurrency × latency")
    add("")
    add("Once per file system the output went to" + (", tmpfs first." if len(filesystems) > 1 else "."))
    table_per_filesystem(results_table)
    add("")
    add("## mirror relative to each peer")
    add("")
    add("Throughput ratio = mirror images/s ÷ peer images/s (above 1: mirror is faster). CPU ratio = mirror CPU per "
        "image ÷ peer CPU per image (below 1: mirror is cheaper). wget is compared with mirror at the same latency "
        "and the lowest concurrency. Both tools' output on the same file system.")
    table_per_filesystem(peer_table)
    add("")
    add("## mirror against curl, paired by repetition (issue 14)")
    add("")
    add("Each repetition of a cell pairs mirror's run with curl's run of the same repetition on the same file system; "
        "the table gives the median of those paired ratios and their range. With injected latency, the latency limit "
        "is what `at once` connections can do at best: at once ÷ latency.")
    add("")
    add("| output on | latency | at once | mirror img/s | curl img/s | img/s ratio | mirror CPU ms/img | curl CPU ms/img | CPU ratio | mirror % of latency limit | mirror peak RSS MB |")
    add("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for fs in filesystems:
        paired_rows(add, records, fs, args.reps, latencies, concurrencies)
    add("")
    add("## Targets (issue 6)")
    add("")
    if filesystems:
        add(f"Evaluated with the output on {filesystems[0]} ({FS_ROLE[filesystems[0]]})"
            + (f"; then the same with the output on {', '.join(filesystems[1:])}." if len(filesystems) > 1 else "."))
    for fs in filesystems:
        add("")
        add(f"Output on {fs} ({FS_ROLE[fs]}):")
        add("")
        for line in targets(table, concurrencies, corpus_stats, fs):
            add(f"- {line}")
    add("")
    add("## Scaling: `mirror urls` over tiny PNGs (0 ms, nginx, 64 at once, output on disk)")
    add("")
    if scaling:
        add("| images | wall s | images/s | s per 1k images | CPU s / 1k | ctx switches / image | peak RSS MB | ok |")
        add("|---:|---:|---:|---:|---:|---:|---:|---|")
        for s in scaling:
            add(f"| {s['images']:,} | {s['wall']:.2f} | {fmt(s['images_per_s'])} | {s['wall'] / s['images'] * 1000:.3f} | "
                f"{s['cpu_per_1k']:.2f} | {fmt(s.get('cs_per_image'), 1)} | {s['rss'] / 1e6:.1f} | "
                f"{'yes' if s['ok'] else 'NO: ' + str(s['valid']) + ' valid'} |")
        largest = max(scaling, key=lambda s: s["images"])
        add("")
        add(f"Peak RSS at {largest['images']:,}: {largest['rss'] / 1e6:.1f} MB (target < 150 MB at 100k: "
            f"{'met' if largest['rss'] < 150e6 and largest['images'] >= 100_000 else 'see the table'}). "
            "Time should grow linearly: compare the s per 1k column.")
    else:
        add("Skipped (`--no-scaling`).")
    add("")
    add(f"## Search: `mirror {args.query} --count {args.search_count}` against the emulated APIs ({args.api_latency} ms API "
        "latency, output on disk)")
    add("")
    if search.get("skipped"):
        add(f"Skipped: {search['skipped']}.")
    else:
        summary = search.get("summary", {})
        add("| saved | total s | first image s | API requests | pages | CPU s | peak RSS MB | exit |")
        add("|---:|---:|---:|---:|---:|---:|---:|---:|")
        add(f"| {search.get('saved')} | {search['wall']:.2f} | {fmt(search.get('first_image_s'), 3)} | "
            f"{summary.get('apiRequests', '—')} | {summary.get('pages', '—')} | {search['user'] + search['sys']:.2f} | "
            f"{max(search['rss_max_process'], search['rss_tree_sampled']) / 1e6:.1f} | {search['exit']} |")
        add("")
        add(f"Command: `{search['command']}`, environment from `{search['emulator']}` (Openverse answers "
            "anonymously with 20 results a page and at most 400 results; the rest comes from Wikimedia). "
            "The minimum number of API requests is, per provider, its share of the count divided by its page size, "
            "rounded up.")
    add("")
    add("## Reproduce")
    add("")
    add("```")
    add(command)
    add("```")
    add("")
    add("`scripts/bench/bench --help` lists the options; `scripts/bench/bench --quick` is a smoke run of a few minutes.")
    add("")
    with open(path, "w") as f:
        f.write("\n".join(lines))


def targets(table, concurrencies, corpus_stats, fs):
    """The targets of issue 6, evaluated on the runs with their output on `fs`."""
    out = []
    m50 = table.get((fs, 50, 64, "mirror"))
    if m50 and m50["ok"]:
        limit = 64 / 0.05
        out.append(f"64 at once, 50 ms: {fmt(m50['images_per_s'])} images/s = {m50['images_per_s'] / limit:.0%} of the "
                   f"latency limit of 1,280/s ({m50['mb_per_s']:.0f} MB/s); target ≥ 95% of the lower of the latency "
                   "and bandwidth limits.")
    else:
        out.append("64 at once, 50 ms: not measured in this run.")
    for concurrency in concurrencies:
        m = table.get((fs, 0, concurrency, "mirror"))
        c = table.get((fs, 0, concurrency, "curl"))
        i = table.get((fs, 0, concurrency, "img2dataset"))
        if m and c and m["ok"] and c["ok"]:
            out.append(f"0 ms, {concurrency} at once: mirror/curl throughput {m['images_per_s'] / c['images_per_s']:.2f}× "
                       f"(target ≥ 1.0×), CPU per image {m['cpu_per_1k'] / c['cpu_per_1k']:.2f}× curl's (target ≤ 1.0×)"
                       + (f"; mirror/img2dataset {m['images_per_s'] / i['images_per_s']:.2f}× (target ≥ 3×)"
                          if i and i["ok"] else ""))
    rss = [table[k]["rss"] for k in table if k[0] == fs and k[3] == "mirror" and table[k]["ok"]]
    if rss:
        out.append(f"Peak RSS of mirror over every {corpus_stats['count']:,}-image run: {max(rss) / 1e6:.1f} MB (target ≤ 60 MB).")
    return out


def img2dataset_version():
    try:
        from importlib.metadata import version
        return version("img2dataset")
    except Exception:  # noqa: BLE001
        return "?"


# ---------------------------------------------------------------- main

def run_order(tools, filesystems, rep, ci):
    """The (tool, file system) runs of one repetition and concurrency: every tool on every file system, tool by tool.

    Both orders rotate with the repetition (and the concurrency), so no tool and no file system is always first, and
    each tool's two runs swap places from one repetition to the next.
    """
    shift = (rep + ci) % len(tools)
    order = tools[shift:] + tools[:shift]
    fs_shift = (rep + ci) % len(filesystems)
    fs_order = filesystems[fs_shift:] + filesystems[:fs_shift]
    return [(tool, fs) for tool in order for fs in fs_order]


def build(args):
    if args.no_build:
        return
    products = ["mirror", "mirror-bench-server"]
    with open(os.path.join(args.root, "Package.swift")) as f:
        manifest = f.read()
    if '"mirror-emulator"' in manifest:
        products.append("mirror-emulator")
    for product in products:
        # scripts/lib/build: the static release build, as the README builds a binary for another machine.
        log(f"bench: scripts/lib/build --scratch-path {args.scratch_path} {product}")
        result = subprocess.run([os.path.join(args.root, "scripts", "lib", "build"), "--scratch-path", args.scratch_path,
                                 product], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if result.returncode != 0:
            tail = "\n".join(result.stdout.splitlines()[-25:])
            if product == "mirror-emulator":
                log(f"bench: mirror-emulator did not build; the search benchmark will be skipped\n{tail}")
                continue
            raise SystemExit(f"bench: the release build of {product} failed:\n{tail}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    parser.add_argument("--build-dir", help="corpus, virtualenv and scratch (default ROOT/.build-bench)")
    parser.add_argument("--scratch-path", help="scripts/lib/build --scratch-path (default ROOT/.build-release)")
    parser.add_argument("--quick", action="store_true",
                        help="smoke run: 300 images, 1 repetition, 16 at once, 0 and 50 ms, scaling 1k, search 100")
    parser.add_argument("--images", type=int, help="images in the corpus (default 5000)")
    parser.add_argument("--reps", type=int, help="repetitions (default 3)")
    parser.add_argument("--concurrency", help="comma-separated (default 16,64)")
    parser.add_argument("--latencies", help="comma-separated milliseconds (default 0,50,200)")
    parser.add_argument("--tools", help=f"comma-separated subset of {','.join(TOOLS)}")
    parser.add_argument("--filesystems", default=",".join(FILESYSTEMS),
                        help="where the tools' output goes, comma-separated: tmpfs (a folder under /dev/shm: the "
                             "tools' own work) and/or disk (the build folder: what users get); default tmpfs,disk; "
                             "the scaling and search runs always write to disk")
    parser.add_argument("--images-200ms", type=int,
                        help="images per run at 200 ms and more (default 1000; keeps the full run under 40 minutes)")
    parser.add_argument("--wget-images-latency", type=int, help="URLs wget gets when latency is injected (default 100)")
    parser.add_argument("--scaling", help="comma-separated image counts for the scaling run (default 1000,10000,100000)")
    parser.add_argument("--no-scaling", action="store_true")
    parser.add_argument("--no-search", action="store_true")
    parser.add_argument("--query", default="kittens")
    parser.add_argument("--search-count", type=int, help="images the search run asks for (default 2000; 200 with --quick)")
    parser.add_argument("--api-latency", type=int, default=50)
    parser.add_argument("--no-build", action="store_true", help="use the existing release build")
    parser.add_argument("--output", help="the report (default ROOT/BENCHMARKS.md)")
    parser.add_argument("--chart", help="the PNG chart (default next to the report: benchmarks.png)")
    parser.add_argument("--timeout", type=float, default=900, help="seconds before one tool run is killed")
    args = parser.parse_args()

    quick = args.quick
    args.root = os.path.abspath(args.root)
    args.build_dir = os.path.abspath(args.build_dir or os.path.join(args.root, ".build-bench"))
    args.scratch_path = os.path.abspath(args.scratch_path or os.path.join(args.root, ".build-release"))
    args.images = args.images or (300 if quick else 5000)
    args.reps = args.reps or (1 if quick else 3)
    concurrencies = [int(x) for x in (args.concurrency or ("16" if quick else "16,64")).split(",")]
    latencies = [int(x) for x in (args.latencies or ("0,50" if quick else "0,50,200")).split(",")]
    tools = (args.tools or ",".join(TOOLS)).split(",")
    for tool in tools:
        if tool not in TOOLS:
            parser.error(f"unknown tool {tool}")
    filesystems = [fs for fs in FILESYSTEMS if fs in args.filesystems.split(",")]
    for fs in args.filesystems.split(","):
        if fs not in FILESYSTEMS:
            parser.error(f"unknown file system {fs} (tmpfs or disk)")
    args.search_count = args.search_count or (100 if quick else 2000)
    args.images_200ms = args.images_200ms or (args.images if quick else min(args.images, 1000))
    args.wget_images_latency = args.wget_images_latency or (50 if quick else 100)
    scaling_counts = [] if args.no_scaling else [int(x) for x in (args.scaling or ("1000" if quick else "1000,10000,100000")).split(",")]
    args.output = os.path.abspath(args.output or os.path.join(args.root, "BENCHMARKS.md"))
    args.chart = os.path.abspath(args.chart or os.path.join(os.path.dirname(args.output), "benchmarks.png"))
    args.results = os.path.join(args.build_dir, "results.json")
    command = "scripts/bench/bench " + " ".join(shlex.quote(a) for a in sys.argv[1:]
                                          if not a.startswith("--root") and not a.startswith("--build-dir")
                                          and a not in (args.root, args.build_dir))
    command = command.strip()
    started = datetime.datetime.now(datetime.timezone.utc)
    # SIGTERM unwinds like Ctrl-C, so the tool running is stopped and the tmpfs folder removed.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))

    build(args)
    mirror = os.path.join(args.scratch_path, "release", "mirror")
    emulator = os.path.join(args.scratch_path, "release", "mirror-emulator")
    emulator = emulator if os.path.exists(emulator) else None
    if not os.path.exists(mirror):  # mirror-bench-server is built but no longer used: nginx serves every cell
        raise SystemExit(f"bench: {mirror} is missing (build failed or --no-build without a build)")

    www = os.path.join(args.build_dir, "www")
    corpus_dir = os.path.join(www, f"corpus-v{CORPUS_VERSION}-{args.images}")
    index = generate_corpus(corpus_dir, args.images)
    files = index["files"]
    small_dir = os.path.join(www, f"small-v{CORPUS_VERSION}")
    small = generate_small_corpus(small_dir, max(scaling_counts)) if scaling_counts else None

    scratch = os.path.join(args.build_dir, "scratch")
    logs = os.path.join(args.build_dir, "logs")
    shutil.rmtree(scratch, ignore_errors=True)
    os.makedirs(scratch)
    os.makedirs(logs, exist_ok=True)
    tools_runner = Tools(args, mirror, os.path.join(args.build_dir, "venv", "bin"), scratch)
    info = machine_info()
    sizes = sorted(size for _, size, _ in files)
    mix = {}
    for name, _, _ in files:
        mix[name.rsplit(".", 1)[1]] = mix.get(name.rsplit(".", 1)[1], 0) + 1
    corpus_stats = {"count": len(files), "min": sizes[0], "max": sizes[-1], "median": statistics.median(sizes),
                    "total": sum(sizes),
                    "mix": ", ".join(f"{ {'jpg': 'JPEG', 'png': 'PNG', 'webp': 'WebP', 'gif': 'GIF'}[k]} {v / len(files):.0%}"
                                     for k, v in sorted(mix.items(), key=lambda kv: -kv[1]))}

    records = []
    tmpfs_base = None
    trash = None
    try:
        # One run writes the whole list (img2dataset adds a .json per image, mirror its state database).
        roots, where, tmpfs_base = output_roots(filesystems, scratch, int(corpus_stats["total"] * 1.25) + 64_000_000)
        measured = measured_filesystems(where)
        if not measured:
            raise SystemExit("bench: no file system left to write the output to")
        log("bench: output on " + " and ".join(f"{fs} ({where[fs]['type']}: {roots[fs]})" for fs in measured)
            + "; scaling and search on disk")
        disk_runs = args.reps * len(latencies) * len(concurrencies) * len(tools) if "disk" in measured else 0
        small_bytes = sum(sum(size for _, size, _ in small["files"][:count]) for count in scaling_counts) if small else 0
        trash = DiskTrash(os.path.join(args.build_dir, "trash"),
                          int(corpus_stats["total"] * 1.25) * disk_runs + int(small_bytes * 1.5))
        if "disk" in where:
            where["disk"]["trash_kept"] = trash.keeps
        nginx = Nginx(www, args.build_dir)
        log(f"bench: nginx on 127.0.0.1:{nginx.port}")
        try:
            for latency in latencies:
                server = nginx if latency == 0 else Nginx(www, args.build_dir, latency)
                try:
                    prefix = f"/{os.path.basename(corpus_dir)}"
                    base_url = f"http://127.0.0.1:{server.port}{prefix}"
                    cell_files = files if latency < 200 else files[:args.images_200ms]
                    wget_files = cell_files if latency == 0 else cell_files[:args.wget_images_latency]
                    log(f"bench: latency {latency} ms (nginx{'' if latency == 0 else ' + echo_sleep'}, "
                        f"port {server.port}), {len(cell_files)} images per run")
                    for rep in range(args.reps):
                        for ci, concurrency in enumerate(concurrencies):
                            for tool, fs in run_order(tools, measured, rep, ci):
                                if tool == "wget" and ci != 0:
                                    continue
                                chosen = wget_files if tool == "wget" else cell_files
                                records.append(run_one(tools_runner, tool, chosen, base_url,
                                                       1 if tool == "wget" else concurrency, latency, rep, scratch,
                                                       logs, args.timeout, f"l{latency}", fs, roots[fs], trash))
                finally:
                    if server is not nginx:
                        server.stop()

            scaling = []
            if scaling_counts:
                base_url = f"http://127.0.0.1:{nginx.port}/{os.path.basename(small_dir)}"
                log("bench: scaling run of mirror urls (64 at once, 0 ms, output on disk)")
                for count in scaling_counts:
                    r = run_one(tools_runner, "mirror", small["files"][:count], base_url, 64, 0, 0, scratch, logs,
                                args.timeout, "scaling", trash=trash)
                    scaling.append(r)
        finally:
            nginx.stop()
    finally:
        remove_tmpfs_base(tmpfs_base)
        if trash:
            trash.remove()

    if args.no_search:
        search = {"skipped": "--no-search"}
    else:
        log("bench: search benchmark")
        search = search_benchmark(args, mirror, emulator, scratch, logs)
        if search.get("skipped"):
            log(f"bench: search benchmark skipped: {search['skipped']}")

    table = aggregate(records)
    finished = datetime.datetime.now(datetime.timezone.utc)
    with open(args.results, "w") as f:
        json.dump({"machine": info, "command": command, "filesystems": where, "records": records, "scaling": scaling,
                   "search": search,
                   "corpus": corpus_stats, "started": started.isoformat(), "finished": finished.isoformat()},
                  f, indent=1, default=str)
    chart_fs = measured[0]  # tmpfs when it was measured
    write_chart(args.chart, table, tools, latencies, concurrencies, scaling, chart_fs)
    write_report(args.output, os.path.relpath(args.chart, os.path.dirname(args.output)), args, info, table, records,
                 scaling, search, tools, latencies, concurrencies, corpus_stats, started, finished, command, where,
                 chart_fs)
    log(f"bench: wrote {args.output} and {args.chart} in {(finished - started).total_seconds() / 60:.1f} minutes")
    failures = [r for r in records + scaling if not r["ok"]]
    if failures:
        log(f"bench: {len(failures)} run(s) failed the output check; see the report")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
