"""scripts/check/hostile-wire's worker: see that script for what it probes.

Standard library only (and /usr/bin/time for a peak RSS). One loopback server (http.server, HTTP/1.1 keep-alive, in a
thread of this process) answers every case; each binary's requests carry a prefix of their own (/c1-0/…, /c1-1/…), so
what each run asked for can be counted. Every mirror run is capped at 120 s.
"""
import argparse
import concurrent.futures
import gzip
import hashlib
import http.server
import json
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))  # scripts/lib: mirrorscripts
from mirrorscripts import free_port, png

CAP = 120  # seconds a mirror run may take before it is killed
DRIP_RATE = 1500  # bytes a second
GARBAGE = (b"\x00not-http garbage past Content-Length\r\n" * 20)[:700]


def distinct_png(name):
    """A 16×16 PNG of its own for each name (the pixels are the name's SHA-256, repeated)."""
    return png(16, 16, (hashlib.sha256(name.encode("latin-1")).digest() * 24)[:16 * 16 * 3])


# A ~60 KB PNG that does not compress (random pixels): what the drip sends.
DRIP_PNG = png(140, 140, random.Random(43).randbytes(140 * 140 * 3), level=1)


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, port):
        super().__init__(("127.0.0.1", port), Handler)
        self.lock = threading.Lock()
        self.log = []  # (raw request target as bytes, status)
        self.drip_sent = {}  # target -> bytes of the body sent before the client went away or the end

    def handle_error(self, request, client_address):
        pass  # a client that hangs up mid-body (a drip given up, a garbage-led connection closed) is expected here

    def record(self, target, status):
        with self.lock:
            self.log.append((target.encode("latin-1", "replace"), status))

    def requests(self, prefix):
        """The request targets logged under `prefix` (bytes)."""
        with self.lock:
            return [target for target, _ in self.log if target.startswith(prefix)]


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: what case 1 needs

    def log_message(self, *args):
        pass

    def head(self, status, length, kind="image/png"):
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(length))
        self.end_headers()

    def do_HEAD(self):
        self.do_GET(body=False)

    def do_GET(self, body=True):
        target = self.path  # the raw request target, bytes read as Latin-1 (http.server does not unquote it)
        name = target.rsplit("/", 1)[-1]
        if name == "bad.png":
            data = distinct_png(target)
            self.server.record(target, 200)
            self.head(200, len(data))  # the PNG's length; then 700 bytes more on the kept-alive connection
            if body:
                self.wfile.write(data + GARBAGE)
        elif name == "drip.png":
            self.server.record(target, 200)
            self.head(200, len(DRIP_PNG))
            if body:
                self.drip(target)
        elif "/c6-" in target and name.startswith("caf"):
            # The PNG only at the byte percent-encoded as itself (%E9, either case: the same byte)
            found = name.lower() == "caf%e9.png"
            self.server.record(target, 200 if found else 404)
            data = distinct_png(target.lower()) if found else b""
            self.head(200 if found else 404, len(data))
            if body:
                self.wfile.write(data)
        elif name.endswith(".png"):
            data = distinct_png(target)
            self.server.record(target, 200)
            self.head(200, len(data))
            if body:
                self.wfile.write(data)
        else:  # robots.txt, a search endpoint, anything else
            self.server.record(target, 404)
            self.head(404, 0, "text/plain")

    def drip(self, target):
        started = time.monotonic()
        sent = 0
        try:
            while sent < len(DRIP_PNG):
                due = min(len(DRIP_PNG), int((time.monotonic() - started) * DRIP_RATE) + 150)
                if due > sent:
                    self.wfile.write(DRIP_PNG[sent:due])
                    self.wfile.flush()
                    sent = due
                    with self.server.lock:
                        self.server.drip_sent[target] = sent
                time.sleep(0.1)
        except OSError:
            self.close_connection = True


# ---------------------------------------------------------------- running mirror

def environment(work, index):
    """This process's environment without proxies or MIRROR_* settings, with a cache and configuration of the
    binary's own under `work`: nothing outside loopback, nothing from the user's setup."""
    env = {key: value for key, value in os.environ.items()
           if not key.startswith("MIRROR_") and key.lower() not in ("http_proxy", "https_proxy", "all_proxy", "no_proxy")}
    env.update(XDG_CACHE_HOME=str(work / f"cache-{index}"), XDG_CONFIG_HOME=str(work / "config"),
               SWIFT_BACKTRACE="enable=no", NO_PROXY="*")
    return env


