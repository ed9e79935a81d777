"""What the Python scripts in scripts/ share: a PNG maker, the walkers of JPEG segments and of PNG and WebP chunks, the
tar reader for WebDataset shards, a median, loopback ports, an image server that can play an overloaded host, stopping
a server, mirror-emulator's variables, and the pass/fail reporter of the checking scripts.

Standard library only: slurm_check.py runs on the system python3, the others in virtualenvs of their own. A script
in a room of scripts/ (bench/, check/, fuzz/) puts this folder on sys.path from its own location
(`os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib")`), whatever the working directory, and then
imports it by name (`from mirrorscripts import ...`).
"""
import http.server
import io
import os
import signal
import socket
import statistics
import struct
import subprocess
import sys
import tarfile
import time
import traceback
import zlib


# ---------------------------------------------------------------- images

def png(width, height, pixels, text=None, level=6):
    """A valid 8-bit RGB PNG of `pixels` (width * height * 3 bytes, row by row), with `text` as a tEXt Comment if
    given; `level` is zlib's (1 is fast, for large noise that does not compress anyway)."""
    if len(pixels) != width * height * 3:
        raise ValueError(f"{len(pixels)} bytes of pixels for {width}×{height} RGB")

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    stride = width * 3
    raw = b"".join(b"\x00" + pixels[y * stride:(y + 1) * stride] for y in range(height))
    comment = chunk(b"tEXt", b"Comment\x00" + text.encode()) if text is not None else b""
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + comment + chunk(b"IDAT", zlib.compress(raw, level)) + chunk(b"IEND", b""))



# ---------------------------------------------------------------- reading image containers

class NotWellFormed(ValueError):
    """Bytes that are not the container they are read as (a JPEG without its SOI, a byte where a marker belongs)."""


def jpeg_segments(data):
    """The marker segments of a JPEG, in order, up to and with SOS: (marker byte, offset of its FF, payload after the
    length). Fill bytes (FF FF) are skipped. Raises NotWellFormed without the SOI or where a marker is missing."""
    if data[:2] != b"\xff\xd8":
        raise NotWellFormed("not a JPEG")
    i = 2
    while i + 4 <= len(data):
        if data[i] != 0xFF:
            raise NotWellFormed(f"no marker at {i}")
        marker = data[i + 1]
        if marker == 0xFF:
            i += 1
            continue
        length = struct.unpack(">H", data[i + 2:i + 4])[0]
        yield marker, i, data[i + 4:i + 2 + length]
        if marker == 0xDA:
            return
        i += 2 + length


def png_chunks(data):
    """(type, data) of each chunk of a PNG, in order."""
    chunks, i = [], 8
    while i + 8 <= len(data):
        length, kind = struct.unpack(">I4s", data[i:i + 8])
        chunks.append((kind, data[i + 8:i + 8 + length]))
        i += 12 + length
    return chunks


def webp_chunks(data):
    """(fourcc, data) of each RIFF chunk of a WebP, in order. Raises NotWellFormed when it is no RIFF WEBP."""
    if data[:4] != b"RIFF" or data[8:12] != b"WEBP":
        raise NotWellFormed("not a WebP")
    chunks, i = [], 12
    while i + 8 <= len(data):
        kind, length = struct.unpack("<4sI", data[i:i + 8])
        chunks.append((kind, data[i + 8:i + 8 + length]))
        i += 8 + length + (length & 1)
    return chunks


# ---------------------------------------------------------------- shards and measurements

