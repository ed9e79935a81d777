"""Checks `mirror urls --out s3://BUCKET/PREFIX` against a real S3 server that checks every signature.

Run by scripts/check/check-s3 (which makes the virtualenv with moto[server] and boto3, and builds mirror):

    python scripts/check/check_s3.py MIRROR_BINARY

Everything is local. moto_server runs on a free loopback port with INITIAL_NO_AUTH_ACTION_COUNT=6: the first six
calls (unchecked) create an IAM user, its access key, an inline policy allowing s3:* (and sts:AssumeRole), a role the
user may assume with its own s3:* policy (for the session-token check), and the bucket; every call after that is
signature-checked, which the script proves before it starts (a wrong secret gets 403
SignatureDoesNotMatch). The images — distinct PNGs made with the standard library (mirrorscripts.png), a fifth of
them about 1 MB so that a 40-row shard passes 5 MiB and goes up in parts — and a few missing ones are served by
Python's http.server, in a process of its own (mirrorscripts.serve_files: it logs every request, and answers 503
for the paths a file lists while that file exists, a host that is down and then recovers). moto does not compare x-amz-content-sha256 with the body (real S3
does), and is laxer than S3 about the form of the signed path and query; two runs go through a small proxy here that
checks both.

Checks (each failure is printed with the command, its exit code and its stderr, and the script goes on to the next
check; it exits 1 if any failed):
  a. shards to s3://BUCKET/ds: every tar, jsonl and stats object, read back with boto3; image bytes equal the served
     files (sha256); rows equal the table's; exit 3 with the 404s counted as http-404; big tars went up in parts
  b. the same table into a local folder: the same tars, member by member (records compared without fetched_at)
  c. a wrong secret, a wrong key id and missing variables: exit 4, one stderr line naming the variable, nothing written
  d. a missing bucket: one line naming it, exit 1 or 4, nothing like a crash report; an unreachable endpoint: exit 5
  e. two stale uploads and an orphan tar under a prefix, then SIGKILL while a multipart upload is in progress (and
     in two more series: once a part is stored; between a shard's tar and its stats), each followed by a rerun: no
     upload left, every shard whole, every row once
  f. a rerun of a complete prefix writes nothing (ETag and LastModified, and moto's request log), and exits as a
     rerun of a complete folder does
  g. temporary credentials (AWS_SESSION_TOKEN from STS AssumeRole; moto's S3 does not know GetSessionToken's keys),
     with the default --state-dir
  h. through a checking proxy: every signed payload hash matches its body (moto does not check), and every request's
     path and query are sent in SigV4 canonical form (curl signs them as sent; real S3 recomputes that form), for a
     plain prefix and for a nested one with a space, + ( ) ~ and ü
  i. a nested prefix with a space and non-ASCII letters, and its rerun (writes nothing; exits 3, the 404 rows missing)
  j. no secret in the files mirror left on disk (state folders, the default one under the XDG cache)
  k. --retry-failed into S3: a table of its own (5 shards of 20 rows) whose host answers 503 for a fifth of the rows,
     all in shards 1 and 3, and 404 for 5 %; the first run (--retries 0) exits 5 with every record's reason and
     transient and every stats' transient count; mirror status shows the transient and permanent lines and exits 3;
     a rerun without the flag exits 3 with missingTransient and missingPermanent, requests no image and writes
     nothing; once the host recovers, --retry-failed exits 3 (the 404s remain), requests each 503 row once and no
     404 row, rewrites shards 1 and 3 whole (tar, jsonl, stats last; shard 1's tar, past 5 MiB, in parts) and leaves
     the others' three objects as they were (ETag and LastModified); each tar read back (tarfile, and webdataset if
     the virtualenv has it) holds each row once, in row order; then --retry-failed all requests the 404 rows again
     and writes nothing
  l. stats objects not to be trusted ({} in one, counts that do not add up in another): mirror status names both and
     counts their shards incomplete; the rerun says so, deletes each shard's objects (its stats object first), writes
     those two shards again and no other; then every shard reads back whole and mirror status finds them done
  and the throughput of S3 runs (5 MiB parts, and the default part size) against the same runs into a local folder,
  on this table and on a larger one of 500 images (CHECK_S3_THROUGHPUT_IMAGES), beside boto3's own upload of the
  same files to the same moto_server (its ceiling here).
No run may print a secret or the session token. CHECK_S3_ONLY=a,e runs only those sections (and the set-up);
CHECK_S3_REPORT=FILE writes every run and measurement as JSON; CHECK_S3_KEEP=1 keeps the work folder.
"""
import hashlib
import http.client
import http.server
import json
import os
import random
import re
import shutil
import signal
import socketserver
import statistics
import subprocess
import sys
import tempfile
import threading
import time

import boto3
import botocore.config
import botocore.exceptions

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))  # scripts/lib: mirrorscripts
from mirrorscripts import (CheckFailed, Checks, free_port, png, requests_logged, start_file_server, stop,
                           tar_members, wait_for_port)

SHARD = 40
PART = 5 * 1024 * 1024
BUCKET = "mirror-check"
IMAGES = 120
MISSING_AT = (7, 50, 93, 118)  # table positions of the 404 rows
REGION = "us-east-1"

MIRROR = os.path.abspath(sys.argv[1])
runs = []         # every mirror run, for the report
measurements = {}
checks = Checks("check-s3")
# check(condition, message, detail=""): passes, or prints and records the failure and ends its section
check, section = checks.check, checks.section


# ---------------------------------------------------------------- images and table

def make_image(number):
    """Image `number`: every fifth one about 1 MB of noise, the others gradients of varied sizes; all distinct."""
    rng = random.Random(number)
    if number % 5 == 0:
        width, height = 560 + number % 80, 560 + number % 50
        rows = [rng.randbytes(width * 3) for _ in range(height)]
    else:
        width, height = 16 + (number * 37) % 380, 16 + (number * 53) % 300
        pattern = bytes((j * (1 + number % 7) + number) & 255 for j in range(8192))
        rows = [pattern[(y * 3 + number) % 4096:(y * 3 + number) % 4096 + width * 3] for y in range(height)]
    return png(width, height, b"".join(rows), text=f"mirror check-s3 image {number}", level=1)


work = tempfile.mkdtemp(prefix="mirror-check-s3-")
served = os.path.join(work, "served")
os.makedirs(served)
table_rows = []   # (url path, caption, sha256 or None for a 404)
digests = {}
number = 0
for position in range(IMAGES + len(MISSING_AT)):
    if position in MISSING_AT:
        table_rows.append((f"missing-{position}.png", f"missing {position}", None))
        continue
    data = make_image(number)
    name = f"{number}.png"
    with open(os.path.join(served, name), "wb") as handle:
        handle.write(data)
    table_rows.append((name, f'image {number}, "quoted", ünïcode', hashlib.sha256(data).hexdigest()))
    digests[name] = (hashlib.sha256(data).hexdigest(), len(data))
    number += 1
ROWS = len(table_rows)
SAVED = IMAGES
IMAGE_BYTES = sum(size for _, size in digests.values())
SHARDS = (ROWS + SHARD - 1) // SHARD

# The image server (mirrorscripts.serve_files, a process of its own): `/slow/NAME` is NAME after 40 ms (for the kill
# check's retries); while UNAVAILABLE exists, the paths it lists answer 503 (check k); every request is logged.
UNAVAILABLE = os.path.join(work, "unavailable.txt")
IMAGE_LOG = os.path.join(work, "image-requests.log")
image_port = free_port()
image_server = start_file_server(served, image_port, unavailable=UNAVAILABLE, log=IMAGE_LOG)


def write_table(path, url_prefix=""):
    import csv
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["url", "caption"])
        for name, caption, _ in table_rows:
            writer.writerow([f"http://127.0.0.1:{image_port}/{url_prefix}{name}", caption])
    return path


table = write_table(os.path.join(work, "table.csv"))
slow_table = write_table(os.path.join(work, "slow.csv"), "slow/")
urls = [f"http://127.0.0.1:{image_port}/{name}" for name, _, _ in table_rows]
print(f"{ROWS} rows ({IMAGES} images, {IMAGE_BYTES / 1e6:.1f} MB, {len(MISSING_AT)} missing), {SHARDS} shards of {SHARD}")


# ---------------------------------------------------------------- moto with IAM

moto_port = free_port()
moto_log_path = os.path.join(work, "moto.log")
moto_log = open(moto_log_path, "w")
moto = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(moto_port)],
                        stdout=moto_log, stderr=subprocess.STDOUT,
                        env=dict(os.environ, INITIAL_NO_AUTH_ACTION_COUNT="6"))
wait_for_port(moto_port, moto)  # a bare connect: no request, so none of the six unchecked calls is spent
ENDPOINT = f"http://127.0.0.1:{moto_port}"
CONFIG = botocore.config.Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1})


def client(service, key_id, secret, token=None, endpoint=ENDPOINT):
    return boto3.client(service, endpoint_url=endpoint, region_name=REGION, aws_access_key_id=key_id,
                        aws_secret_access_key=secret, aws_session_token=token, config=CONFIG)


def error_code(call):
    try:
        call()
    except botocore.exceptions.ClientError as error:
        return error.response["Error"]["Code"], error.response["ResponseMetadata"]["HTTPStatusCode"]
    return None, 200