class Run:
    """One mirror run: argv, capped at CAP seconds; with rss, under /usr/bin/time -f '%M'."""

    def __init__(self, argv, env, rss=False):
        self.rss_mb = None
        self.killed = False
        report = None
        if rss:
            handle, report = tempfile.mkstemp(suffix=".time")
            os.close(handle)
            argv = ["/usr/bin/time", "-f", "%M", "-o", report] + argv
        started = time.monotonic()
        process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                                   env=env, start_new_session=True)
        try:
            out, err = process.communicate(timeout=CAP)
        except subprocess.TimeoutExpired:
            self.killed = True
            os.killpg(process.pid, signal.SIGKILL)  # the group this run's own process leads (time and mirror)
            out, err = process.communicate()
        self.seconds = time.monotonic() - started
        self.code = process.returncode
        self.stdout = out.decode("utf-8", "replace")
        self.stderr_bytes = len(err)
        self.stderr = err.decode("utf-8", "replace")
        if report is not None:
            words = Path(report).read_text().split()
            os.unlink(report)
            if "signal" in words:  # GNU time: "Command terminated by signal N", then the figures
                self.code = -int(words[words.index("signal") + 1])
            if words and words[-1].isdigit():
                self.rss_mb = int(words[-1]) / 1024
        self.summary = None
        for line in reversed(self.stdout.splitlines()):
            if line.startswith("{"):
                try:
                    self.summary = json.loads(line)
                    break
                except ValueError:
                    pass

    @property
    def ended(self):
        if self.killed:
            return f"killed after {CAP} s"
        if self.code is not None and self.code < 0:
            return f"signal {-self.code} ({signal.Signals(-self.code).name})"
        return f"exit {self.code}"

    @property
    def counts(self):
        if self.summary is None:
            return "no --json summary"
        failures = ", ".join(f"{key} {value}" for key, value in sorted((self.summary.get("failures") or {}).items()))
        text = f"{self.summary.get('saved')} saved, {self.summary.get('failed')} failed"
        if failures:
            text += f" ({failures})"
        if self.summary.get("invalidRows"):
            text += f", {self.summary['invalidRows']} bad rows"
        return text

    @property
    def first_line(self):
        lines = [line for line in self.stderr.splitlines() if line.strip()]
        return cut(lines[0]) if lines else "(none)"

    @property
    def last_stdout_line(self):
        lines = [line for line in self.stdout.splitlines() if line.strip()]
        return cut(lines[-1]) if lines else "(none)"

    @property
    def last_line(self):
        lines = [line for line in self.stderr.splitlines() if line.strip()]
        return cut(lines[-1]) if lines else "(none)"


def cut(text, limit=160):
    text = text.replace("\n", " ")
    return text if len(text) <= limit else text[:limit] + "…"


def quoted(text):
    """Text for a Markdown cell: pipes escaped, in code quotes that its own backticks cannot end."""
    text = text.replace("|", "\\|").replace("`", "'")
    return f"`{text}`"


def manifest(out):
    path = Path(out) / "manifest.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8", errors="replace").splitlines() if line.strip()]


def attempts(out):
    """{url: (reason, transient)} from the state database's failed attempts, as far as it can be read."""
    path = Path(out) / ".mirror" / "state.sqlite"
    if not path.exists():
        return {}
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
            return {url: (reason, bool(transient)) for url, reason, transient in
                    db.execute("select url, reason, transient from attempts")}
    except sqlite3.Error:
        return {}


def fate(out, url):
    """How a URL ended in a folder output: saved (its file), failed (why, transient or permanent) or no record."""
    for record in manifest(out):
        if record.get("url") == url:
            return f"saved ({record.get('file_name')})"
    failed = attempts(out).get(url)
    if failed:
        return f"failed: {failed[0]} ({'transient' if failed[1] else 'permanent'})"
    return "no record"


# ---------------------------------------------------------------- the cases