def tar_members(source):
    """A tar's members (a WebDataset shard's) in the tar's order: (name, bytes), the bytes read one member at a time,
    so that a shard of hundreds of MB is never whole in memory. `source` is a path, the tar's bytes or a binary file
    object. A member that is not a regular file (a directory, a link) comes with None: mirror writes none, so a check
    sees it for what it is rather than a link's target.

    Samples are the callers' to group: each script splits a name into key and extension its own way."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        source = io.BytesIO(source)
    opened = tarfile.open(source) if isinstance(source, (str, os.PathLike)) else tarfile.open(fileobj=source)
    with opened as tar:
        for member in tar.getmembers():  # every header first: a damaged one fails the shard before any member is used
            yield member.name, tar.extractfile(member).read() if member.isfile() else None


def median(values):
    """The median of an iterable; NaN when it is empty (a benchmark cell whose runs all failed), so a report can
    still be written."""
    values = list(values)
    return statistics.median(values) if values else float("nan")


# ---------------------------------------------------------------- servers on loopback

def free_port(host="127.0.0.1"):
    """A TCP port nothing listens on now (the kernel's pick)."""
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def wait_for_port(port, process=None, timeout=30.0, host="127.0.0.1"):
    """Returns once something accepts connections on host:port; raises RuntimeError if `process` (the server, when
    it is our child) exits first, or after `timeout` seconds. A bare connect: no request is sent."""
    deadline = time.monotonic() + timeout
    while True:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"the server for {host}:{port} exited with {process.returncode}")
        try:
            socket.create_connection((host, port), timeout=0.5).close()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise RuntimeError(f"nothing listens on {host}:{port} after {timeout:g} s") from None
            time.sleep(0.05)


def serve_files(directory, port, unavailable=None, log=None):
    """Serves `directory` on 127.0.0.1:`port` with http.server (threaded) until the process ends; meant for a
    process of its own: `python scripts/lib/mirrorscripts.py --serve DIR PORT [--unavailable FILE] [--log FILE]`.

    - `/slow/NAME` is NAME after a 40 ms pause.
    - While the file `unavailable` exists, every path it lists (one a line, as requested: `/NAME`, `/slow/NAME`) is
      answered 503 Service Unavailable, as an overloaded host answers; delete the file and the host has recovered.
      The file is read on each request, so the list can change while the server runs.
    - `log`, if given, gets one line per request answered: `METHOD PATH STATUS` (the path as requested).
    """
    import threading
    lock = threading.Lock()

    class Handler(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, directory=directory, **kwargs)

        def refused(self):
            if unavailable is None:
                return False
            try:
                with open(unavailable, encoding="utf-8") as handle:
                    listed = {line.strip() for line in handle}
            except FileNotFoundError:
                return False
            return self.path.split("?")[0] in listed

        def answer(self, send):
            if self.refused():
                self.send_error(503, "Service Unavailable")
                return
            if self.path.startswith("/slow/"):
                time.sleep(0.04)
                self.path = self.path[len("/slow"):]
            send()

        def do_GET(self):
            self.answer(super().do_GET)

        def do_HEAD(self):
            self.answer(super().do_HEAD)

        def log_request(self, code="-", size="-"):
            if log is not None:
                method, target = (self.requestline.split(" ") + ["", ""])[:2]
                with lock, open(log, "a", encoding="utf-8") as handle:
                    handle.write(f"{method} {target} {int(code)}\n")

        def log_message(self, *args):
            pass

    http.server.ThreadingHTTPServer.daemon_threads = True
    http.server.ThreadingHTTPServer(("127.0.0.1", int(port)), Handler).serve_forever()


def start_file_server(directory, port, unavailable=None, log=None):
    """`serve_files` in a child process (so that a busy checking script does not slow the images); returns it once it
    accepts connections. Stop it with `stop`."""
    argv = [sys.executable, os.path.abspath(__file__), "--serve", directory, str(port)]
    if unavailable is not None:
        argv += ["--unavailable", unavailable]
    if log is not None:
        argv += ["--log", log]
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_for_port(port, process)
    return process


def requests_logged(log, start=0):
    """The requests `serve_files` logged from byte offset `start`: [(method, path, status)], and the offset after."""
    try:
        with open(log, "rb") as handle:
            handle.seek(start)
            data = handle.read()
    except FileNotFoundError:
        return [], start
    data = data[:data.rfind(b"\n") + 1]  # whole lines only: a request being logged is read next time
    lines = [line.split(" ") for line in data.decode("utf-8", "replace").splitlines() if line.count(" ") == 2]
    return [(m, p, int(s)) for m, p, s in lines], start + len(data)


