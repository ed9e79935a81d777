"""The python3 half of scripts/check/slurm-check (standard library only): makes the corpus and the table, and checks shards.

    slurm_check.py port                                # prints a free TCP port on loopback
    slurm_check.py wait PORT HOSTS                     # waits (10 s at most) until PORT listens on every host
    slurm_check.py corpus DIR COUNT                    # COUNT distinct small PNGs (32x32 noise, ~3 KB) into DIR
    slurm_check.py table CSV COUNT MISSING PORT HOSTS  # a COUNT-row CSV over HOSTS (comma-separated), MISSING of them 404
    slurm_check.py check OUT CSV SHARD_SIZE            # one output folder: every row once, every shard complete, sums
    slurm_check.py compare A B                         # two output folders hold the same rows, statuses and members

Exits 1 with one line per problem on any mismatch; prints a one-line JSON summary on success.
"""
import csv
import json
import os
import random
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))  # scripts/lib: mirrorscripts
from mirrorscripts import Checks, free_port, png, tar_members, wait_for_port

# Members of a WebDataset sample that are not the image: the record and the caption.
SIDE_FILES = (".json", ".txt")


def corpus(directory, count):
    os.makedirs(directory, exist_ok=True)
    for number in range(count):
        # Seeded noise: every image distinct (so no row is a duplicate of another), and the same on every run.
        pixels = random.Random(number).randbytes(32 * 32 * 3)
        with open(os.path.join(directory, f"i{number:06d}.png"), "wb") as f:
            f.write(png(32, 32, pixels))


def table(path, count, missing, port, hosts):
    """Rows spread round-robin over the hosts; every (count // missing)-th row names a file that does not exist."""
    hosts = hosts.split(",")
    step = count // missing if missing else count + 1
    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["url", "caption"])
        for row in range(count):
            host = hosts[row % len(hosts)]
            name = f"missing/i{row:06d}.png" if missing and row % step == step // 2 else f"img/i{row:06d}.png"
            writer.writerow([f"http://{host}:{port}/{name}", f"row {row}"])


def expected_rows(csv_path):
    with open(csv_path, newline="") as f:
        return [row["url"] for row in csv.DictReader(f)]


def read_folder(out):
    """{shard: (jsonl records, stats, tar member names)} for every shard file in `out`."""
    shards = {}
    for name in sorted(os.listdir(out)):
        if name.endswith("_stats.json"):
            number = int(name[:-len("_stats.json")])
            with open(os.path.join(out, name)) as f:
                stats = json.load(f)
            records = []
            jsonl = os.path.join(out, f"{number:05d}.jsonl")
            if os.path.exists(jsonl):
                with open(jsonl) as f:
                    records = [json.loads(line) for line in f if line.strip()]
            members = None
            tar = os.path.join(out, f"{number:05d}.tar")
            if os.path.exists(tar):
                members = [member for member, data in tar_members(tar) if data is not None]
            shards[number] = (records, stats, members)
    return shards


def is_image(member):
    return not member.endswith(SIDE_FILES)