bootstrap_iam = client("iam", "bootstrap", "bootstrap")
bootstrap_iam.create_user(UserName="mirror-check")
access_key = bootstrap_iam.create_access_key(UserName="mirror-check")["AccessKey"]
bootstrap_iam.put_user_policy(UserName="mirror-check", PolicyName="s3", PolicyDocument=json.dumps({
    "Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": ["s3:*", "sts:AssumeRole"], "Resource": "*"}],
}))
# moto checks the trust policy against the caller's ARN: the account's root as principal gets AccessDenied
ROLE_ARN = bootstrap_iam.create_role(RoleName="mirror-check-writer", AssumeRolePolicyDocument=json.dumps({
    "Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "sts:AssumeRole",
                                            "Principal": {"AWS": "arn:aws:iam::123456789012:user/mirror-check"}}],
}))["Role"]["Arn"]
bootstrap_iam.put_role_policy(RoleName="mirror-check-writer", PolicyName="s3", PolicyDocument=json.dumps({
    "Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}],
}))
client("s3", "bootstrap", "bootstrap").create_bucket(Bucket=BUCKET)
KEY_ID, SECRET = access_key["AccessKeyId"], access_key["SecretAccessKey"]
WRONG_SECRET = "wrong" + SECRET[5:][::-1]
s3 = client("s3", KEY_ID, SECRET)
secrets = {SECRET, WRONG_SECRET}

print("moto_server with signature checking")
section("setup", lambda: (
    check(error_code(lambda: client("s3", "bootstrap", "bootstrap").list_buckets())[1] == 403,
          "the unchecked calls are spent: the bootstrap key is refused now"),
    check(error_code(lambda: client("s3", KEY_ID, WRONG_SECRET).list_objects_v2(Bucket=BUCKET, Prefix="ds"))
          == ("SignatureDoesNotMatch", 403), "a wrong secret gets 403 SignatureDoesNotMatch"),
    check(s3.list_objects_v2(Bucket=BUCKET, Prefix="ds")["KeyCount"] == 0, "the user's key lists the empty bucket"),
))
if checks.failures:
    sys.exit("check-s3: moto_server does not check signatures as expected; nothing else is meaningful")


# ---------------------------------------------------------------- running mirror