class Probe:
    def __init__(self, mirror, index, base, server, work):
        self.mirror = mirror
        self.index = index
        self.base = base  # http://127.0.0.1:PORT
        self.server = server
        self.work = work / f"b{index}"
        self.work.mkdir(parents=True)
        self.env = environment(work, index)

    def tag(self, case):
        return f"c{case}-{self.index}"

    def url(self, case, name):
        return f"{self.base}/{self.tag(case)}/{name}"

    def urls(self, table, out, *options, rss=False):
        return Run([self.mirror, "urls", str(table), "--out", str(out), *options], self.env, rss=rss)

    def case1(self):
        table = self.work / "c1.txt"
        bad, good = self.url(1, "bad.png"), self.url(1, "good.png")
        table.write_text(f"{bad}\n{good}\n")
        out = self.work / "c1-out"
        run = self.urls(table, out, "--concurrency", "1", "--retries", "0", "--json")
        asked = len(self.server.requests(f"/{self.tag(1)}/good.png".encode()))
        return [run.ended, run.counts, f"good.png: {fate(out, good)}, requested {asked}×", f"bad.png: {fate(out, bad)}",
                f"stderr: {quoted(run.last_line)}"]

    def case2(self):
        table = self.work / "c2.csv"
        rows = [self.url(2, f"{n}.png") for n in range(6)]
        table.write_bytes(b"url,caption\n" + b"".join(f"{url},".encode() + b'"caf\xe9 au lait ' + str(n).encode() + b'"\n'
                                                      for n, url in enumerate(rows)))
        out = self.work / "c2-out"
        run = self.urls(table, out, "--concurrency", "1", "--retries", "0", "--json")
        records = manifest(out)
        matching = [record for record in records if record.get("url") in rows
                    and record.get("key") == f"{rows.index(record['url']):09d}"]
        wrong = [f"row {rows.index(record['url'])} → key {record.get('key')}" for record in records
                 if record.get("url") in rows and record not in matching]
        captions = sorted({record.get("caption") for record in records}, key=str)
        fact = f"keys match rows: {len(matching)}/{len(records)} saved"
        if wrong:
            fact += " (" + ", ".join(wrong) + ")"
        return [run.ended, run.counts, fact, f"captions e.g. {quoted(repr(captions[0]) if captions else 'none')}",
                f"stderr: {quoted(run.last_line)}"]

    def case3(self):
        table = self.work / "c3.csv"
        text = f"url,caption\n{self.url(3, '0.png')},\"never closed\n"
        text += "".join(f"{self.url(3, f'{n}.png')},row {n}\n" for n in range(1, 301))
        table.write_text(text)
        out = self.work / "c3-out"
        run = self.urls(table, out, "--json")
        return [run.ended, run.counts, f"{len(manifest(out))} in manifest", f"stderr: {quoted(run.last_line)}"]

    def case4(self):
        table = self.work / "c4.txt.gz"
        with gzip.open(table, "wb", compresslevel=6) as handle:
            handle.write("".join(f"{self.url(4, f'{n}.png')}\n" for n in range(5)).encode())
            block = b"a" * (1 << 20)
            for _ in range(100):
                handle.write(block)
            handle.write(b"\n" + "".join(f"{self.url(4, f'{n}.png')}\n" for n in range(5, 10)).encode())
        out = self.work / "c4-out"
        run = self.urls(table, out, "--json", rss=True)
        table.unlink()
        peak = f"peak RSS {run.rss_mb:.0f} MB" if run.rss_mb is not None else "peak RSS unknown"
        return [run.ended, run.counts, peak, f"{run.seconds:.1f} s", f"stderr: {quoted(run.last_line)}"]

    def case5(self):
        table = self.work / "c5.txt"
        url = self.url(5, "drip.png")
        table.write_text(url + "\n")
        out = self.work / "c5-out"
        run = self.urls(table, out, "--max-bytes", "64KB", "--retries", "0", "--json")
        with self.server.lock:
            sent = self.server.drip_sent.get(f"/{self.tag(5)}/drip.png")
        how = "killed" if run.killed else fate(out, url)
        return [run.ended, run.counts, f"drip: {how}", f"wall {run.seconds:.1f} s",
                f"server sent {sent if sent is not None else '?'} of {len(DRIP_PNG)} B", f"stderr: {quoted(run.last_line)}"]

    def case6(self):
        table = self.work / "c6.txt"
        table.write_bytes(f"{self.base}/{self.tag(6)}/caf".encode() + b"\xe9.png\n")
        out = self.work / "c6-out"
        run = self.urls(table, out, "--retries", "0", "--json")
        got = [target.decode("ascii", "backslashreplace") for target in self.server.requests(f"/{self.tag(6)}/".encode())]
        return [run.ended, run.counts, "server got " + (", ".join(quoted(path) for path in got) or "no request"),
                f"stderr: {quoted(run.last_line)}"]

    def case7(self):
        table = self.work / "c7.txt"
        table.write_text("".join(f"{self.url(7, f'{n}.png')}\n" for n in range(4)))
        out = self.work / "c7-out"
        prefix = f"/{self.tag(7)}/".encode()
        first = self.urls(table, out, "--format", "webdataset", "--json")
        names = sorted(path.name for path in out.iterdir() if not path.name.startswith("."))
        before = len(self.server.requests(prefix))
        (out / "00000_stats.json").write_bytes(b"garbage")
        second = self.urls(table, out, "--format", "webdataset", "--json")
        again = len(self.server.requests(prefix)) - before
        status = Run([self.mirror, "status", str(out)], self.env)
        return [f"first {first.ended} ({' '.join(names)})",
                f"second {second.ended}, {second.counts}, {again} requests again",
                f"second's stderr: {quoted(second.last_line)}",
                f"status {status.ended}, stderr {quoted(status.last_line)}, stdout ends {quoted(status.last_stdout_line)}"]

    def case8a(self):
        table = self.work / "c8a.txt"
        table.write_text(f"{self.base}/{'a' * 5_000_000}\n")
        run = self.urls(table, self.work / "c8a-out", "--retries", "0", "--json")
        first = next((line for line in run.stderr.splitlines() if line.strip()), "(none)")
        if len(first) > 160:  # its head and its end, where the reason is
            first = f"{first[:60]}…({len(first) - 150:,} chars)…{first[-90:]}"
        return [run.ended, run.counts, f"stderr {run.stderr_bytes:,} B", f"first line: {quoted(first)}",
                f"last: {quoted(run.last_line)}"]

    def case8b(self):
        real = self.work / "c8b-real"
        real.mkdir()
        link = self.work / "c8b-link"
        link.symlink_to(real)
        table = self.work / "c8b.txt"
        table.write_text(self.url(8, "linked.png") + "\n")
        run = self.urls(table, link, "--retries", "0", "--json")
        landed = sorted(path.name for path in real.iterdir() if path.name.endswith(".png"))
        still_link = link.is_symlink()
        return [run.ended, run.counts, f"in the real folder: {', '.join(landed) or 'no image'}",
                "--out still a link" if still_link else "--out no longer a link", f"stderr: {quoted(run.last_line)}"]

    def case8c(self):
        out = self.work / "c8c-out"
        run = Run([self.mirror, "search", "kittens", "--count", "3", "--out", str(out), "--name", "{title}",
                   "--provider", "openverse", "--endpoint", f"{self.base}/{self.tag(8)}/search", "--api-retries", "0"],
                  self.env)
        asked = len(self.server.requests(f"/{self.tag(8)}/search".encode()))
        return [run.ended, f"{asked} search requests", "folder made" if out.exists() else "no folder made",
                f"stderr's first line: {quoted(run.first_line)}", f"last: {quoted(run.last_line)}"]

    def case8d(self):
        table = self.work / "c8d.jsonl"
        deep = '{"url":"%s","x":%s%s}' % (self.url(8, "deep.png"), "[" * 600, "]" * 600)
        table.write_text(deep + "\n" + json.dumps({"url": self.url(8, "after-deep.png")}) + "\n")
        run = self.urls(table, self.work / "c8d-out", "--input-format", "jsonl", "--retries", "0", "--json")
        lines = [line for line in run.stderr.splitlines() if "line 1" in line or "JSON" in line or "json" in line]
        message = cut(lines[0]) if lines else "(no line about it)"
        return [run.ended, run.counts, f"message: {quoted(message)}", f"last: {quoted(run.last_line)}"]


