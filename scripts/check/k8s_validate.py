"""The consistency half of scripts/check/k8s-validate: what the Kubernetes schemas cannot check about deploy/k8s/.

    python scripts/check/k8s_validate.py deploy/k8s     # needs PyYAML (scripts/check/k8s-validate runs it from its virtualenv)

Prints one line per problem and exits 1 if there is any.
"""
import glob
import os
import re
import shutil
import subprocess
import sys

import yaml

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))  # scripts/lib: mirrorscripts
from mirrorscripts import Checks


def documents(folder):
    found = []
    for path in sorted(glob.glob(os.path.join(folder, "*.yaml"))):
        with open(path) as f:
            for document in yaml.safe_load_all(f):
                if document:
                    found.append((os.path.basename(path), document))
    return found


def check(folder, checks):
    """Reports every problem of the manifests in `folder` with checks.fail."""
    docs = documents(folder)
    for name, doc in docs:
        for field in ("apiVersion", "kind", "metadata"):
            if field not in doc:
                checks.fail(f"{name}: no {field}")
        if not (doc.get("metadata") or {}).get("name"):
            checks.fail(f"{name}: no metadata.name")
    # Each Secret's keys, and the keys its file shows commented out (AWS_ENDPOINT_URL): those a Secret may have.
    secrets = {}
    for name, doc in docs:
        if doc.get("kind") == "Secret":
            with open(os.path.join(folder, name)) as f:
                commented = set(re.findall(r"^\s*#\s*([A-Z][A-Z0-9_]+):", f.read(), re.M))
            keys = set(doc.get("stringData") or {}) | set(doc.get("data") or {})
            secrets[doc["metadata"]["name"]] = (keys, commented - keys)
    jobs = [(name, doc) for name, doc in docs if doc.get("kind") == "Job"]
    if not jobs:
        checks.fail(f"{folder}: no Job")
    for name, job in jobs:
        where = f"{name}: Job {job['metadata'].get('name')}"
        if job.get("apiVersion") != "batch/v1":
            checks.fail(f"{where}: apiVersion {job.get('apiVersion')}, expected batch/v1")
        spec = job.get("spec") or {}
        if spec.get("completionMode") != "Indexed":
            checks.fail(f"{where}: completionMode is {spec.get('completionMode')!r}, not Indexed")
        completions = spec.get("completions")
        if not isinstance(completions, int) or completions < 1:
            checks.fail(f"{where}: completions {completions!r}: an Indexed Job needs a positive count")
        parallelism = spec.get("parallelism", 1)
        if isinstance(completions, int) and parallelism > completions:
            checks.fail(f"{where}: parallelism {parallelism} > completions {completions}")
        if "backoffLimitPerIndex" in spec and "backoffLimit" in spec:
            checks.fail(f"{where}: both backoffLimit and backoffLimitPerIndex (the per-index limit is meant)")
        pod = (spec.get("template") or {}).get("spec") or {}
        if pod.get("restartPolicy") != "Never" and spec.get("podFailurePolicy"):
            checks.fail(f"{where}: podFailurePolicy needs restartPolicy Never, not {pod.get('restartPolicy')!r}")
        if pod.get("restartPolicy") not in ("Never", "OnFailure"):
            checks.fail(f"{where}: a Job's restartPolicy must be Never or OnFailure")
        containers = pod.get("containers") or []
        names = {c.get("name") for c in containers}
        for rule in (spec.get("podFailurePolicy") or {}).get("rules") or []:
            exit_codes = rule.get("onExitCodes")
            if exit_codes and exit_codes.get("containerName") not in names:
                checks.fail(f"{where}: podFailurePolicy names container {exit_codes.get('containerName')!r}, "
                            f"the pod has {sorted(names)}")
            if rule.get("action") == "FailIndex" and "backoffLimitPerIndex" not in spec:
                checks.fail(f"{where}: a FailIndex rule needs backoffLimitPerIndex")
        volumes = {v.get("name"): v for v in pod.get("volumes") or []}
        for container in containers:
            cwhere = f"{where}, container {container.get('name')}"
            env = {e.get("name"): e for e in container.get("env") or []}
            shards = (env.get("MIRROR_SHARDS") or {}).get("value")
            if shards is None:
                checks.fail(f"{cwhere}: no MIRROR_SHARDS value (mirror needs N beside JOB_COMPLETION_INDEX)")
            elif str(shards) != str(completions):
                checks.fail(f"{cwhere}: MIRROR_SHARDS {shards} but completions {completions}: pods would split "
                            f"the table into {shards} shares, and some rows would have no pod, or two")
            for variable in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
                entry = env.get(variable)
                if not entry or "secretKeyRef" not in (entry.get("valueFrom") or {}):
                    checks.fail(f"{cwhere}: {variable} does not come from a Secret (secretKeyRef)")
                if entry and "value" in entry:
                    checks.fail(f"{cwhere}: {variable} has a literal value in the manifest")
            for variable, entry in env.items():
                ref = (entry.get("valueFrom") or {}).get("secretKeyRef")
                if not ref:
                    continue
                secret = ref.get("name")
                if secret not in secrets:
                    checks.fail(f"{cwhere}: {variable} refers to Secret {secret!r}, not among {sorted(secrets)}")
                    continue
                keys, maybe = secrets[secret]
                if ref.get("key") not in keys | maybe:
                    checks.fail(f"{cwhere}: {variable} refers to key {ref.get('key')!r} of Secret {secret}, "
                                f"which has {sorted(keys)}")
                elif ref.get("key") in maybe and not ref.get("optional"):
                    checks.fail(f"{cwhere}: {variable} needs optional: true (the example Secret leaves it out)")
            command = " ".join((container.get("command") or []) + (container.get("args") or []))
            if not re.search(r"\bmirror urls\b", command):
                checks.fail(f"{cwhere}: the command does not run `mirror urls`")
            if "--format webdataset" not in command:
                checks.fail(f"{cwhere}: the command does not pass --format webdataset")
            if re.search(r"--shard[ =]", command):
                checks.fail(f"{cwhere}: the command passes --shard: the index must come from JOB_COMPLETION_INDEX")
            out = (env.get("MIRROR_OUT") or {}).get("value", "")
            if not out.startswith("s3://") or len(out.split("/")[2]) < 3:
                checks.fail(f"{cwhere}: MIRROR_OUT {out!r} is not s3://BUCKET/PREFIX (bucket of 3+ characters)")
            mounts = {m.get("mountPath"): m.get("name") for m in container.get("volumeMounts") or []}
            for match in re.findall(r"--state-dir\s+(\S+)", command):
                mount = next((m for m in mounts if match == m or match.startswith(m.rstrip("/") + "/")), None)
                if mount is None:
                    checks.fail(f"{cwhere}: --state-dir {match} is on no volume")
                elif "emptyDir" not in volumes.get(mounts[mount], {}):
                    checks.fail(f"{cwhere}: --state-dir {match} is not on an emptyDir")
            for mount_name in mounts.values():
                if mount_name not in volumes:
                    checks.fail(f"{cwhere}: volumeMount {mount_name!r} has no volume")
            if container.get("command", [None])[0] in ("/bin/sh", "sh") and "-c" in container.get("command", []):
                script = (container.get("args") or [""])[0]
                shell = shutil.which("dash") or shutil.which("sh")
                result = subprocess.run([shell, "-n"], input=script, text=True, capture_output=True)
                if result.returncode != 0:
                    checks.fail(f"{cwhere}: the shell script does not parse: {result.stderr.strip()}")
            resources = container.get("resources") or {}
            if not resources.get("requests") or "memory" not in (resources.get("limits") or {}):
                checks.fail(f"{cwhere}: no resource requests or no memory limit")


def main(argv):
    folder = argv[1] if len(argv) > 1 else "deploy/k8s"
    checks = Checks("k8s-validate", verbose=False)
    check(folder, checks)
    if checks.summary():
        return 1
    print(f"k8s-validate: {folder}: the Job, its Secret references and its command are consistent")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