def s3_env(key_id=KEY_ID, secret=SECRET, token=None, endpoint=ENDPOINT, **extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_") and k != "MIRROR_S3_PART_SIZE"}
    env["XDG_CACHE_HOME"] = os.path.join(work, "xdg-cache")
    if key_id is not None:
        env["AWS_ACCESS_KEY_ID"] = key_id
    if secret is not None:
        env["AWS_SECRET_ACCESS_KEY"] = secret
    if token is not None:
        env["AWS_SESSION_TOKEN"] = token
    env["AWS_ENDPOINT_URL"] = endpoint
    env["AWS_REGION"] = REGION
    env.update(extra)
    return env


def state_dir(name):
    path = os.path.join(work, "state", name)
    os.makedirs(path, exist_ok=True)
    return path


def mirror_argv(out, state=None, source=table):
    # --encode keep: these checks compare every image in the shards byte for byte with the PNG served (WebDataset
    # output is JPEG by default; scripts/check/check-datasets judges that).
    argv = [MIRROR, "urls", source, "--out", out, "--format", "webdataset", "--shard-size", str(SHARD),
            "--encode", "keep", "--no-cache", "--quiet", "--json"]
    if state:
        argv += ["--state-dir", state]
    return argv


def shown(argv, env):
    """The command as a shell line, with the variables that matter and every secret replaced."""
    names = ["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL", "MIRROR_S3_PART_SIZE"]
    words = [f"{n}={'<secret>' if 'SECRET' in n or 'TOKEN' in n else env[n]}" for n in names if n in env]
    if env.get("AWS_SECRET_ACCESS_KEY") == WRONG_SECRET:
        words[[w.startswith("AWS_SECRET") for w in words].index(True)] = "AWS_SECRET_ACCESS_KEY=<wrong secret>"
    return " ".join(words + [a.replace(work, "$WORK") for a in argv])


def moto_log_size():
    moto_log.flush()
    return os.path.getsize(moto_log_path)


def moto_requests(start, end=None):
    """moto's request-log lines between two offsets: (method, path, status)."""
    with open(moto_log_path, "rb") as handle:
        handle.seek(start)
        text = handle.read(None if end is None else end - start).decode("utf-8", "replace")
    text = re.sub(r"\x1b\[[0-9;]*m", "", text)  # werkzeug colours some lines (DELETE, errors) even into a file
    return [(m[1], m[2], int(m[3])) for m in re.finditer(r'"([A-Z]+) (\S+) HTTP/[\d.]+" (\d{3})', text)]


def writes(requests, prefix):
    return [r for r in requests if r[0] in ("PUT", "POST", "DELETE") and r[1].startswith(f"/{BUCKET}/{prefix}/")]


def run(label, argv, env):
    """Runs mirror; checks that no secret shows in its output; returns the completed process with .seconds."""
    begin = moto_log_size()
    started = time.monotonic()
    process = subprocess.run(argv, capture_output=True, text=True, env=env)
    process.seconds = time.monotonic() - started
    time.sleep(0.05)
    process.requests = moto_requests(begin)
    record = {"label": label, "command": shown(argv, env), "exit": process.returncode,
              "seconds": round(process.seconds, 2), "stderr": process.stderr.strip()[-2000:]}
    runs.append(record)
    process.command = record["command"]
    print(f"  ran {label}: exit {process.returncode} in {process.seconds:.2f} s", flush=True)
    output = process.stdout + process.stderr
    leaked = [s for s in secrets if s and s in output]
    check(not leaked, f"{label}: no secret or session token in stdout or stderr",
          f"command: {record['command']}\nleaked {len(leaked)} value(s)")
    if KEY_ID in output:
        print(f"  note: {label}: the access key id appears in the output (not a secret, but reported)")
        record["key_id_shown"] = True
    return process


def describe(process):
    return f"command: {getattr(process, 'command', '?')}\nexit {process.returncode}; stderr: {process.stderr.strip()[-1500:]!r}; stdout: {process.stdout.strip()[-500:]!r}"


def summary_of(process):
    """The --json summary a run printed last on stdout ({} if none)."""
    try:
        return json.loads(process.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return {}


def list_prefix(prefix, s3client=None):
    """Objects under PREFIX/ — listed by the prefix's first segment, without a slash: moto up to 5.2.1 at least
    refuses the signature of a query holding %2F (5.2.5 accepts it), and this check should work on either."""
    s3client = s3client or s3
    objects, token = {}, None
    while True:
        kwargs = {"Bucket": BUCKET, "Prefix": prefix.split("/")[0]}
        if token:
            kwargs["ContinuationToken"] = token
        page = s3client.list_objects_v2(**kwargs)
        for item in page.get("Contents", []):
            if item["Key"].startswith(prefix + "/"):
                objects[item["Key"]] = item
        if not page.get("IsTruncated"):
            return objects
        token = page["NextContinuationToken"]


def uploads_under(prefix):
    uploads, marker = [], {}
    while True:
        page = s3.list_multipart_uploads(Bucket=BUCKET, Prefix=prefix.split("/")[0], **marker)
        uploads += [u for u in page.get("Uploads", []) if u["Key"].startswith(prefix + "/")]
        if not page.get("IsTruncated"):
            return uploads
        marker = {"KeyMarker": page["NextKeyMarker"], "UploadIdMarker": page["NextUploadIdMarker"]}


def get(key):
    return s3.get_object(Bucket=BUCKET, Key=key)["Body"].read()


CRASH = re.compile(r"Fatal error|Stack dump|Current stack trace|Swift runtime failure|Illegal instruction|"
                   r"Segmentation fault|\.swift:\d+|Traceback|#\d+ 0x[0-9a-f]+|panic")


# ---------------------------------------------------------------- reading shards

def read_shards(files):
    """files: {name: bytes} of one output (S3 keys without the prefix, or a folder's files).
    Returns {shard number: {"tar": {member: bytes}, "order": [...], "jsonl": [...], "stats": {...}}}."""
    shards = {}
    for name, data in files.items():
        match = re.fullmatch(r"(\d{5})(\.tar|\.jsonl|_stats\.json)", name)
        if not match:
            continue
        shard = shards.setdefault(int(match[1]), {})
        if match[2] == ".tar":
            members = list(tar_members(data))
            shard["order"] = [member for member, _ in members]
            shard["tar"] = {member: content for member, content in members if content is not None}
        elif match[2] == ".jsonl":
            shard["jsonl"] = [json.loads(line) for line in data.decode("utf-8").splitlines() if line.strip()]
        else:
            shard["stats"] = json.loads(data)
    return shards


STATS_KEYS = {"shard", "rows", "saved", "failed", "failures", "invalidRows", "duplicates", "filtered", "optedOut",
              "disallowed", "bytes", "seconds", "started", "finished"}


def check_shards(shards, label, expect_stats_keys=True):
    """The shards hold exactly the table: every row once, every image byte for byte, stats that add up."""
    check(sorted(shards) == list(range(SHARDS)), f"{label}: shards 0…{SHARDS - 1} present", f"found {sorted(shards)}")
    missing = [(n, part) for n, s in shards.items() for part in ("tar", "jsonl", "stats") if part not in s]
    check(not missing, f"{label}: every shard has its .tar, .jsonl and _stats.json", f"missing: {missing}")
    seen_keys, image_members, bad_bytes, bad_rows, bad_stats, key_counts = [], 0, [], [], [], {}
    for number, shard in sorted(shards.items()):
        first = number * SHARD
        expected_rows = list(range(first, min(first + SHARD, ROWS)))
        lines = shard["jsonl"]
        if [line.get("key") for line in lines] != [f"{p:09d}" for p in expected_rows]:
            bad_rows.append(f"shard {number}: keys {[line.get('key') for line in lines][:3]}… for rows {expected_rows[0]}…")
        for line in lines:
            try:
                position = int(line["key"])
                name, caption, digest = table_rows[position]
            except (KeyError, ValueError, IndexError):
                bad_rows.append(f"shard {number}: line {line}")
                continue
            want_status = "success" if digest else "failed"
            if line.get("url") != urls[position] or line.get("status") != want_status:
                bad_rows.append(f"row {position}: status {line.get('status')} url {line.get('url')}")
            seen_keys.append(line["key"])
        members = shard["tar"]
        images = {m: b for m, b in members.items() if m.endswith(".png")}
        image_members += len(images)
        for position in expected_rows:
            key, (name, caption, digest) = f"{position:09d}", table_rows[position]
            if digest is None:
                if any(m.startswith(key + ".") for m in members):
                    bad_bytes.append(f"{key}: a 404 row has members")
                continue
            key_counts[key] = key_counts.get(key, 0) + 1
            image = members.get(f"{key}.png")
            if image is None:
                bad_bytes.append(f"{key}.png missing from shard {number} (members {sorted(members)[:4]}…)")
            elif hashlib.sha256(image).hexdigest() != digest:
                bad_bytes.append(f"{key}.png: {len(image)} bytes, sha256 differs from the served {name}")
            if members.get(f"{key}.txt", b"").decode("utf-8", "replace") != caption:
                bad_bytes.append(f"{key}.txt: {members.get(f'{key}.txt')!r} is not the caption {caption!r}")
            record = json.loads(members.get(f"{key}.json", b"{}") or b"{}")
            if record.get("url") != urls[position] or record.get("key") != key:
                bad_bytes.append(f"{key}.json: url {record.get('url')} key {record.get('key')}")
        extra = [m for m in members if not re.fullmatch(r"\d{9}\.(png|json|txt)", m)]
        if extra:
            bad_bytes.append(f"shard {number}: unexpected members {extra}")
        stats = shard["stats"]
        want = {"shard": number, "rows": len(expected_rows), "saved": len(images),
                "failed": sum(1 for p in expected_rows if table_rows[p][2] is None)}
        got = {k: stats.get(k) for k in want}
        if got != want:
            bad_stats.append(f"shard {number}: {got} != {want}")
        failures_404 = sum(1 for p in expected_rows if table_rows[p][2] is None)
        if failures_404 and stats.get("failures") != {"http-404": failures_404}:
            bad_stats.append(f"shard {number}: failures {stats.get('failures')} (want {{'http-404': {failures_404}}})")
        if expect_stats_keys and not STATS_KEYS <= set(stats):
            bad_stats.append(f"shard {number}: stats lack {sorted(STATS_KEYS - set(stats))}")
    duplicated = sorted(k for k in set(seen_keys) if seen_keys.count(k) > 1)
    check(not duplicated and sorted(seen_keys) == [f"{p:09d}" for p in range(ROWS)],
          f"{label}: the .jsonl files hold every one of the {ROWS} rows exactly once",
          f"duplicated {duplicated[:5]}, missing {sorted(set(f'{p:09d}' for p in range(ROWS)) - set(seen_keys))[:5]}")
    check(not bad_rows, f"{label}: every .jsonl row has its table row's key, url and status", "\n".join(bad_rows[:8]))
    check(not bad_bytes, f"{label}: every image member equals the served file byte for byte (sha256), with its caption and record",
          "\n".join(bad_bytes[:8]))
    check(image_members == SAVED, f"{label}: {image_members} image members across the shards ({SAVED} expected)")
    check(not bad_stats, f"{label}: every stats object counts its shard (rows, saved, failed, failures http-404, all keys)",
          "\n".join(bad_stats[:8]))


def s3_files(prefix):
    return {key[len(prefix) + 1:]: get(key) for key in list_prefix(prefix)}


def folder_files(path):
    return {name: open(os.path.join(path, name), "rb").read() for name in os.listdir(path)
            if os.path.isfile(os.path.join(path, name))}


def snapshot(prefix):
    return {key: (item["ETag"], item["LastModified"], item["Size"]) for key, item in list_prefix(prefix).items()}


# ---------------------------------------------------------------- the checks

state = {}


def check_a():
    env = s3_env(MIRROR_S3_PART_SIZE=str(PART))
    process = run("a: S3 run", mirror_argv(f"s3://{BUCKET}/ds", state_dir("ds")), env)
    state["a"] = process
    check(process.returncode == 3, "a: exits 3 (the 404 rows gave no image)", describe(process))
    objects = list_prefix("ds")
    names = sorted(key[3:] for key in objects)
    expected = sorted(f"{n:05d}{suffix}" for n in range(SHARDS) for suffix in (".tar", ".jsonl", "_stats.json"))
    check(set(expected) <= set(names), f"a: all {len(expected)} shard objects are under ds/",
          f"missing {sorted(set(expected) - set(names))}")
    if set(names) - set(expected):
        print(f"  note: other objects under ds/: {sorted(set(names) - set(expected))}")
    check(not uploads_under("ds"), "a: no multipart upload is left open")
    sizes = json.loads(get("ds/sizes.json")) if "ds/sizes.json" in objects else None
    shards = read_shards(s3_files("ds"))
    counted = {f"{number:05d}.tar": sum(1 for member in shard.get("tar", {}) if member.endswith(".png"))
               for number, shard in shards.items()}
    check(sizes == counted, "a: sizes.json is under ds/ and counts each tar's samples", f"sizes.json {sizes}, tars {counted}")
    state["a_shards"] = shards
    check_shards(shards, "a")
    tars = {k: v for k, v in objects.items() if k.endswith(".tar")}
    big = {k: v["Size"] for k, v in tars.items() if v["Size"] > PART}
    multipart = {k for k, v in tars.items() if "-" in v["ETag"]}
    sizes = [f"{k[3:]} {v['Size'] / 2**20:.2f} MiB ETag {v['ETag']}" for k, v in sorted(tars.items())]
    print(f"  tar sizes: {', '.join(sizes)}")
    check(big, "a: at least one shard tar is bigger than the 5 MiB part size", f"sizes {[v['Size'] for v in tars.values()]}")
    check(set(big) <= multipart, "a: every tar bigger than MIRROR_S3_PART_SIZE went up as a multipart upload (ETag …-N)",
          f"big {sorted(big)}, multipart ETags {sorted(multipart)}")
    posts = [r for r in process.requests if r[0] == "POST" and "uploads" in r[1]]
    check(posts, "a: moto's log shows CreateMultipartUpload calls", f"{len(process.requests)} requests logged")
    stats_last = []
    for number in range(SHARDS):
        order = [i for i, r in enumerate(process.requests) if r[0] in ("PUT", "POST") and f"/ds/{number:05d}" in r[1]]
        if order and f"{number:05d}_stats.json" not in process.requests[order[-1]][1]:
            stats_last.append(f"shard {number}: last write {process.requests[order[-1]][1]}")
    check(not stats_last, "a: each shard's stats object is the last of its writes", "\n".join(stats_last))
    measurements["a_seconds"] = process.seconds
    measurements["requests_a"] = {m: sum(1 for r in process.requests if r[0] == m) for m in ("GET", "HEAD", "PUT", "POST", "DELETE")}


def check_b():
    folder = os.path.join(work, "folder-b")
    env = s3_env()
    process = run("b: local folder run", mirror_argv(folder), env)
    check(process.returncode == 3, "b: the folder run exits 3 too", describe(process))
    local = read_shards(folder_files(folder))
    check_shards(local, "b (folder)")
    remote = state.get("a_shards")
    check(remote is not None, "b: check a's shards are there to compare with")
    differ, fetched_at = [], set()
    for number in sorted(set(local) | set(remote)):
        lt, rt = local.get(number, {}), remote.get(number, {})
        if lt.get("order") != rt.get("order"):
            differ.append(f"shard {number}: member names differ: folder {lt.get('order', [])[:4]}… S3 {rt.get('order', [])[:4]}…")
            continue
        for member, data in lt.get("tar", {}).items():
            if member.endswith(".json") and data != rt["tar"].get(member):
                record = lambda raw: {k: v for k, v in json.loads(raw or b"{}").items() if k != "fetched_at"}
                if record(data) == record(rt["tar"].get(member)):
                    fetched_at.add(member)
                    continue
            if rt["tar"].get(member) != data:
                differ.append(f"shard {number}: member {member} differs ({len(data)} bytes in the folder, "
                              f"{len(rt['tar'].get(member) or b'')} in S3)")
    check(not differ, "b: the folder's tars have the S3 tars' member names, in order, and the same bytes "
          "(images and captions exactly; records but for fetched_at)", "\n".join(differ[:8]))
    if fetched_at:
        print(f"  note: {len(fetched_at)} .json records differ only in fetched_at (the time of each run's download)")
    clean = lambda lines: [{k: v for k, v in line.items() if k != "fetched_at"} for line in lines]
    jsonl_differ = [n for n in local if clean(local[n]["jsonl"]) != clean(remote[n]["jsonl"])]
    if jsonl_differ:
        print(f"  note: the .jsonl of shards {jsonl_differ} differ between folder and S3 (first line: "
              f"{local[jsonl_differ[0]]['jsonl'][0]} vs {remote[jsonl_differ[0]]['jsonl'][0]})")


def assert_clean_refusal(label, process, prefix, want_exit, names):
    lines = [line for line in process.stderr.splitlines() if line.strip()]
    check(process.returncode == want_exit, f"{label}: exits {want_exit}", describe(process))
    check(len(lines) == 1, f"{label}: one line on stderr", describe(process))
    check(any(n in lines[0] for n in names), f"{label}: the line names {' or '.join(names)}: {lines[0]!r}", describe(process))
    check(not CRASH.search(process.stderr + process.stdout), f"{label}: nothing like a crash report", describe(process))
    check(not list_prefix(prefix) and not uploads_under(prefix), f"{label}: no object and no upload under {prefix}/")
    ok_writes = [r for r in writes(process.requests, prefix) if r[2] < 300]
    check(not ok_writes, f"{label}: moto accepted no write under {prefix}/", f"{ok_writes[:5]}")


def check_c():
    process = run("c: wrong secret", mirror_argv(f"s3://{BUCKET}/wrong", state_dir("wrong")), s3_env(secret=WRONG_SECRET))
    state["c_exit"] = process.returncode
    assert_clean_refusal("c (wrong secret)", process, "wrong", 4, ["AWS_SECRET_ACCESS_KEY", "signature", "Signature"])
    refused = [r for r in process.requests if r[2] == 403]
    print(f"  moto answered 403 to {len(refused)} of {len(process.requests)} requests of that run")
    process = run("c: unknown key id", mirror_argv(f"s3://{BUCKET}/wrongid", state_dir("wrongid")),
                  s3_env(key_id="AKIAIOSFODNN7EXAMPLE"))
    assert_clean_refusal("c (unknown key id)", process, "wrongid", 4, ["AWS_ACCESS_KEY_ID"])
    process = run("c: no AWS_ACCESS_KEY_ID", mirror_argv(f"s3://{BUCKET}/nokey", state_dir("nokey")), s3_env(key_id=None))
    assert_clean_refusal("c (no AWS_ACCESS_KEY_ID)", process, "nokey", 4, ["AWS_ACCESS_KEY_ID"])
    process = run("c: no AWS_SECRET_ACCESS_KEY", mirror_argv(f"s3://{BUCKET}/nosecret", state_dir("nosecret")), s3_env(secret=None))
    assert_clean_refusal("c (no AWS_SECRET_ACCESS_KEY)", process, "nosecret", 4, ["AWS_SECRET_ACCESS_KEY"])
    process = run("c: MIRROR_S3_PART_SIZE below 5 MiB", mirror_argv(f"s3://{BUCKET}/smallpart", state_dir("smallpart")),
                  s3_env(MIRROR_S3_PART_SIZE="1048576"))
    measurements["small_part_size_exit"] = process.returncode
    check(process.returncode in (4, 64), f"c (MIRROR_S3_PART_SIZE=1048576): refused as a configuration or usage error "
          f"(exit {process.returncode})", describe(process))
    assert_clean_refusal("c (MIRROR_S3_PART_SIZE=1048576)", process, "smallpart", process.returncode, ["MIRROR_S3_PART_SIZE"])


def check_d():
    process = run("d: missing bucket", mirror_argv("s3://no-such-bucket-xyz/ds", state_dir("nobucket")), s3_env())
    measurements["missing_bucket_exit"] = process.returncode
    lines = [line for line in process.stderr.splitlines() if line.strip()]
    check(process.returncode in (1, 4), f"d: a missing bucket exits 1 or 4 (it exits {process.returncode})", describe(process))
    check(len(lines) == 1 and "no-such-bucket-xyz" in lines[0], f"d: one stderr line, naming the bucket: {lines!r}",
          describe(process))
    check(not CRASH.search(process.stderr + process.stdout), "d: nothing like a crash report", describe(process))
    check("no-such-bucket-xyz" not in [b["Name"] for b in s3.list_buckets()["Buckets"]], "d: the bucket was not created")
    closed = free_port()  # nothing listens there
    process = run("d: unreachable endpoint", mirror_argv(f"s3://{BUCKET}/ds", state_dir("unreachable")),
                  s3_env(endpoint=f"http://127.0.0.1:{closed}"))
    lines = [line for line in process.stderr.splitlines() if line.strip()]
    check(process.returncode == 5, f"d: an unreachable endpoint exits 5 (network), after {process.seconds:.1f} s",
          describe(process))
    check(len(lines) == 1 and not CRASH.search(process.stderr), f"d: with one stderr line: {lines!r}", describe(process))


def partial_shards(prefix):
    """Shard files under prefix/ whose shard has no stats object yet."""
    names = [key[len(prefix) + 1:] for key in list_prefix(prefix)]
    complete = {name[:5] for name in names if name.endswith("_stats.json")}
    return [name for name in names if name[:5] not in complete]


def kill_attempt(prefix, source, env, trigger, poll_seconds=0.005):
    """Starts a run and SIGKILLs it as soon as boto3 sees `trigger` under prefix/: "upload" (a multipart upload in
    progress), "part" (an upload with a part already stored) or "partial" (a shard's tar or jsonl without its stats)."""
    argv = mirror_argv(f"s3://{BUCKET}/{prefix}", state_dir(prefix), source)
    started = time.monotonic()
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    polls, caught = 0, None
    while process.poll() is None:
        if trigger == "upload":
            seen = [u["Key"] for u in uploads_under(prefix)]
        elif trigger == "part":
            seen = [f"{u['Key']} part {p['PartNumber']}" for u in uploads_under(prefix)
                    for p in s3.list_parts(Bucket=BUCKET, Key=u["Key"], UploadId=u["UploadId"]).get("Parts", [])]
        else:
            seen = partial_shards(prefix)
        polls += 1
        if seen:
            process.send_signal(signal.SIGKILL)
            caught = seen
            break
        time.sleep(poll_seconds)
    out, err = process.communicate()
    check(not any(s in out + err for s in secrets), f"e: {prefix}: no secret in the killed run's output")
    time.sleep(0.2)
    attempt = {"prefix": prefix, "trigger": trigger, "slow": source == slow_table, "caught": caught, "polls": polls,
               "seconds": round(time.monotonic() - started, 2), "exit": process.returncode,
               "objects_at_kill": sorted(k[len(prefix) + 1:] for k in list_prefix(prefix)),
               "uploads_at_kill": [(u["Key"][len(prefix) + 1:], u["UploadId"]) for u in uploads_under(prefix)],
               "command": shown(argv, env)}
    print(f"  attempt {prefix} ({trigger}, {'slow images' if attempt['slow'] else 'plain'}): "
          f"{'killed on seeing ' + str(caught) if caught else 'finished first'} after {polls} polls, "
          f"{attempt['seconds']} s, exit {process.returncode}; then objects {attempt['objects_at_kill']}, "
          f"open uploads {[k for k, _ in attempt['uploads_at_kill']]}", flush=True)
    return attempt


def rerun_after_kill(attempt, source, env):
    prefix = attempt["prefix"]
    process = run(f"e: rerun of {prefix} after the kill", mirror_argv(f"s3://{BUCKET}/{prefix}", state_dir(prefix), source), env)
    aborts = [r for r in process.requests if r[0] == "DELETE" and "uploadId=" in r[1]]
    deletes = [r for r in process.requests if r[0] == "DELETE" and "uploadId=" not in r[1]]
    attempt["rerun"] = {"exit": process.returncode, "aborts": [(r[1], r[2]) for r in aborts],
                        "deletes": [(r[1], r[2]) for r in deletes], "stderr": process.stderr.strip()[-500:]}
    print(f"  the rerun sent {len(aborts)} AbortMultipartUpload {[r[2] for r in aborts]} and {len(deletes)} DeleteObject "
          f"request(s); exit {process.returncode}", flush=True)
    check(process.returncode == 3, f"e ({prefix}): the rerun completes with exit 3", describe(process))
    remaining = uploads_under(prefix)
    check(not remaining, f"e ({prefix}): no multipart upload is left under {prefix}/ after the rerun",
          f"left open: {[(u['Key'], u['UploadId']) for u in remaining]}\nopen at the kill: {attempt['uploads_at_kill']}\n"
          f"the rerun's aborts: {attempt['rerun']['aborts']}\nkilled run: {attempt['command']}\nrerun: {process.command}")
    check_shards(read_shards(s3_files(prefix)), f"e ({prefix})")


def check_e():
    env = s3_env(MIRROR_S3_PART_SIZE=str(PART))
    attempts = []
    measurements["kill_attempts"] = attempts
    problems = []
    # Deterministic first: two uploads left open under the prefix (as two killed copies would leave them), one with
    # a part, plus a tar of a shard without stats; a run must abort both uploads and delete the orphan.
    stale = []
    for number in (0, 1):
        upload = s3.create_multipart_upload(Bucket=BUCKET, Key=f"stale/{number:05d}.tar")
        stale.append((upload["Key"], upload["UploadId"]))
    s3.upload_part(Bucket=BUCKET, Key=stale[0][0], UploadId=stale[0][1], PartNumber=1, Body=b"\0" * PART)
    s3.put_object(Bucket=BUCKET, Key="stale/00002.tar", Body=b"not a tar")
    process = run("e: run into a prefix with two stale uploads and an orphan tar",
                  mirror_argv(f"s3://{BUCKET}/stale", state_dir("stale")), env)
    aborts = [(r[1], r[2]) for r in process.requests if r[0] == "DELETE" and "uploadId=" in r[1]]
    print(f"  stale uploads {[(k, i[:10] + '…') for k, i in stale]}; the run's aborts: {aborts}")
    measurements["stale_uploads"] = {"aborts": aborts, "left": [(u["Key"], u["UploadId"]) for u in uploads_under("stale")]}
    try:
        check(process.returncode == 3, "e (stale): the run exits 3", describe(process))
        remaining = uploads_under("stale")
        check(not remaining, "e (stale): both stale multipart uploads were aborted",
              f"left open: {[(u['Key'], u['UploadId']) for u in remaining]}\nabort requests (path, status): {aborts}\n"
              f"command: {process.command}")
        check_shards(read_shards(s3_files("stale")), "e (stale)")
    except CheckFailed as error:
        problems.append(str(error))
    for trigger, plain, slow in (("upload", 4, 2), ("part", 3, 2), ("partial", 4, 2)):
        caught_any = False
        plans = [(table, f"kill{trigger}{n}") for n in range(plain)]
        plans += [(slow_table, f"kill{trigger}-slow{n}") for n in range(slow)]
        for source, prefix in plans:
            if source == slow_table and caught_any:
                break  # the slower set-up is only for when the plain one never caught the moment
            attempt = kill_attempt(prefix, source, env, trigger)
            attempts.append(attempt)
            if not attempt["caught"]:
                continue
            caught_any = True
            try:
                rerun_after_kill(attempt, source, env)
            except CheckFailed as error:
                problems.append(str(error))
        tries = [a for a in attempts if a["trigger"] == trigger]
        print(f"  {trigger}: caught the moment in {sum(bool(a['caught']) for a in tries)} of {len(tries)} attempts", flush=True)
        if trigger == "upload":
            check(caught_any, "e: killed mirror during a multipart upload in at least one attempt")
    check(not problems, f"e: every rerun after a kill leaves no upload and whole shards ({len(problems)} failed)",
          "\n---\n".join(problems))


def check_f():
    folder = os.path.join(work, "folder-b")
    reference = run("f: rerun of the complete folder of check b (the reference exit code)", mirror_argv(folder), s3_env())
    print(f"  a rerun of a complete folder exits {reference.returncode}; the first S3 run exited "
          f"{getattr(state.get('a'), 'returncode', None)}")
    measurements["rerun_exit_folder"] = reference.returncode
    before = snapshot("ds")
    uploads_before = uploads_under("ds")
    time.sleep(1.2)  # LastModified has whole seconds
    for label, directory in (("same --state-dir", state_dir("ds")), ("a fresh --state-dir", state_dir("ds-fresh"))):
        process = run(f"f: rerun of the complete prefix, {label}",
                      mirror_argv(f"s3://{BUCKET}/ds", directory), s3_env(MIRROR_S3_PART_SIZE=str(PART)))
        check(process.returncode == reference.returncode,
              f"f ({label}): exits {process.returncode}, as a rerun of a complete folder does ({reference.returncode})",
              describe(process))
        after = snapshot("ds")
        changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
        check(not changed, f"f ({label}): every object keeps its ETag and LastModified",
              "\n".join(f"{k}: {before.get(k)} -> {after.get(k)}" for k in changed[:6]))
        written = writes(process.requests, "ds")
        check(not written, f"f ({label}): moto logged no PUT, POST or DELETE under ds/ ({len(process.requests)} requests in all)",
              f"{written[:6]}")
        check(uploads_under("ds") == uploads_before, f"f ({label}): no multipart upload was started")
        measurements[f"rerun {label}"] = {"seconds": round(process.seconds, 2), "requests": len(process.requests)}


def check_g():
    sts = client("sts", KEY_ID, SECRET)
    credentials = sts.assume_role(RoleArn=ROLE_ARN, RoleSessionName="check-s3", DurationSeconds=900)["Credentials"]
    secrets.update({credentials["SecretAccessKey"], credentials["SessionToken"]})
    temporary = client("s3", credentials["AccessKeyId"], credentials["SecretAccessKey"], credentials["SessionToken"])
    check(temporary.list_objects_v2(Bucket=BUCKET, Prefix="session")["KeyCount"] == 0,
          "g: boto3 lists the bucket with the temporary credentials (moto checks them)")
    check(error_code(lambda: client("s3", credentials["AccessKeyId"], credentials["SecretAccessKey"]).list_objects_v2(
        Bucket=BUCKET, Prefix="session"))[1] == 403, "g: without the session token they are refused")
    env = s3_env(key_id=credentials["AccessKeyId"], secret=credentials["SecretAccessKey"], token=credentials["SessionToken"])
    # and no --state-dir: the default, under the XDG cache (XDG_CACHE_HOME points into the work folder)
    process = run("g: temporary credentials", mirror_argv(f"s3://{BUCKET}/session"), env)
    check(process.returncode == 3, "g: a run with AWS_SESSION_TOKEN exits 3", describe(process))
    check(len([k for k in list_prefix("session") if k.endswith("_stats.json")]) == SHARDS, "g: every shard's stats object is there")
    env.pop("AWS_SESSION_TOKEN")
    process = run("g: temporary credentials without the token", mirror_argv(f"s3://{BUCKET}/notoken", state_dir("notoken")), env)
    check(process.returncode == 4, "g: the same key without AWS_SESSION_TOKEN exits 4", describe(process))
    check(not list_prefix("notoken"), "g: and writes nothing")


def sigv4_form_problems(target):
    """How a request target differs from its SigV4 canonical form. curl's CURLOPT_AWS_SIGV4 signs the path and query
    as sent, while S3 signs its own canonical form of them (each path segment and each query name and value
    percent-encoded but for A-Z a-z 0-9 - _ . ~, so "/" in a query value is %2F; parameters sorted; "name=" even
    without a value): a request that S3 accepts must be sent in exactly that form. moto is laxer (and refuses %2F)."""
    from urllib.parse import quote, unquote
    canonical = lambda text: quote(unquote(text), safe="-_.~")
    path, _, query = target.partition("?")
    problems = [f"path segment {seg!r} should be {canonical(seg)!r}" for seg in path.split("/") if seg != canonical(seg)]
    if query:
        pairs = [part.partition("=") for part in query.split("&")]
        problems += [f"query parameter {name!r} has no '='" for name, eq, _ in pairs if not eq]
        problems += [f"query text {text!r} should be {canonical(text)!r}" for name, _, value in pairs
                     for text in (name, value) if text != canonical(text)]
        if [(n, v) for n, _, v in pairs] != sorted((n, v) for n, _, v in pairs):
            problems.append(f"query parameters not sorted: {query!r}")
    return problems


class HashCheckingProxy(http.server.BaseHTTPRequestHandler):
    """Forwards to moto unchanged (Host included, so signatures hold) after comparing x-amz-content-sha256 with the body
    and the request target with its SigV4 canonical form."""
    protocol_version = "HTTP/1.1"
    tally = {"signed": 0, "unsigned": 0, "streaming": 0, "mismatch": [], "missing": 0, "not_canonical": []}
    lock = threading.Lock()

    def log_message(self, *args):
        pass

    def body(self):
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            data = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0], 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return data
                data += self.rfile.read(size)
                self.rfile.readline()
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def forward(self):
        data = self.body()
        claimed = self.headers.get("x-amz-content-sha256")
        with self.lock:
            for problem in sigv4_form_problems(self.path):
                self.tally["not_canonical"].append(f"{self.command} {self.path}: {problem}")
            if claimed is None:
                self.tally["missing"] += 1
            elif claimed == "UNSIGNED-PAYLOAD":
                self.tally["unsigned"] += 1
            elif claimed.startswith("STREAMING-"):
                self.tally["streaming"] += 1
            elif claimed == hashlib.sha256(data).hexdigest():
                self.tally["signed"] += 1
            else:
                self.tally["mismatch"].append(f"{self.command} {self.path}: header {claimed[:16]}…, body "
                                              f"{len(data)} bytes {hashlib.sha256(data).hexdigest()[:16]}…")
        headers = {k: v for k, v in self.headers.items() if k.lower() not in ("expect", "transfer-encoding", "content-length")}
        upstream = http.client.HTTPConnection("127.0.0.1", moto_port, timeout=60)
        upstream.putrequest(self.command, self.path, skip_host=True, skip_accept_encoding=True)
        for k, v in headers.items():
            upstream.putheader(k, v)
        if data or self.command in ("PUT", "POST"):
            upstream.putheader("Content-Length", str(len(data)))
        upstream.endheaders(data)
        response = upstream.getresponse()
        payload = response.read()
        self.send_response_only(response.status, response.reason)
        for k, v in response.getheaders():
            if k.lower() not in ("content-length", "transfer-encoding", "connection", "server", "date"):
                self.send_header(k, v)
        self.send_header("Content-Length", str(len(payload) if self.command != "HEAD" else response.getheader("Content-Length") or 0))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(payload)
        upstream.close()

    do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = forward


def check_h():
    class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
        daemon_threads = True
    proxy = Server(("127.0.0.1", 0), HashCheckingProxy)
    threading.Thread(target=proxy.serve_forever, daemon=True).start()
    endpoint = f"http://127.0.0.1:{proxy.server_address[1]}"
    problems = []
    try:
        check(client("s3", KEY_ID, SECRET, endpoint=endpoint).list_objects_v2(Bucket=BUCKET, Prefix="proxied")["KeyCount"] == 0,
              "h: boto3's signatures pass through the proxy")
        for label, prefix in (("a plain prefix", "proxied"), ("a nested prefix with + ( ) ~ space and ü", "proxied/sub dir+(1)~ü")):
            HashCheckingProxy.tally.update(signed=0, unsigned=0, streaming=0, mismatch=[], missing=0, not_canonical=[])
            process = run(f"h: through the checking proxy, {label}", mirror_argv(f"s3://{BUCKET}/{prefix}", state_dir(prefix.replace("/", "_"))),
                          s3_env(endpoint=endpoint, MIRROR_S3_PART_SIZE=str(PART)))
            tally = {k: (list(v) if isinstance(v, list) else v) for k, v in HashCheckingProxy.tally.items()}
            distinct = sorted({line.split(": ", 1)[1] for line in tally["not_canonical"]})
            print(f"  {label}: payload hashes {tally['signed']} signed and right, {tally['unsigned']} UNSIGNED-PAYLOAD, "
                  f"{tally['streaming']} streaming, {tally['missing']} without the header, {len(tally['mismatch'])} wrong; "
                  f"{len(tally['not_canonical'])} request(s) not in SigV4 canonical form ({len(distinct)} distinct)")
            measurements[f"proxy, {label}"] = {"payload_hashes": {k: tally[k] for k in ("signed", "unsigned", "streaming", "missing")},
                                               "hash_mismatches": tally["mismatch"][:10], "not_canonical": distinct[:20],
                                               "exit": process.returncode}
            try:
                check(process.returncode == 3, f"h ({label}): the proxied run exits 3", describe(process))
                check(not tally["mismatch"], f"h ({label}): every x-amz-content-sha256 equals the SHA-256 of its body",
                      "\n".join(tally["mismatch"][:6]))
                check(not distinct, f"h ({label}): every request's path and query are already in SigV4 canonical form "
                      "(curl signs them as sent; S3 signs its canonical form)",
                      "\n".join(distinct[:8]) + f"\nexample: {tally['not_canonical'][:1]}\ncommand: {process.command}")
                check(len([k for k in list_prefix(prefix) if k.endswith("_stats.json")]) == SHARDS, f"h ({label}): every shard arrived")
            except CheckFailed as error:
                problems.append(str(error))
    finally:
        proxy.shutdown()
    check(not problems, f"h: both proxied runs pass ({len(problems)} failed)", "\n---\n".join(problems))


def check_i():
    prefix = "nested/deeper path/ünï"
    process = run("i: a nested prefix with a space and non-ASCII", mirror_argv(f"s3://{BUCKET}/{prefix}", state_dir("nested")),
                  s3_env(MIRROR_S3_PART_SIZE=str(PART)))
    check(process.returncode == 3, f"i: s3://{BUCKET}/{prefix} exits 3", describe(process))
    check_shards(read_shards(s3_files(prefix)), "i")
    process = run("i: its rerun", mirror_argv(f"s3://{BUCKET}/{prefix}", state_dir("nested")), s3_env(MIRROR_S3_PART_SIZE=str(PART)))
    # a rerun exits 3 while rows are missing (the 404 rows: missingPermanent), as a rerun of a folder does
    missing = summary_of(process).get("missingPermanent")
    check(process.returncode == 3 and missing == len(MISSING_AT) and not writes(process.requests, "nested"),
          f"i: its rerun writes nothing and exits 3 (missingPermanent {missing}: the {len(MISSING_AT)} 404 rows)",
          describe(process) + f"\nwrites: {writes(process.requests, 'nested')[:5]}")


def check_j():
    """No secret in the files mirror keeps on disk (state folders, the default one under the XDG cache, outputs)."""
    found, scanned = [], 0
    for root in (os.path.join(work, "state"), os.path.join(work, "xdg-cache"), os.path.join(work, "folder-b")):
        for directory, _, names in os.walk(root):
            for name in names:
                path = os.path.join(directory, name)
                try:
                    data = open(path, "rb").read()
                except OSError:
                    continue
                scanned += 1
                found += [path.replace(work, "$WORK") for value in secrets if value and value.encode() in data]
    check(scanned > 0 and not found, f"j: no secret or session token in the {scanned} files of the state folders", "\n".join(found[:5]))


# ---------------------------------------------------------------- k. --retry-failed

K_SHARD = 20
K_ROWS = 100  # five shards of 20
K_404 = (4, 31, 47, 66, 93)  # 5 %: shards 0, 1, 2, 3 and 4
# 20 %, all in shards 1 and 3 (shards 0, 2 and 4 have none): the even rows of shard 1, the odd ones of shard 3
K_503 = tuple(p for p in range(20, 40) if p % 2 == 0) + tuple(p for p in range(60, 80) if p % 2 == 1)
K_BIG = (20, 22, 24, 26, 29, 33, 35, 61)  # ~1 MB each: shard 1's tar passes 5 MiB once its 503 rows are in
K_PREFIX = "retry"


def k_table():
    """The table of check k: (url, caption, sha256 or None) by position; its images under served/k/."""
    os.makedirs(os.path.join(served, "k"), exist_ok=True)
    rows = []
    for position in range(K_ROWS):
        if position in K_404:
            rows.append((f"http://127.0.0.1:{image_port}/k/missing-{position}.png", f"k missing {position}", None))
            continue
        # make_image(n) is ~1 MB of noise when n % 5 == 0, a small gradient otherwise; all distinct from the others
        data = make_image(20_000 + 5 * position + (0 if position in K_BIG else 1))
        with open(os.path.join(served, "k", f"{position}.png"), "wb") as handle:
            handle.write(data)
        rows.append((f"http://127.0.0.1:{image_port}/k/{position}.png", f"k image {position}", hashlib.sha256(data).hexdigest()))
    return rows


def image_requests(start):
    """The image server's requests since offset `start`, robots.txt left out."""
    return [r for r in requests_logged(IMAGE_LOG, start)[0] if r[1] != "/robots.txt"]


def shard_key_of(path):
    match = re.search(rf"/{K_PREFIX}/(\d{{5}})(\.tar|\.jsonl|_stats\.json)(?:\?|$)", path)
    return (int(match[1]), match[2]) if match else None


def check_k_shards(label, shards, rows, retried):
    """Every shard of check k: the jsonl has every row once with its status, reason and transient; the tar holds each
    saved row once, in row order (png, json, txt), the served bytes; the stats count it. `retried`: the 503 rows are in."""
    check(sorted(shards) == list(range(K_ROWS // K_SHARD)) and all({"tar", "jsonl", "stats"} <= set(s) for s in shards.values()),
          f"{label}: shards 0…{K_ROWS // K_SHARD - 1}, each with its .tar, .jsonl and _stats.json",
          f"found {[(n, sorted(s)) for n, s in sorted(shards.items())]}")
    bad_lines, bad_tars, bad_stats = [], [], []
    for number, shard in sorted(shards.items()):
        positions = list(range(number * K_SHARD, (number + 1) * K_SHARD))
        lines = shard["jsonl"]
        if [line.get("key") for line in lines] != [f"{p:09d}" for p in positions]:
            bad_lines.append(f"shard {number}: keys {[line.get('key') for line in lines]}")
            continue
        for position, line in zip(positions, lines):
            url, _, digest = rows[position]
            if digest is None:
                want = ("failed", "http-404", False)
            elif position in K_503 and not retried:
                want = ("failed", "http-503", True)
            else:
                want = ("success", None, False)
            got = (line.get("status"), line.get("reason", "<absent>"), line.get("transient", "<absent>"))
            if got != want or line.get("url") != url:
                bad_lines.append(f"row {position}: (status, reason, transient) {got}, want {want}; url {line.get('url')}")
        saved = [p for p in positions if rows[p][2] is not None and (retried or p not in K_503)]
        want_order = [f"{p:09d}.{ext}" for p in saved for ext in ("png", "json", "txt")]
        order = shard["order"]
        if sorted(order) != sorted(want_order):
            extra = sorted(set(order) - set(want_order))
            lacking = sorted(set(want_order) - set(order))
            doubled = sorted({m for m in order if order.count(m) > 1})
            bad_tars.append(f"shard {number}: extra members {extra[:6]}, missing {lacking[:6]}, twice {doubled[:6]}")
        else:
            keys = [m.split(".")[0] for m in order]
            runs_of_keys = [k for i, k in enumerate(keys) if i == 0 or keys[i - 1] != k]
            if runs_of_keys != [f"{p:09d}" for p in saved]:
                bad_tars.append(f"shard {number}: samples not each once in row order: {runs_of_keys}")
        for position in saved:
            key, (url, caption, digest) = f"{position:09d}", rows[position]
            image = shard["tar"].get(f"{key}.png")
            if image is None or hashlib.sha256(image).hexdigest() != digest:
                bad_tars.append(f"{key}.png: {'missing' if image is None else f'{len(image)} bytes, sha256 differs from the served file'}")
            if shard["tar"].get(f"{key}.txt", b"").decode("utf-8", "replace") != caption:
                bad_tars.append(f"{key}.txt: {shard['tar'].get(f'{key}.txt')!r}, want {caption!r}")
            record = json.loads(shard["tar"].get(f"{key}.json") or b"{}")
            if record.get("url") != url or record.get("key") != key:
                bad_tars.append(f"{key}.json: url {record.get('url')} key {record.get('key')}")
        missing_404 = sum(1 for p in positions if rows[p][2] is None)
        missing_503 = 0 if retried else sum(1 for p in positions if p in K_503)
        failures = {reason: n for reason, n in (("http-404", missing_404), ("http-503", missing_503)) if n}
        want = {"shard": number, "rows": K_SHARD, "saved": len(saved), "failed": missing_404 + missing_503,
                "transientFailures": missing_503, "failures": failures}
        got = {k: shard["stats"].get(k) for k in want}
        if got != want:
            bad_stats.append(f"shard {number}: {got} != {want}")
    check(not bad_lines, f"{label}: each .jsonl has its shard's rows in order, each with status, reason and transient "
          f"(http-503 transient, http-404 not, null and false for a saved row)", "\n".join(bad_lines[:8]))
    check(not bad_tars, f"{label}: each tar read back with tarfile holds each saved row once (png, json, txt), in row "
          "order, the served bytes and the row's caption and record", "\n".join(bad_tars[:8]))
    check(not bad_stats, f"{label}: each stats object counts its shard (saved, failed, failures, transientFailures)", "\n".join(bad_stats[:8]))


def status_of(label, target, env):
    process = run(label, [MIRROR, "status", target], env)
    transient = re.search(r"^\s*transient (\d+)\b", process.stdout, re.M)
    permanent = re.search(r"^\s*permanent (\d+)\b", process.stdout, re.M)
    return process, (int(transient[1]) if transient else 0), (int(permanent[1]) if permanent else 0)


def check_k():
    rows = k_table()
    source = os.path.join(work, "k.csv")
    import csv
    with open(source, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["url", "caption"])
        writer.writerows((url, caption) for url, caption, _ in rows)
    shard_count = K_ROWS // K_SHARD
    flaky_shards = sorted({p // K_SHARD for p in K_503})
    steady_shards = [n for n in range(shard_count) if n not in flaky_shards]
    paths = lambda positions: sorted(rows[p][0].split(str(image_port), 1)[1] for p in positions)
    print(f"  {K_ROWS} rows in {shard_count} shards of {K_SHARD}: {len(K_503)} answer 503 (shards {flaky_shards}) until "
          f"the server recovers, {len(K_404)} answer 404; shards {steady_shards} have no 503 row")
    target = f"s3://{BUCKET}/{K_PREFIX}"
    env = s3_env(MIRROR_S3_PART_SIZE=str(PART))

    def argv(*extra):
        words = mirror_argv(target, state_dir(K_PREFIX), source)
        words[words.index("--shard-size") + 1] = str(K_SHARD)
        return words + ["--retries", "0", *extra]

    # 1. the host answers 503 for a fifth of the rows
    with open(UNAVAILABLE, "w") as handle:
        handle.write("\n".join(paths(K_503)) + "\n")
    start = requests_logged(IMAGE_LOG)[1]
    first = run("k: first run, 503 for 20 % of the rows (--retries 0)", argv(), env)
    summary = summary_of(first)
    requested = image_requests(start)
    check(first.returncode == 5, "k: the first run exits 5 (rows failed on the server and may work later)", describe(first))
    want = {"saved": K_ROWS - len(K_503) - len(K_404), "failed": len(K_503) + len(K_404),
            "failures": {"http-503": len(K_503), "http-404": len(K_404)}, "transientFailures": len(K_503)}
    check({k: summary.get(k) for k in want} == want, f"k: its --json summary counts {want}", describe(first))
    refused = sorted(p for _, p, status in requested if status == 503)
    check(refused == paths(K_503), f"k: each 503 row was requested once (--retries 0): {len(refused)} requests answered 503",
          f"503 answers {refused[:6]}…, want {paths(K_503)[:6]}…")
    check(not uploads_under(K_PREFIX), "k: no multipart upload is left open")
    check_k_shards("k (first run)", read_shards(s3_files(K_PREFIX)), rows, retried=False)

    status, transient, permanent = status_of("k: mirror status before the retry", target, s3_env())
    print("  " + "\n  ".join(status.stdout.rstrip().splitlines()))
    check(status.returncode == 3, "k: mirror status exits 3 (rows failed)", describe(status))
    check((transient, permanent) == (len(K_503), len(K_404)),
          f"k: mirror status shows a transient line ({transient}, want {len(K_503)}) and a permanent line "
          f"({permanent}, want {len(K_404)})", describe(status))

    # 2. a rerun without --retry-failed: nothing settled is downloaded again, nothing written, exit 3
    before = snapshot(K_PREFIX)
    time.sleep(1.2)  # LastModified has whole seconds
    start = requests_logged(IMAGE_LOG)[1]
    rerun = run("k: rerun without --retry-failed", argv(), env)
    summary = summary_of(rerun)
    check(rerun.returncode == 3, "k: a rerun without --retry-failed exits 3 while rows are missing", describe(rerun))
    check((summary.get("missingTransient"), summary.get("missingPermanent")) == (len(K_503), len(K_404)),
          f"k: its summary has missingTransient {summary.get('missingTransient')} and missingPermanent "
          f"{summary.get('missingPermanent')} ({len(K_503)} and {len(K_404)} expected)", describe(rerun))
    requested = image_requests(start)
    check(not requested, f"k: the rerun requested no image (the server logged {len(requested)})", f"{requested[:8]}")
    written = writes(rerun.requests, K_PREFIX)
    check(not written and snapshot(K_PREFIX) == before, "k: the rerun wrote nothing (moto's log; ETag and LastModified)",
          f"{written[:6]}")

    # 3. the host recovers; --retry-failed downloads the 503 rows again, and only those
    os.remove(UNAVAILABLE)
    start = requests_logged(IMAGE_LOG)[1]
    retry = run("k: --retry-failed after the server recovered", argv("--retry-failed"), env)
    summary = summary_of(retry)
    requested = image_requests(start)
    measurements["retry_failed"] = {"seconds": round(retry.seconds, 2), "summary": summary,
                                    "image_requests": len(requested), "writes": [r[:2] for r in writes(retry.requests, K_PREFIX)]}
    check(retry.returncode == 3, "k: the --retry-failed run exits 3 (the 404 rows are still missing)", describe(retry))
    want = {"saved": len(K_503), "failed": 0, "shardsRewritten": len(flaky_shards), "missingTransient": 0,
            "missingPermanent": len(K_404)}
    check({k: summary.get(k) for k in want} == want, f"k: its --json summary has {want}",
          f"{ {k: summary.get(k) for k in want} }\n" + describe(retry))
    again = sorted(p for _, p, _ in requested)
    check(again == paths(K_503) and all(status == 200 for _, _, status in requested),
          f"k: it requested each 503 row once more and nothing else ({len(again)} requests; no 404 row)",
          f"requested {again[:8]}…; 404 rows among them: {[p for p in again if 'missing' in p]}")
    after = snapshot(K_PREFIX)
    suffixes = (".tar", ".jsonl", "_stats.json")
    steady_keys = [f"{K_PREFIX}/{n:05d}{s}" for n in steady_shards for s in suffixes]
    flaky_keys = [f"{K_PREFIX}/{n:05d}{s}" for n in flaky_shards for s in suffixes]
    none = (None, None, None)
    touched = [k for k in steady_keys if before.get(k, none)[:2] != after.get(k, none)[:2]]
    check(all(k in before for k in steady_keys) and not touched,
          f"k: the shards without a 503 row ({steady_shards}) keep their tar, jsonl and stats: same ETag and LastModified",
          "\n".join(f"{k}: {before.get(k)} -> {after.get(k)}" for k in touched[:6]))
    unchanged = [k for k in flaky_keys if k not in before or k not in after or before[k][0] == after[k][0]
                 or after[k][1] <= before[k][1]]
    check(not unchanged, f"k: the shards that held 503 rows ({flaky_shards}) were rewritten: new ETag and later "
          "LastModified for each tar, jsonl and stats", "\n".join(f"{k}: {before.get(k)} -> {after.get(k)}" for k in unchanged))
    shard_writes = [(shard_key_of(r[1]), r) for r in writes(retry.requests, K_PREFIX)]
    stray = [r for key, r in shard_writes if key is not None and key[0] not in flaky_shards]
    other = sorted({r[1].split("?")[0] for key, r in shard_writes if key is None})
    check(not stray, f"k: moto logged no write to a shard without a 503 row", f"{stray[:6]}")
    if other:
        print(f"  note: the retry also wrote {other}")
    out_of_order = []
    for number in flaky_shards:
        mine = [key[1] for key, _ in shard_writes if key and key[0] == number]
        if not mine or mine[-1] != "_stats.json" or "_stats.json" in mine[:-1] or ".tar" not in mine or ".jsonl" not in mine:
            out_of_order.append(f"shard {number}: writes {mine}")
        elif max(i for i, k in enumerate(mine) if k == ".tar") > min(i for i, k in enumerate(mine) if k == ".jsonl"):
            out_of_order.append(f"shard {number}: jsonl written before the tar was done: {mine}")
    check(not out_of_order, "k: each rewritten shard went up whole: tar, then jsonl, then stats last", "\n".join(out_of_order))
    check(not uploads_under(K_PREFIX), "k: no multipart upload is left open after the retry")
    big = {k: v for k, v in after.items() if k.endswith(".tar") and v[2] > PART}
    print(f"  tars after the retry: {', '.join(f'{k[len(K_PREFIX) + 1:]} {v[2] / 2**20:.2f} MiB' for k, v in sorted(after.items()) if k.endswith('.tar'))}")
    check(big and all("-" in v[0] for v in big.values()), "k: a rewritten tar bigger than 5 MiB went up in parts (ETag …-N)",
          f"{big}")
    files = s3_files(K_PREFIX)
    shards = read_shards(files)
    check_k_shards("k (after --retry-failed)", shards, rows, retried=True)
    sizes = json.loads(files.get("sizes.json", b"null"))
    counted = {f"{n:05d}.tar": sum(1 for m in s["tar"] if m.endswith(".png")) for n, s in shards.items()}
    check(sizes == counted, "k: sizes.json counts each tar's samples after the retry", f"sizes.json {sizes}, tars {counted}")
    try:
        import webdataset
    except ImportError:
        webdataset = None
        print("  note: webdataset is not installed in this virtualenv; the tars were read with tarfile only")
    if webdataset is not None:
        folder = os.path.join(work, "k-tars")
        os.makedirs(folder, exist_ok=True)
        for name, data in files.items():
            if name.endswith(".tar"):
                with open(os.path.join(folder, name), "wb") as handle:
                    handle.write(data)
        keys = [s["__key__"] for s in webdataset.WebDataset(sorted(os.path.join(folder, n) for n in os.listdir(folder)),
                                                             shardshuffle=False)]
        want = [f"{p:09d}" for p in range(K_ROWS) if rows[p][2] is not None]
        check(keys == want, f"k: webdataset reads {len(keys)} samples, each key once and in row order ({len(want)} expected)",
              f"first keys {keys[:5]}")

    status, transient, permanent = status_of("k: mirror status after the retry", target, s3_env())
    check(status.returncode == 3 and (transient, permanent) == (0, len(K_404)),
          f"k: mirror status after the retry exits 3 with no transient line and {len(K_404)} permanent "
          f"(exit {status.returncode}, transient {transient}, permanent {permanent})", describe(status))

    # 4. --retry-failed all tries the 404 rows again; no shard gains a sample, so none is written
    before = snapshot(K_PREFIX)
    time.sleep(1.2)
    start = requests_logged(IMAGE_LOG)[1]
    everything = run("k: --retry-failed all", argv("--retry-failed", "all"), env)
    summary = summary_of(everything)
    requested = image_requests(start)
    check(everything.returncode == 3, "k: --retry-failed all exits 3 (the 404 rows fail again)", describe(everything))
    check(sorted(p for _, p, _ in requested) == paths(K_404),
          f"k: --retry-failed all requested the {len(K_404)} rows that failed for good, and only those",
          f"requested {sorted(p for _, p, _ in requested)}")
    check(summary.get("shardsRewritten") == 0 and not writes(everything.requests, K_PREFIX) and snapshot(K_PREFIX) == before,
          "k: no shard gained a sample, so nothing was written (shardsRewritten 0; ETag and LastModified; moto's log)",
          f"shardsRewritten {summary.get('shardsRewritten')}; writes {writes(everything.requests, K_PREFIX)[:6]}")


def throughput_series(label, source, rows, images, image_bytes, shard_size, repetitions=3):
    """S3 runs (5 MiB parts, and the default part size) against runs into a local folder, interleaved."""
    series = {"s3, 5 MiB parts": [], "s3, default part size": [], "folder": []}
    tar_bytes = 0
    for repetition in range(repetitions):
        for name in series:
            tag = f"{label}-{name.split(',')[-1].strip().split()[0]}-{repetition}"
            if name == "folder":
                out, env = os.path.join(work, "tput", tag), s3_env()
            else:
                out = f"s3://{BUCKET}/{tag}"
                env = s3_env(MIRROR_S3_PART_SIZE=str(PART)) if "5 MiB" in name else s3_env()
            argv = mirror_argv(out, None if name == "folder" else state_dir(tag), source)
            argv[argv.index("--shard-size") + 1] = str(shard_size)
            process = run(f"throughput {label}: {name} #{repetition + 1}", argv, env)
            want = 0 if images == rows else 3
            check(process.returncode == want, f"throughput {label}: {name} #{repetition + 1} exits {want}", describe(process))
            if name == "s3, default part size":
                check(not [r for r in process.requests if "uploadId=" in r[1]],
                      f"throughput {label}: with the default part size no tar goes up in parts")
            if name == "s3, 5 MiB parts" and repetition == 0:
                tar_bytes = sum(item["Size"] for key, item in list_prefix(tag).items() if key.endswith(".tar"))
            series[name].append(process.seconds)
    # What moto takes from boto3, sequentially, for the same files: the server's own ceiling here
    import boto3.s3.transfer
    folder = os.path.join(work, "tput", f"{label}-folder-{repetitions - 1}")
    files = sorted(n for n in os.listdir(folder) if re.fullmatch(r"\d{5}(\.tar|\.jsonl|_stats\.json)", n))
    for name, part in (("boto3 upload_file, 5 MiB parts", PART), ("boto3 upload_file, default part size", 64 << 20)):
        config = boto3.s3.transfer.TransferConfig(multipart_threshold=part, multipart_chunksize=part, use_threads=False)
        started = time.monotonic()
        for file in files:
            s3.upload_file(os.path.join(folder, file), BUCKET, f"{label}-boto3/{file}", Config=config)
        series[name] = [time.monotonic() - started]
    result = {"load_average_1min": round(os.getloadavg()[0], 2)}
    print(f"  {label}: {images} images of {rows} rows, {image_bytes / 1e6:.1f} MB of images, {tar_bytes / 1e6:.1f} MB "
          f"of tars, --shard-size {shard_size} (mirror as given, loopback, moto_server is Python; "
          f"load average {result['load_average_1min']} on {os.cpu_count()} CPUs)")
    for name, times in series.items():
        median = statistics.median(times)
        result[name] = {"seconds": [round(t, 2) for t in times], "median_s": round(median, 2),
                        "image_MB_per_s": round(image_bytes / 1e6 / median, 1), "images_per_s": round(images / median, 1),
                        "tar_MB_per_s": round(tar_bytes / 1e6 / median, 1)}
        if name.startswith("boto3"):
            print(f"    {name} (upload only, of the folder run's shard files): {median:.2f} s -> "
                  f"{result[name]['tar_MB_per_s']} MB/s of tar", flush=True)
            continue
        print(f"    {name}: median {median:.2f} s of {result[name]['seconds']} -> {result[name]['image_MB_per_s']} MB/s "
              f"of images, {result[name]['images_per_s']} images/s, {result[name]['tar_MB_per_s']} MB/s of tar", flush=True)
    measurements.setdefault("throughput", {})[label] = result


def throughput():
    throughput_series("check table", table, ROWS, SAVED, IMAGE_BYTES, SHARD)
    # A larger table of its own (distinct images again, no 404s) for steadier numbers
    count = int(os.environ.get("CHECK_S3_THROUGHPUT_IMAGES", "500"))
    os.makedirs(os.path.join(served, "tput"), exist_ok=True)
    size, lines = 0, ["url,caption"]
    for n in range(count):
        data = make_image(10_000 + n)
        with open(os.path.join(served, "tput", f"{n}.png"), "wb") as handle:
            handle.write(data)
        size += len(data)
        lines.append(f"http://127.0.0.1:{image_port}/tput/{n}.png,throughput image {n}")
    source = os.path.join(work, "throughput.csv")
    with open(source, "w") as handle:
        handle.write("\n".join(lines) + "\n")
    throughput_series("larger table", source, count, count, size, 100)


def check_l():
    """Stats objects that do not read as their shard's stats: the rerun redoes those shards, and mirror status agrees."""
    prefix = "untrusted"
    env = s3_env()
    out = f"s3://{BUCKET}/{prefix}"
    process = run("l: a first run", mirror_argv(out, state_dir(prefix)), env)
    check(process.returncode == 3, "l: the first run exits 3 (the 404 rows)", describe(process))
    stats = json.loads(get(f"{prefix}/00001_stats.json"))
    stats["saved"] -= 1
    s3.put_object(Bucket=BUCKET, Key=f"{prefix}/00000_stats.json", Body=b"{}")
    s3.put_object(Bucket=BUCKET, Key=f"{prefix}/00001_stats.json", Body=json.dumps(stats).encode())
    status = run("l: mirror status of the prefix", [MIRROR, "status", out], env)
    named = ['00000_stats.json is not this shard\'s stats (no "rows")', "00001_stats.json is not this shard's stats (its rows' outcomes add up to"]
    check(status.returncode == 3 and all(n in status.stdout for n in named) and "2 incomplete (0-1)" in status.stdout,
          "l: mirror status names both stats objects and counts their shards incomplete (exit 3)", describe(status))
    argv = [a for a in mirror_argv(out, state_dir(prefix)) if a != "--quiet"]
    again = run("l: the rerun", argv, env)
    check(again.returncode == 3 and all(n in again.stderr for n in named) and "shard 0 is downloaded again" in again.stderr,
          "l: the rerun says which stats objects it did not trust and exits 3", describe(again))
    deletes = [r[1].rsplit("/", 1)[-1] for r in again.requests if r[0] == "DELETE" and "uploadId=" not in r[1]]
    for number in (0, 1):
        mine = [name for name in deletes if name.startswith(f"{number:05d}")]
        check(mine[:1] == [f"{number:05d}_stats.json"] and sorted(mine) == sorted(f"{number:05d}{kind}" for kind in (".jsonl", ".tar", "_stats.json")),
              f"l: shard {number}'s objects were deleted, its stats object first", f"deletes: {deletes}")
    puts = {r[1].rsplit("/", 1)[-1] for r in writes(again.requests, prefix) if r[0] == "PUT"}
    check({"00000.tar", "00000_stats.json", "00001.tar", "00001_stats.json"} <= puts and not any(n.startswith("00002") for n in puts),
          "l: the rerun wrote shards 0 and 1 again, and no other", f"puts: {sorted(puts)}")
    check_shards(read_shards(s3_files(prefix)), "l")
    after = run("l: mirror status after the rerun", [MIRROR, "status", out], env)
    check("  untrusted   " not in after.stdout and f"{SHARDS} done" in after.stdout, "l: mirror status finds every shard done", describe(after))


only = set(filter(None, os.environ.get("CHECK_S3_ONLY", "").split(",")))  # e.g. CHECK_S3_ONLY=a,e to debug


def section_if(name, function):
    if not only or name.split(".")[0] in only:
        section(name, function)


try:
    section_if("a. WebDataset shards to S3 (MIRROR_S3_PART_SIZE=5 MiB)", check_a)
    section_if("b. the same table into a local folder", check_b)
    section_if("c. refused credentials", check_c)
    section_if("d. a missing bucket", check_d)
    section_if("e. SIGKILL during a multipart upload, then a rerun", check_e)
    section_if("f. a rerun of a complete prefix", check_f)
    section_if("g. temporary credentials", check_g)
    section_if("h. payload hashes and canonical requests, through a checking proxy", check_h)
    section_if("i. a nested prefix with a space and non-ASCII", check_i)
    section_if("j. no secret on disk", check_j)
    section_if("k. --retry-failed into S3", check_k)
    section_if("l. stats objects not to be trusted", check_l)
    section_if("throughput", throughput)
finally:
    stop(image_server)
    stop(moto)
    report = os.environ.get("CHECK_S3_REPORT")
    if report:
        with open(report, "w") as handle:
            json.dump({"failures": checks.failures, "runs": runs, "measurements": measurements}, handle, indent=2, default=str)
    if not os.environ.get("CHECK_S3_KEEP"):
        shutil.rmtree(work, ignore_errors=True)
    else:
        print(f"work folder kept: {work}")

sys.exit(checks.summary())