CASES = [
    ("1 bytes past Content-Length", "case1",
     "`/bad.png` (16×16 PNG + 700 garbage bytes, Content-Length = the PNG's, kept alive), then `/good.png`; "
     "`--concurrency 1 --retries 0`"),
    ("2 cp1252 byte in quoted CSV fields", "case2",
     "CSV `url,caption`, 6 distinct PNG rows, captions `\"caf\\xe9 au lait N\"` (byte 0xE9); `--concurrency 1`"),
    ("3 quote left open on line 2", "case3",
     "CSV: line 2 `URL,\"never closed`, then 300 good rows"),
    ("4 one 100 MB line in a gzip table", "case4",
     "`.txt.gz`: 5 good URLs, one line of 100 MiB of `a`, 5 good URLs; under `/usr/bin/time -f %M`"),
    ("5 drip at 1,500 B/s", "case5",
     f"`/drip.png`: {len(DRIP_PNG):,} B PNG of random pixels at {DRIP_RATE:,} B/s; `--max-bytes 64KB --retries 0`, "
     "no `--timeout`"),
    ("6 raw byte 0xE9 in a URL path", "case6",
     "table line `http://127.0.0.1:PORT/caf\\xe9.png`; served only at `/caf%E9.png`"),
    ("7 garbage `00000_stats.json`", "case7",
     "`--format webdataset`, 4 good rows; then `00000_stats.json` := `garbage`; run again; `mirror status DIR`"),
    ("8a a 5,000,000-byte URL", "case8a", "one row `http://127.0.0.1:PORT/` + 5,000,000 × `a`"),
    ("8b `--out` a symlink", "case8b", "`--out LINK`, LINK → an existing empty folder; one good row"),
    ("8c `--name '{title}'`", "case8c",
     "`mirror search kittens --count 3 --name '{title}' --provider openverse --endpoint` (loopback, 404)"),
    ("8d JSONL nested 600 deep", "case8d",
     "`--input-format jsonl`: `{\"url\":…,\"x\":[[[…600…]]]}`, then a good line"),
]