def stop(process, sig=signal.SIGTERM, timeout=10):
    """Sends `sig` to a child process still running and waits for it; SIGKILL after `timeout` seconds."""
    if process.poll() is None:
        process.send_signal(sig)
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def emulator_environment(process, count=15):
    """The KEY=VALUE lines mirror-emulator prints once it listens (its endpoints and keys: 15), as a dict; fewer if
    it exits first. `process` is the emulator, started with stdout=PIPE and text=True."""
    variables = {}
    while len(variables) < count:
        line = process.stdout.readline()
        if not line:
            break
        if "=" in line:
            key, value = line.strip().split("=", 1)
            variables[key] = value
    return variables


# ---------------------------------------------------------------- checks

class CheckFailed(Exception):
    """A check failed and the rest of its section depends on it (Checks.section ends the section)."""


class Checks:
    """A checking script's passed and failed checks: prints each, ends with a summary, gives the exit status.

    Two styles:
    - a report (verbose, the default; check_datasets.py, check_s3.py): sections of claims.
          checks.section("title", function)            # prints the title, runs the function
          checks.check(condition, "what holds", detail)  # "  ok: what holds", or on stderr "  FAILED: what holds"
                                                         # and the detail, then CheckFailed ends the section
      An exception from the function fails its section too; the other sections still run. `summary()` prints
      "NAME: all N checks passed", or on stderr "NAME: FAILED: F of N checks:" and the failures, one line each.
    - a list of problems (verbose=False; k8s_validate.py, slurm_check.py): `checks.fail("what is wrong")` prints
      "NAME: what is wrong" on stderr at once (passed checks print nothing); with `limit`, only the first `limit`
      failures are printed and `summary()` says how many more there were.
    Either way `summary()` returns the exit status: 0 if nothing failed, else 1.
    """

    def __init__(self, name, verbose=True, limit=None):
        self.name = name
        self.verbose = verbose
        self.limit = limit
        self.passed = 0
        self.failures = []  # (section title or None, message and its detail)
        self.current = None  # the title of the section running

    def check(self, condition, message, detail=""):
        """Passes, or records the failure (with `detail`, what was found) and raises CheckFailed."""
        if condition:
            self.passed += 1
            if self.verbose:
                print(f"  ok: {message}", flush=True)
            return
        raise CheckFailed(self.fail(message, detail))

    def fail(self, message, detail=""):
        """Records and prints a failure (without stopping anything); returns its text."""
        text = message + (f"\n{detail}" if detail else "")
        self.failures.append((self.current, text))
        if self.limit is None or len(self.failures) <= self.limit:
            print(f"  FAILED: {text}" if self.verbose else f"{self.name}: {text}", file=sys.stderr, flush=True)
        return text

    def section(self, title, function):
        """Prints `title` and runs `function`; a failed check or an exception ends the section, not the script."""
        print(title, flush=True)
        self.current = title
        try:
            function()
        except CheckFailed:
            pass
        except Exception as error:  # a check that crashes (a reader that raises, say) is a failed check too
            self.fail(f"{title}: {type(error).__name__}: {str(error)[:500]}", traceback.format_exc().rstrip())
        finally:
            self.current = None

    def summary(self):
        """Prints the closing lines; returns the exit status."""
        failed = len(self.failures)
        if self.limit is not None and failed > self.limit:
            print(f"{self.name}: ... and {failed - self.limit} more", file=sys.stderr)
        if self.verbose and failed:
            print(f"{self.name}: FAILED: {failed} of {self.passed + failed} checks:", file=sys.stderr)
            for _, text in self.failures:
                print(f"  - {text.splitlines()[0]}", file=sys.stderr)
        elif self.verbose:
            print(f"{self.name}: all {self.passed} checks passed")
        return 1 if failed else 0


if __name__ == "__main__" and len(sys.argv) >= 4 and sys.argv[1] == "--serve":
    import argparse
    parser = argparse.ArgumentParser()
    parser.add_argument("--serve", nargs=2, metavar=("DIR", "PORT"), required=True)
    parser.add_argument("--unavailable")
    parser.add_argument("--log")
    options = parser.parse_args()
    serve_files(options.serve[0], options.serve[1], options.unavailable, options.log)
