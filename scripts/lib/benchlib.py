"""What the benchmarks share (scripts/bench/): the corpus of distinct images and its content digests, nginx and
mirror-bench-server on loopback, the file system a path is on, and `measure`, which runs one tool and takes its wall
time, CPU, context switches and peak RSS.

scripts/bench/bench.py is the benchmark of issue 6 over these; bench_bar.py, bench_datasets.py, bench_hash.py,
bench_hosts.py and bench_web.py measure other things with the same corpus, servers and measuring. Needs numpy and
Pillow for a corpus (the benchmarks' virtualenv, .build-bench/venv); the rest is the standard library.
"""
import hashlib
import io
import json
import math
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import zlib

from mirrorscripts import free_port, stop, wait_for_port

CORPUS_VERSION = 1
TAG = b"MIRROR-BENCH-VARIANT:000000000000"  # replaced by a unique number in every variant, same length
EDGE = 4096  # content digest = size + first and last EDGE bytes; every variant's tag lies inside one of them
PAGE = os.sysconf("SC_PAGE_SIZE")

FORMAT_MIX = [("jpg", 0.55), ("png", 0.25), ("webp", 0.12), ("gif", 0.08)]
SIZE_MEDIAN, SIZE_SIGMA, SIZE_MIN, SIZE_MAX = 80_000, 0.9, 22_000, 960_000

def log(message):
    print(message, file=sys.stderr, flush=True)


def run_quiet(argv, **kwargs):
    return subprocess.run(argv, check=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kwargs)


# ---------------------------------------------------------------- corpus

def digest_of(size, head, tail):
    h = hashlib.blake2b(digest_size=16)
    h.update(size.to_bytes(8, "little"))
    h.update(head)
    h.update(tail)
    return h.hexdigest()


def digest_bytes(data):
    return digest_of(len(data), data[:EDGE], data[-EDGE:])


def digest_file(path, size):
    with open(path, "rb") as f:
        head = f.read(EDGE)
        if size > EDGE:
            f.seek(max(0, size - EDGE))
            tail = f.read(EDGE)
        else:
            tail = head
    return digest_of(size, head, tail)


def variant(base, fmt, number):
    """`base` with its placeholder tag replaced by `number`: a valid image with distinct bytes."""
    tag = b"MIRROR-BENCH-VARIANT:%012d" % number
    at = base.index(TAG)
    data = bytearray(base)
    data[at:at + len(TAG)] = tag
    if fmt == "png":  # the tag sits in a tEXt chunk: fix its CRC
        start = base.rindex(b"tEXt", 0, at)
        length = int.from_bytes(base[start - 4:start], "big")
        crc = zlib.crc32(bytes(data[start:start + 4 + length])) & 0xFFFFFFFF
        data[start + 4 + length:start + 8 + length] = crc.to_bytes(4, "big")
    return bytes(data)


def encode(image, fmt):
    from PIL import PngImagePlugin
    buffer = io.BytesIO()
    if fmt == "jpg":
        image.save(buffer, "JPEG", quality=85, comment=TAG)
    elif fmt == "png":
        info = PngImagePlugin.PngInfo()
        info.add_text("Comment", TAG.decode())
        image.save(buffer, "PNG", pnginfo=info, compress_level=1)
    elif fmt == "webp":
        image.save(buffer, "WEBP", quality=80, method=0, xmp=TAG)
    elif fmt == "gif":
        from PIL import Image
        image.quantize(256, method=Image.Quantize.FASTOCTREE).save(buffer, "GIF", comment=TAG)
    data = buffer.getvalue()
    if data.count(TAG) != 1:
        raise RuntimeError(f"{fmt}: the variant tag is not in the encoded file exactly once")
    at = data.index(TAG)
    if not (at + len(TAG) <= EDGE or at >= len(data) - EDGE):
        raise RuntimeError(f"{fmt}: the variant tag is at byte {at} of {len(data)}, outside the digest edges")
    return data


