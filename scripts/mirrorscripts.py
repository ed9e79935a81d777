"""What the Python scripts in scripts/ share: a PNG maker, loopback ports, stopping a server, mirror-emulator's
variables, and the pass/fail reporter of the checking scripts.

Standard library only: slurm_check.py runs on the system python3, the others in virtualenvs of their own. A script
imports it by name (`from mirrorscripts import ...`): running a script by its path (`python3 scripts/x.py`, as every
wrapper does) puts the script's own folder first on sys.path, whatever the working directory.
"""
import signal
import socket
import struct
import subprocess
import sys
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