def main():
    parser = argparse.ArgumentParser(description="issue 43's hostile wire and table probes")
    parser.add_argument("mirror", nargs="+", help="one binary, or two: BEFORE AFTER")
    parser.add_argument("--cases", help="comma-separated case names to run (case1,…,case8d); default all")
    parser.add_argument("--keep", action="store_true", help="keep the work folder (tables, outputs) for a look")
    arguments = parser.parse_args()
    if len(arguments.mirror) > 2:
        parser.error("one binary, or two (BEFORE AFTER)")
    for mirror in arguments.mirror:
        if not os.access(mirror, os.X_OK):
            parser.error(f"{mirror} is not an executable")
    started = time.monotonic()
    work = Path(tempfile.mkdtemp(prefix="mirror-hostile-wire-"))
    server = Server(free_port())
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    probes = [Probe(mirror, index, base, server, work) for index, mirror in enumerate(arguments.mirror)]
    cases = [case for case in CASES if not arguments.cases or case[1] in arguments.cases.split(",")]
    labels = ["BEFORE", "AFTER"] if len(probes) == 2 else ["outcome"]

    results = {}
    # The drips take the longest (up to 40 s each, or the cap): each binary's runs beside the other cases.
    with concurrent.futures.ThreadPoolExecutor(max_workers=len(probes)) as pool:
        drips = {index: pool.submit(probe.case5) for index, probe in enumerate(probes)} \
            if any(case[1] == "case5" for case in cases) else {}
        for _, method, _ in cases:
            if method == "case5":
                continue
            for index, probe in enumerate(probes):
                try:
                    results[(method, index)] = getattr(probe, method)()
                except Exception as error:  # noqa: BLE001 — a probe that breaks is a row that says so
                    results[(method, index)] = [f"probe failed: {type(error).__name__}: {cut(str(error))}"]
                print(f"hostile-wire: {method} on {labels[index]}: {results[(method, index)][0]}", file=sys.stderr, flush=True)
        for index, future in drips.items():
            try:
                results[("case5", index)] = future.result()
            except Exception as error:  # noqa: BLE001
                results[("case5", index)] = [f"probe failed: {type(error).__name__}: {cut(str(error))}"]

    for label, mirror in zip(labels, arguments.mirror):
        print(f"- {label}: `{mirror}`")
    print(f"- loopback server {base} (http.server, HTTP/1.1 keep-alive); each mirror run capped at {CAP} s")
    print()
    print("| case | what was sent | " + " | ".join(labels) + " |")
    print("|---|---|" + "---|" * len(labels))
    for title, method, sent in cases:
        cells = [" · ".join(results[(method, index)]) for index in range(len(probes))]
        print(f"| {title} | {sent} | " + " | ".join(cells) + " |")
    print()
    print(f"({time.monotonic() - started:.0f} s in all" + (f"; work folder {work})" if arguments.keep else ")"))
    server.shutdown()
    if not arguments.keep:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