def picture(np_rng, width, height, noise):
    """A smooth random colour field with grain: compresses like a photo, not like noise or a flat fill."""
    import numpy as np
    from PIL import Image
    cells = np_rng.integers(0, 256, (max(2, height // 48), max(2, width // 48), 3), dtype=np.uint8)
    smooth = np.asarray(Image.fromarray(cells).resize((width, height), Image.BICUBIC), dtype=np.int16)
    grain = np_rng.integers(-noise, noise + 1, (height, width, 3), dtype=np.int16)
    return Image.fromarray(np.clip(smooth + grain, 0, 255).astype(np.uint8))


def make_base(np_rng, fmt, target, aspect, bpp):
    noise = 12
    pixels = target / bpp[fmt]
    for _ in range(4):
        width = max(16, int(math.sqrt(pixels * aspect)))
        height = max(16, int(width / aspect))
        data = encode(picture(np_rng, width, height, noise), fmt)
        ratio = target / len(data)
        if 0.85 <= ratio <= 1.18:
            break
        pixels = width * height * ratio
    return data


def calibrate(np_rng):
    bpp = {}
    for fmt, _ in FORMAT_MIX:
        data = encode(picture(np_rng, 400, 300, 12), fmt)
        bpp[fmt] = len(data) / (400 * 300)
    return bpp


def cached_corpus(directory, fits):
    """The corpus `write_corpus` left in `directory` if it is of this CORPUS_VERSION and `fits(files)`, else None."""
    index_path = os.path.join(directory, "index.json")
    if os.path.exists(index_path):
        with open(index_path) as f:
            index = json.load(f)
        if index.get("version") == CORPUS_VERSION and fits(index["files"]):
            return index
    return None


def write_corpus(directory, images):
    """Replaces `directory` with the (name, bytes) of `images` and their index.json; returns the index."""
    shutil.rmtree(directory, ignore_errors=True)
    os.makedirs(directory)
    files = []
    for name, data in images:
        with open(os.path.join(directory, name), "wb") as f:
            f.write(data)
        files.append([name, len(data), digest_bytes(data)])
    index = {"version": CORPUS_VERSION, "files": files}
    with open(os.path.join(directory, "index.json"), "w") as f:
        json.dump(index, f)
    return index


def generate_corpus(directory, count, seed=6):
    """`count` distinct images (file names i000001.jpg …) from a few hundred base images; cached."""
    index = cached_corpus(directory, lambda files: len(files) == count)
    if index is not None:
        return index
    import numpy as np
    started = time.monotonic()
    rng = random.Random(seed)
    np_rng = np.random.default_rng(seed)
    bpp = calibrate(np_rng)
    bases_per_format = {fmt: max(2, int(min(count, 320) * share)) for fmt, share in FORMAT_MIX}
    bases = {}
    for fmt, n in bases_per_format.items():
        bases[fmt] = []
        for _ in range(n):
            target = min(SIZE_MAX, max(SIZE_MIN, rng.lognormvariate(math.log(SIZE_MEDIAN), SIZE_SIGMA)))
            aspect = rng.choice([4 / 3, 3 / 2, 1.0, 3 / 4, 16 / 9, 2 / 3])
            bases[fmt].append(make_base(np_rng, fmt, int(target), aspect, bpp))
    log(f"bench: {sum(bases_per_format.values())} base images in {time.monotonic() - started:.1f}s")
    formats = [fmt for fmt, _ in FORMAT_MIX]
    weights = [share for _, share in FORMAT_MIX]

    def images():
        for number in range(1, count + 1):
            fmt = rng.choices(formats, weights)[0]
            yield f"i{number:06d}.{fmt}", variant(rng.choice(bases[fmt]), fmt, number)

    index = write_corpus(directory, images())
    total = sum(size for _, size, _ in index["files"])
    log(f"bench: corpus of {count} images, {total / 1e6:.0f} MB, in {time.monotonic() - started:.1f}s: {directory}")
    return index


def corpus_photos(count, tool):
    """The first `count` JPEG photos of the 5,000-image corpus under the bench folder (made if missing): the corpus's
    folder, the folder nginx serves it from, and the photos' names. `tool` names the script in the error."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    www = os.path.join(os.environ.get("MIRROR_BENCH_DIR", os.path.join(root, ".build-bench")), "www")
    corpus = os.path.join(www, f"corpus-v{CORPUS_VERSION}-5000")
    index = generate_corpus(corpus, 5000)
    photos = [name for name, _, _ in index["files"] if name.endswith(".jpg")][:count]
    if len(photos) < count:
        raise SystemExit(f"{tool}: the corpus has {len(photos)} JPEG photos, fewer than the {count} asked for")
    return corpus, www, photos


def generate_small_corpus(directory, count, seed=7):
    """`count` distinct tiny PNGs (about 3 KB) for the scaling run; cached."""
    index = cached_corpus(directory, lambda files: len(files) >= count)
    if index is not None:
        return index
    import numpy as np
    started = time.monotonic()
    np_rng = np.random.default_rng(seed)
    bases = [encode(picture(np_rng, 32, 32, 60), "png") for _ in range(40)]
    index = write_corpus(directory, ((f"s{number:06d}.png", variant(bases[number % len(bases)], "png", number))
                                     for number in range(1, count + 1)))
    log(f"bench: small corpus of {count} PNGs in {time.monotonic() - started:.1f}s")
    return index


def count_valid(directory, expected):
    """How many distinct corpus images (by size and content digest) are in `directory`, at any depth."""
    sizes = {size for size, _ in expected.values()}
    wanted = {digest for _, digest in expected.values()}
    found = set()
    stack = [directory]
    while stack:
        top = stack.pop()
        try:
            entries = list(os.scandir(top))
        except FileNotFoundError:
            continue
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                if entry.name != ".mirror":
                    stack.append(entry.path)
            elif entry.is_file(follow_symlinks=False):
                size = entry.stat().st_size
                if size in sizes:
                    digest = digest_file(entry.path, size)
                    if digest in wanted:
                        found.add(digest)
    return len(found)


# ---------------------------------------------------------------- servers

ECHO_MODULE = "/usr/lib/nginx/modules/ngx_http_echo_module.so"


class Nginx:
    """nginx in the foreground with its own config, prefix and port; nothing system-wide.

    With latency_ms > 0, every response waits that long first (the echo module's non-blocking `echo_sleep`, then an
    internal redirect to the static file, still served with sendfile): nginx stays far faster than the tools, unlike
    mirror-bench-server, which tops out near 1,000 images/s.
    """

    def __init__(self, root, state_dir, latency_ms=0):
        self.root = root
        self.state = os.path.join(state_dir, "nginx" if latency_ms == 0 else f"nginx-l{latency_ms}")
        os.makedirs(self.state, exist_ok=True)
        self.port = free_port()
        binary = shutil.which("nginx") or "/usr/sbin/nginx"
        mime = "/etc/nginx/mime.types"
        user = "user root root;" if os.geteuid() == 0 else ""
        if latency_ms and not os.path.exists(ECHO_MODULE):
            raise SystemExit(f"bench: {ECHO_MODULE} is missing: apt-get install libnginx-mod-http-echo")
        load = f"load_module {ECHO_MODULE};" if latency_ms else ""
        location = (f"location / {{ echo_sleep {latency_ms / 1000:.3f}; echo_exec @file; }}\n        location @file {{ }}"
                    if latency_ms else "location / { }")
        config = f"""
{load}
daemon off;
{user}
worker_processes 1;
pid {self.state}/nginx.pid;
error_log {self.state}/error.log warn;
events {{ worker_connections 4096; }}
http {{
    {"include " + mime + ";" if os.path.exists(mime) else ""}
    default_type application/octet-stream;
    access_log off;
    sendfile on;
    tcp_nopush on;
    tcp_nodelay on;
    keepalive_requests 10000000;
    keepalive_timeout 300s;
    client_body_temp_path {self.state}/body;
    proxy_temp_path {self.state}/proxy;
    fastcgi_temp_path {self.state}/fastcgi;
    uwsgi_temp_path {self.state}/uwsgi;
    scgi_temp_path {self.state}/scgi;
    server {{
        listen 127.0.0.1:{self.port} backlog=4096;
        root {root};
        {location}
    }}
}}
"""
        path = os.path.join(self.state, "nginx.conf")
        with open(path, "w") as f:
            f.write(config)
        self.process = subprocess.Popen([binary, "-e", f"{self.state}/error.log", "-p", self.state, "-c", path],
                                        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                        stderr=open(os.path.join(self.state, "stderr.log"), "w"))
        wait_for_port(self.port)
        self.latency = latency_ms

    def stop(self):
        stop(self.process, signal.SIGQUIT)  # nginx's graceful shutdown


class BenchServer:
    """mirror-bench-server: the corpus in memory on a SwiftNIO TestServer with a per-request latency."""

    def __init__(self, binary, root, latency_ms, state_dir):
        self.latency = latency_ms
        self.process = subprocess.Popen([binary, root, "--latency-ms", str(latency_ms)], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE,
                                        stderr=open(os.path.join(state_dir, f"bench-server-{latency_ms}.log"), "w"),
                                        text=True)
        line = self.process.stdout.readline()
        if not line.startswith("PORT="):
            raise RuntimeError(f"mirror-bench-server did not start: {line!r}")
        self.port = int(line.strip().split("=", 1)[1])
        wait_for_port(self.port)

    def stop(self):
        stop(self.process)


# ---------------------------------------------------------------- file systems

def unescape_mount(field):
    """A /proc/mounts field with its octal escapes (\\040 for a space …) decoded."""
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def mount_of(path):
    """(device, mount point, type) of the /proc/mounts entry that holds `path`, or None."""
    path = os.path.realpath(path)
    best = None
    try:
        with open("/proc/mounts") as f:
            for line in f:
                fields = line.split()
                if len(fields) < 3:
                    continue
                device, point, kind = unescape_mount(fields[0]), unescape_mount(fields[1]), fields[2]
                inside = path == point or path.startswith(point.rstrip("/") + "/")
                if inside and (best is None or len(point) >= len(best[1])):  # a later mount over the same point wins
                    best = (device, point, kind)
    except OSError:
        pass
    return best


def fs_type(path):
    """The type of the file system holding `path` (ext4, xfs, tmpfs …): /proc/mounts, else `stat -f -c %T`."""
    entry = mount_of(path)
    if entry:
        return entry[2]
    try:
        return run_quiet(["stat", "-f", "-c", "%T", path]).stdout.strip() or "unknown"
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


# ---------------------------------------------------------------- measuring

def tree_rss(pid, include_root=True):
    """Resident bytes of `pid` (unless `include_root` is false) and all its descendants right now."""
    total = 0
    stack = [pid]
    seen = set()
    while stack:
        p = stack.pop()
        if p in seen:
            continue
        seen.add(p)
        try:
            if p != pid or include_root:
                with open(f"/proc/{p}/statm") as f:
                    total += int(f.read().split()[1]) * PAGE
            for tid in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{tid}/children") as f:
                    stack.extend(int(c) for c in f.read().split())
        except (FileNotFoundError, ProcessLookupError, ValueError):
            pass
    return total


def measure(argv, env, stdout_path, stderr_path, timeout, cwd=None, watch=None):
    """Runs `argv`; returns wall seconds, CPU (user, sys) and context switches of the whole waited-for tree, peak RSS
    and exit code.

    Peak RSS is the larger of the kernel's max RSS of the largest process in the tree (wait4) and the peak
    of the tree's summed RSS sampled every 20 ms (which counts multi-process tools; shared pages count twice).
    User and sys CPU are wait4's of GNU time, which waited for the tool's tree (microseconds, with GNU time's own 1 ms
    or so; GNU time's own report rounds to 10 ms, 0.005 ms an image over 2,000). Context switches = voluntary +
    involuntary (ru_nvcsw + ru_nivcsw) of the tree, from GNU time's rusage of the tool, else from wait4's.
    `watch` is called every sample and may record events (time to first image).
    """
    with open(stdout_path, "wb") as out, open(stderr_path, "wb") as err:
        started = time.monotonic()
        # GNU time forks the tool from a small process: a child forked straight from this (large) Python process
        # would inherit its RSS high-water mark in ru_maxrss.
        time_path = stdout_path + ".time"
        process = subprocess.Popen(["/usr/bin/time", "-f", "%e %U %S %M %w %c", "-o", time_path, "--"] + argv, env=env,
                                   cwd=cwd, stdin=subprocess.DEVNULL, stdout=out, stderr=err, start_new_session=True)
        peak = [0]
        done = threading.Event()

        def sample():
            while not done.is_set():
                peak[0] = max(peak[0], tree_rss(process.pid, include_root=False))
                if watch:
                    watch(time.monotonic() - started)
                done.wait(0.02)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        timed_out = False

        def kill():
            nonlocal timed_out
            timed_out = True
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

        timer = threading.Timer(timeout, kill)
        timer.start()
        try:
            _, status, usage = os.wait4(process.pid, 0)
        except BaseException:
            # Ctrl-C or SIGTERM: the tool has its own session and would outlive us, still writing its output.
            timer.cancel()
            kill()
            process.wait()
            done.set()
            raise
        wall = time.monotonic() - started
        timer.cancel()
        done.set()
        sampler.join()
        process.returncode = os.waitstatus_to_exitcode(status)
        # Anything the tool left running in its session (it should not) goes now.
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    user, system, max_rss = usage.ru_utime, usage.ru_stime, 0
    switches = usage.ru_nvcsw + usage.ru_nivcsw
    try:
        with open(time_path) as f:
            fields = f.read().strip().splitlines()[-1].split()
        max_rss = int(fields[3]) * 1024
        switches = int(fields[4]) + int(fields[5])
    except (OSError, ValueError, IndexError):
        pass
    return {
        "wall": wall,
        "user": user,
        "sys": system,
        "rss_max_process": max_rss,
        "rss_tree_sampled": peak[0],
        "cs": switches,
        "exit": -999 if timed_out else process.returncode,
    }
