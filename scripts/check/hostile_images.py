"""scripts/check/hostile-images' worker: see that script for what it measures."""
import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from PIL import Image

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))  # scripts/lib: mirrorscripts
from mirrorscripts import tar_members

MODES = {
    "center-crop": ["--resize", "center-crop", "--size", "224"],
    "keep-ratio": ["--resize", "keep-ratio", "--size", "256"],
    "none": [],
}


def run(mirror, table, out, options, timeout=600):
    """Runs mirror once under /usr/bin/time (a fresh small process: Linux keeps a process's peak RSS across exec, so
    mirror started straight from this one, which holds decoded images, would report this one's); returns (how it
    ended, peak RSS in MB, seconds)."""
    started = time.monotonic()
    report = Path(out).with_suffix(".time")
    process = subprocess.Popen(["/usr/bin/time", "-f", "%M %x", "-o", str(report), mirror, "urls", str(table), "--out", str(out),
                                "--format", "webdataset", "--quiet"] + options,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env={**os.environ, "SWIFT_BACKTRACE": "enable=no"})
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        return "hung (killed)", 0, time.monotonic() - started
    seconds = time.monotonic() - started
    words = report.read_text().split()
    # GNU time writes "Command terminated by signal N" first when the command died of a signal.
    if "signal" in words:
        number = int(words[words.index("signal") + 1])
        return f"signal {number} ({signal.Signals(number).name})", int(words[-2]) // 1024, seconds
    return f"exit {words[-1]}", int(words[-2]) // 1024, seconds


def records(out):
    found = {}
    for path in sorted(Path(out).glob("[0-9]*.jsonl")):
        for line in path.read_text().splitlines():
            record = json.loads(line)
            found[record["url"]] = record
    return found


def pillow_mean(source):
    """The mean of the picture as Pillow shows it (RGB), or why Pillow will not show it."""
    try:
        with Image.open(source) as image:
            image = image.convert("RGB")
            pixels = image.resize((64, 64)).getdata() if image.width * image.height > 4096 else image.getdata()
            values = [value for pixel in pixels for value in pixel]
            return f"{sum(values) / len(values):.0f}"
    except Exception as error:  # noqa: BLE001 — Pillow's refusals are what is reported
        return f"refuses: {type(error).__name__}"


def outcome(record, out):
    if record is None:
        return "no record", None
    if record["status"] != "success":
        return f"{record['status']} {record.get('reason') or ''}".strip(), None
    for member, data in tar_members(next(Path(out).glob("[0-9]*.tar"))):
        if member.startswith(record["key"] + ".") and not member.endswith((".json", ".txt")):
            path = Path(out) / ("saved-" + member)
            path.write_bytes(data)
            try:
                with Image.open(path) as image:
                    return f"saved {image.width}×{image.height}", pillow_mean(path)
            except Exception as error:  # noqa: BLE001 — Pillow's refusal is the finding
                return f"saved (Pillow refuses it: {type(error).__name__})", None
    return "saved", None


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--server", required=True)
    parser.add_argument("--mirror", action="append", required=True)
    parser.add_argument("--modes", default="center-crop,keep-ratio,none")
    arguments = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="mirror-hostile-"))
    subprocess.run([arguments.server, "--write-hostile-images", str(work / "files")], check=True)
    server = subprocess.Popen([arguments.server, str(work / "files")], stdout=subprocess.PIPE, stdin=subprocess.PIPE, text=True)
    port = None
    for line in server.stdout:
        if line.startswith("PORT="):
            port = int(line.strip().split("=")[1])
            break
    base = f"http://127.0.0.1:{port}"
    crafted = sorted((work / "files/crafted").iterdir(), key=lambda path: path.name)
    expected = {line.split("\t")[0]: line.split("\t")[1:] for line in (work / "files/expected.tsv").read_text().splitlines()}
    ordinary = sorted((work / "files/ordinary").iterdir())
    modes = arguments.modes.split(",")
    try:
        print("| file | mode | binary | ended | peak RSS | crafted row | Pillow's mean of the file / of what was saved |")
        print("|---|---|---|---|---:|---|---|")
        for file in [path for path in crafted]:
            for mode in modes:
                for index, mirror in enumerate(arguments.mirror):
                    out = work / f"out-{file.name}-{mode}-{index}"
                    table = work / "table.txt"
                    table.write_text(f"{base}/ordinary/photo.jpg\n{base}/crafted/{file.name}\n")
                    ended, peak, _ = run(mirror, table, out, MODES[mode])
                    row, saved_mean = outcome(records(out).get(f"{base}/crafted/{file.name}"), out)
                    means = f"{pillow_mean(file)} / {saved_mean}" if saved_mean else ""
                    label = Path(mirror).parent.parent.name if len(arguments.mirror) > 1 else ""
                    print(f"| {file.name} | {mode} | {label or index} | {ended} | {peak} MB | {row} | {means} |", flush=True)
        print()
        print("| all at once (22 crafted, 6 ordinary) | mode | binary | ended | peak RSS | ordinary saved | crafted rows as expected |")
        print("|---|---|---|---|---:|---|---|")
        for mode in modes:
            for index, mirror in enumerate(arguments.mirror):
                out = work / f"out-all-{mode}-{index}"
                table = work / "all.txt"
                table.write_text("".join(f"{base}/ordinary/{path.name}\n" for path in ordinary)
                                 + "".join(f"{base}/crafted/{path.name}\n" for path in crafted))
                ended, peak, seconds = run(mirror, table, out, MODES[mode])
                found = records(out)
                saved = sum(1 for path in ordinary if (found.get(f"{base}/ordinary/{path.name}") or {}).get("status") == "success")
                column = 0 if mode != "none" else 1
                matching = 0
                for path in crafted:
                    record = found.get(f"{base}/crafted/{path.name}") or {}
                    want = expected[path.name][column]
                    got = "-" if record.get("status") == "success" else record.get("reason")
                    matching += got == want
                label = Path(mirror).parent.parent.name if len(arguments.mirror) > 1 else ""
                print(f"| all | {mode} | {label or index} | {ended} ({seconds:.1f} s) | {peak} MB | {saved}/{len(ordinary)} | {matching}/{len(crafted)} |", flush=True)
    finally:
        server.terminate()


if __name__ == "__main__":
    main()