def check(checks, out, csv_path, shard_size):
    """One output folder against its table: reports what is wrong with checks.fail; returns a summary."""
    urls = expected_rows(csv_path)
    total = len(urls)
    expected_shards = set(range((total + shard_size - 1) // shard_size))
    shards = read_folder(out)
    if set(shards) != expected_shards:
        checks.fail(f"stats files for shards {sorted(shards)}, expected {sorted(expected_shards)}")
    seen = {}
    image_keys = {}
    sums = {}
    for number, (records, stats, members) in sorted(shards.items()):
        if members is None:
            checks.fail(f"shard {number}: no {number:05d}.tar")
            members = []
        if not os.path.exists(os.path.join(out, f"{number:05d}.jsonl")):
            checks.fail(f"shard {number}: no {number:05d}.jsonl")
        if stats.get("shard") != number:
            checks.fail(f"shard {number}: stats say shard {stats.get('shard')}")
        for field, value in stats.items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                sums[field] = sums.get(field, 0) + value
        # With --shard-by row, shard k is written by copy k % N (the stats name the copy when the run was sharded).
        if "copies" in stats and stats.get("split", "row") == "row" and stats.get("copy") != number % stats["copies"]:
            checks.fail(f"shard {number}: written by copy {stats.get('copy')} of {stats['copies']}, "
                        f"expected {number % stats['copies']}")
        rows = range(number * shard_size, min(total, number * shard_size + shard_size))
        if stats.get("rows") != len(rows):
            checks.fail(f"shard {number}: stats rows {stats.get('rows')}, expected {len(rows)}")
        for record in records:
            key = record.get("key")
            if key in seen:
                checks.fail(f"row {key} recorded twice (shards {seen[key]} and {number})")
            seen[key] = number
            if not (key or "").isdigit() or int(key) not in rows:
                checks.fail(f"shard {number}: row key {key!r} outside rows {rows.start}-{rows.stop - 1}")
            elif record.get("url") != urls[int(key)]:
                checks.fail(f"row {key}: url {record.get('url')!r}, table has {urls[int(key)]!r}")
        images = [m for m in members if is_image(m)]
        if stats.get("saved") != len(images):
            checks.fail(f"shard {number}: stats saved {stats.get('saved')}, tar holds {len(images)} images")
        for member in images:
            key = member.split(".", 1)[0]
            if key in image_keys:
                checks.fail(f"image key {key} twice (shards {image_keys[key]} and {number})")
            image_keys[key] = number
        successes = {r["key"] for r in records if r.get("status") == "success"}
        if successes != {m.split(".", 1)[0] for m in images}:
            checks.fail(f"shard {number}: the .jsonl's successes and the tar's images differ")
    missing_keys = {f"{row:09d}" for row in range(total)} - set(seen)
    if missing_keys:
        checks.fail(f"{len(missing_keys)} rows in no .jsonl, e.g. {sorted(missing_keys)[:5]}")
    if sums.get("rows") != total:
        checks.fail(f"stats rows sum to {sums.get('rows')}, the table has {total}")
    if sums.get("saved") != len(image_keys):
        checks.fail(f"stats saved sum to {sums.get('saved')}, the tars hold {len(image_keys)} images")
    statuses = {}
    for number, (records, _, _) in shards.items():
        for record in records:
            statuses[record.get("key")] = record.get("status")
    broken = [row for row, url in enumerate(urls) if "/missing/" in url]
    for row in broken:
        if statuses.get(f"{row:09d}") != "failed":
            checks.fail(f"row {row:09d} (a 404) has status {statuses.get(f'{row:09d}')!r}, expected failed")
    unexpected = sorted(k for k, s in statuses.items() if s != "success" and int(k) not in set(broken))
    if unexpected:
        checks.fail(f"{len(unexpected)} rows that should have been saved were not, e.g. "
                    + ", ".join(f"{k}={statuses[k]}" for k in unexpected[:5]))
    started = [s["started"] for _, s, _ in shards.values() if "started" in s]
    finished = [s["finished"] for _, s, _ in shards.values() if "finished" in s]
    summary = {"shards": len(shards), "rows": sums.get("rows"), "saved": sums.get("saved"),
               "failed": sums.get("failed"), "bytes": sums.get("bytes"), "404_rows": len(broken),
               "first_started": min(started) if started else None, "last_finished": max(finished) if finished else None}
    return summary


def compare(checks, a, b):
    """Two output folders hold the same rows, statuses, shard files and members: reports differences with
    checks.fail; returns a summary."""
    left, right = read_folder(a), read_folder(b)
    rows_a = {(r.get("key"), r.get("status")) for records, _, _ in left.values() for r in records}
    rows_b = {(r.get("key"), r.get("status")) for records, _, _ in right.values() for r in records}
    if rows_a != rows_b:
        diff = sorted(rows_a ^ rows_b)[:5]
        checks.fail(f"(key, status) rows differ: {len(rows_a - rows_b)} only in {a}, "
                    f"{len(rows_b - rows_a)} only in {b}, e.g. {diff}")
    if set(left) != set(right):
        checks.fail(f"shard files differ: {sorted(left)} vs {sorted(right)}")
    for number in sorted(set(left) & set(right)):
        if left[number][2] != right[number][2]:
            checks.fail(f"shard {number}: tar member names differ")
        for field in ("rows", "saved", "failed", "invalidRows", "duplicates"):
            if left[number][1].get(field) != right[number][1].get(field):
                checks.fail(f"shard {number}: stats {field} {left[number][1].get(field)} vs "
                            f"{right[number][1].get(field)}")
    return {"rows": len(rows_a), "shards": len(left)}


def main(argv):
    if len(argv) < 2:
        raise SystemExit(__doc__)
    command, args = argv[1], argv[2:]
    if command == "port":
        print(free_port())
        return 0
    if command == "wait":
        for host in args[1].split(","):
            try:
                wait_for_port(int(args[0]), host=host, timeout=10)
            except RuntimeError as error:
                raise SystemExit(f"slurm-check: {error}")
        return 0
    if command == "corpus":
        corpus(args[0], int(args[1]))
        return 0
    if command == "table":
        table(args[0], int(args[1]), int(args[2]), int(args[3]), args[4])
        return 0
    checks = Checks(f"slurm-check: {command}", verbose=False, limit=50)
    if command == "check":
        summary = check(checks, args[0], args[1], int(args[2]))
    elif command == "compare":
        summary = compare(checks, args[0], args[1])
    else:
        raise SystemExit(__doc__)
    status = checks.summary()
    print(json.dumps(summary))
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv))
