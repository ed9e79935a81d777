"""The web's shape (issue 34): HTTPS from a new host on nearly every row, name look-ups and all, on one machine.

Run by scripts/bench/bench-web (which installs what is missing and builds mirror). What it sets up, and undoes at its end —
also on Ctrl-C or SIGTERM:

- a private CA made for the run (P-256), and a leaf for `*.bench.test`, the CA trusted system-wide
  (/usr/local/share/ca-certificates + update-ca-certificates, so curl, libcurl, aria2c and Python all verify as on
  the web; removed with update-ca-certificates --fresh at the end);
- a loopback address per host name (h00042.bench.test → 127.1.0.43): appended to /etc/hosts (its old text written
  back at the end), or, with --resolver unbound, answered by unbound on 127.0.0.1:53 with /etc/resolv.conf pointing
  at it (restored at the end);
- nginx over TLS 1.2/1.3 with HTTP/2 on every loopback address, the corpus under /img/, one worker, an access log
  with each request's connection number and whether its TLS session was resumed.

Tables: ROWS JPEG photos of the benchmark corpus spread round-robin over HOSTS host names (HOSTS = ROWS: a LAION-
shaped table; 50: a few CDNs). Tools, 64 at once, output on tmpfs, interleaved, REPS times: mirror with its defaults
(robots.txt honoured: nginx answers 404), mirror --ignore-robots, curl --parallel, aria2c, img2dataset (no
re-encoding). Reported: images/s, CPU ms per image (user + sys of the tree), peak RSS, TCP connections and TLS
handshakes (full and resumed) from nginx's log.
"""
import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))  # scripts/lib
import benchlib  # noqa: E402
from mirrorscripts import free_port, wait_for_port  # noqa: E402

CA_NAME = "mirror-bench-web-ca"
CA_FILE = f"/usr/local/share/ca-certificates/{CA_NAME}.crt"


def run(argv, **kwargs):
    return subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, **kwargs)


def host(index):
    return f"h{index:05d}.bench.test"


def address(index):
    return f"127.1.{(index + 1) // 250}.{(index + 1) % 250 + 1}"


class Machine:
    """What the benchmark changes on the machine, undone by undo() whatever happened."""

    def __init__(self, work, hosts, resolver):
        self.work = work
        self.undos = []
        self.hosts = hosts
        self.resolver = resolver

    def undo(self):
        while self.undos:
            action = self.undos.pop()
            try:
                action()
            except Exception as error:  # noqa: BLE001 — keep undoing the rest
                benchlib.log(f"bench-web: could not undo a change: {error}")

    def make_certificates(self):
        ca_key, ca_crt = os.path.join(self.work, "ca.key"), os.path.join(self.work, "ca.crt")
        leaf_key, leaf_csr, leaf_crt = (os.path.join(self.work, name) for name in ("leaf.key", "leaf.csr", "leaf.crt"))
        extensions = os.path.join(self.work, "leaf.ext")
        run(["openssl", "ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", ca_key])
        run(["openssl", "req", "-x509", "-new", "-key", ca_key, "-days", "2", "-subj", "/CN=mirror bench web CA", "-out", ca_crt])
        run(["openssl", "ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", leaf_key])
        run(["openssl", "req", "-new", "-key", leaf_key, "-subj", "/CN=*.bench.test", "-out", leaf_csr])
        with open(extensions, "w") as handle:
            handle.write("subjectAltName=DNS:*.bench.test\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature\n"
                         "extendedKeyUsage=serverAuth\n")
        run(["openssl", "x509", "-req", "-in", leaf_csr, "-CA", ca_crt, "-CAkey", ca_key, "-CAcreateserial", "-days", "2",
             "-extfile", extensions, "-out", leaf_crt])
        shutil.copy(ca_crt, CA_FILE)
        self.undos.append(lambda: (os.path.exists(CA_FILE) and os.remove(CA_FILE), run(["update-ca-certificates", "--fresh"])))
        run(["update-ca-certificates"])
        return leaf_crt, leaf_key

    def name_hosts(self):
        lines = "".join(f"{address(index)} {host(index)}\n" for index in range(self.hosts))
        if self.resolver == "hosts":
            with open("/etc/hosts") as handle:
                original = handle.read()
            self.undos.append(lambda: open("/etc/hosts", "w").write(original))  # in place: it may be a bind mount
            with open("/etc/hosts", "a") as handle:
                handle.write("\n# mirror bench-web\n" + lines)
            return
        config = os.path.join(self.work, "unbound.conf")
        with open(config, "w") as handle:
            handle.write("server:\n  interface: 127.0.0.1\n  port: 53\n  do-daemonize: no\n  username: \"\"\n"
                         f"  chroot: \"\"\n  directory: \"{self.work}\"\n  pidfile: \"{self.work}/unbound.pid\"\n"
                         "  access-control: 127.0.0.0/8 allow\n  num-threads: 1\n  verbosity: 0\n"
                         "  local-zone: \"bench.test.\" static\n")
            for index in range(self.hosts):
                handle.write(f"  local-data: \"{host(index)}. 3600 IN A {address(index)}\"\n")
        process = subprocess.Popen(["unbound", "-d", "-c", config], stdout=subprocess.DEVNULL,
                                   stderr=open(os.path.join(self.work, "unbound.log"), "w"))
        self.undos.append(lambda: (process.terminate(), process.wait(10)))
        deadline = time.monotonic() + 20
        while subprocess.run(["getent", "hosts", "localhost"], stdout=subprocess.DEVNULL).returncode != 0 and time.monotonic() < deadline:
            time.sleep(0.1)
        with open("/etc/resolv.conf") as handle:
            original = handle.read()
        self.undos.append(lambda: open("/etc/resolv.conf", "w").write(original))
        with open("/etc/resolv.conf", "w") as handle:
            handle.write("nameserver 127.0.0.1\n")
        time.sleep(0.5)
        answer = subprocess.run(["getent", "hosts", host(0)], capture_output=True, text=True).stdout
        if address(0) not in answer:
            raise SystemExit(f"bench-web: unbound does not answer {host(0)} (got {answer!r}); see {self.work}/unbound.log")


class TLSNginx:
    def __init__(self, corpus, state, certificate, key):
        self.state = state
        os.makedirs(state, exist_ok=True)
        self.port = free_port()
        self.log = os.path.join(state, "access.log")
        config = f"""
daemon off;
user root root;
worker_processes 1;
pid {state}/nginx.pid;
error_log {state}/error.log warn;
events {{ worker_connections 16384; }}
http {{
    default_type application/octet-stream;
    log_format connections '$connection $ssl_session_reused $ssl_protocol $host $request_uri $status';
    access_log {self.log} connections buffer=256k flush=1s;
    sendfile on;
    keepalive_requests 100000;
    keepalive_timeout 300s;
    ssl_session_cache shared:SSL:20m;
    client_body_temp_path {state}/body;
    proxy_temp_path {state}/proxy;
    fastcgi_temp_path {state}/fastcgi;
    uwsgi_temp_path {state}/uwsgi;
    scgi_temp_path {state}/scgi;
    server {{
        listen 0.0.0.0:{self.port} ssl http2 backlog=8192;
        server_name *.bench.test;
        ssl_certificate {certificate};
        ssl_certificate_key {key};
        ssl_protocols TLSv1.2 TLSv1.3;
        allow 127.0.0.0/8;
        deny all;
        location /img/ {{ alias {corpus}/; }}
    }}
}}
"""
        path = os.path.join(state, "nginx.conf")
        with open(path, "w") as handle:
            handle.write(config)
        self.process = subprocess.Popen(["/usr/sbin/nginx", "-e", f"{state}/error.log", "-p", state, "-c", path],
                                        stdout=subprocess.DEVNULL, stderr=open(os.path.join(state, "stderr.log"), "w"))
        wait_for_port(self.port)

    def reset_log(self):
        open(self.log, "w").close()
        self.process.send_signal(signal.SIGUSR1)  # reopen
        time.sleep(0.2)

    def connections(self):
        """(TCP connections, TLS handshakes resumed) seen in the log since its reset (flushed first)."""
        self.process.send_signal(signal.SIGUSR1)
        time.sleep(1.2)
        connections, resumed = {}, set()
        with open(self.log) as handle:
            for line in handle:
                fields = line.split()
                if len(fields) < 2:
                    continue
                connections[fields[0]] = fields[1]
                if fields[1] == "r":
                    resumed.add(fields[0])
        return len(connections), len(resumed)

    def stop(self):
        self.process.send_signal(signal.SIGQUIT)
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()


def command(tool, mirror, venv_bin, table, urls, out, concurrency):
    if tool.startswith("mirror"):
        argv = [mirror, "urls", table, "--out", out, "--concurrency", str(concurrency), "--quiet"]
        return argv + (["--ignore-opt-out", "robots,content-signal,content-usage,tdmrep-file"] if tool == "mirror-ignore-robots" else [])
    if tool == "curl":
        config = table + ".curlrc"
        with open(config, "w") as handle:
            for url in urls:
                handle.write(f'url = "{url}"\n')
        return ["curl", "--parallel", "--parallel-immediate", "--parallel-max", str(concurrency), "--fail", "--silent",
                "--show-error", "--remote-name-all", "--output-dir", out, "--config", config]
    if tool == "aria2c":
        return ["aria2c", "--input-file", table, "--dir", out, "--max-concurrent-downloads", str(concurrency),
                "--max-connection-per-server", "1", "--split", "1", "--quiet=true", "--console-log-level=error",
                "--summary-interval=0", "--file-allocation=none", "--allow-overwrite=true", "--auto-file-renaming=false",
                "--auto-save-interval=0", "--no-conf=true"]
    if tool == "img2dataset":
        return [os.path.join(venv_bin, "img2dataset"), "--url_list", table, "--input_format", "txt", "--output_folder", out,
                "--output_format", "files", "--resize_mode", "no", "--disable_all_reencoding", "True", "--processes_count", "1",
                "--thread_count", str(concurrency), "--timeout", "30", "--retries", "0", "--extract_exif", "False",
                "--disallowed_header_directives", "[]", "--enable_wandb", "False"]
    raise ValueError(tool)


def count_images(out):
    total = 0
    for _, _, files in os.walk(out):
        total += sum(name.endswith(".jpg") for name in files)
    return total


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mirror", action="append", required=True, help="a mirror binary (give two: before and after)")
    parser.add_argument("--venv-bin", required=True)
    parser.add_argument("--rows", type=int, default=2000)
    parser.add_argument("--hosts", default="2000,50")
    parser.add_argument("--reps", type=int, default=2)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--resolver", choices=["hosts", "unbound"], default="hosts")
    parser.add_argument("--tools", default="mirror,mirror-ignore-robots,curl,aria2c,img2dataset")
    parser.add_argument("--output", help="write the results as JSON here too")
    args = parser.parse_args()

    corpus_dir, _, photos = benchlib.corpus_photos(args.rows, "bench-web")
    host_counts = [int(value) for value in args.hosts.split(",")]
    work = tempfile.mkdtemp(prefix="mirror-bench-web-", dir="/dev/shm")
    machine = Machine(work, max(host_counts), args.resolver)

    def stop(signum, _frame):
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, stop)
    results = []
    nginx = None
    try:
        certificate, key = machine.make_certificates()
        machine.name_hosts()
        nginx = TLSNginx(corpus_dir, os.path.join(work, "nginx"), certificate, key)
        tools = []
        for tool in args.tools.split(","):
            if tool.startswith("mirror"):
                tools += [(f"{tool}@{index}" if len(args.mirror) > 1 else tool, tool, binary) for index, binary in enumerate(args.mirror)]
            else:
                tools.append((tool, tool, None))
        env = dict(os.environ, NO_ALBUMENTATIONS_UPDATE="1", SWIFT_BACKTRACE="enable=no")
        for hosts in host_counts:
            table = os.path.join(work, f"table-{hosts}.txt")
            urls = [f"https://{host(row % hosts)}:{nginx.port}/img/{name}" for row, name in enumerate(photos)]
            with open(table, "w") as handle:
                handle.write("\n".join(urls) + "\n")
            for rep in range(args.reps):
                order = tools if rep % 2 == 0 else list(reversed(tools))
                for label, tool, binary in order:
                    out = os.path.join(work, "out")
                    shutil.rmtree(out, ignore_errors=True)
                    os.makedirs(out)
                    env["XDG_CACHE_HOME"] = os.path.join(work, "xdg")
                    shutil.rmtree(env["XDG_CACHE_HOME"], ignore_errors=True)
                    nginx.reset_log()
                    argv = command(tool, binary, args.venv_bin, table, urls, out, args.concurrency)
                    measured = benchlib.measure(argv, env, os.path.join(work, "stdout"), os.path.join(work, "stderr"), timeout=900)
                    connections, resumed = nginx.connections()
                    saved = count_images(out)
                    row = {"hosts": hosts, "rep": rep, "tool": label, "saved": saved, "rows": len(urls), "exit": measured["exit"],
                           "images_per_s": saved / measured["wall"], "cpu_ms": (measured["user"] + measured["sys"]) * 1000 / len(urls),
                           "rss_mb": max(measured["rss_max_process"], measured["rss_tree_sampled"]) / 1e6,
                           "connections": connections, "resumed": resumed, "wall": measured["wall"]}
                    results.append(row)
                    benchlib.log(f"bench-web: {hosts} hosts rep {rep} {label}: {saved}/{len(urls)} in {measured['wall']:.1f}s, "
                              f"{row['images_per_s']:.0f}/s, {row['cpu_ms']:.2f} ms CPU/image, {row['rss_mb']:.0f} MB, "
                              f"{connections} connections ({resumed} resumed), exit {measured['exit']}")
    finally:
        if nginx:
            nginx.stop()
        machine.undo()
        shutil.rmtree(work, ignore_errors=True)
    if args.output:
        with open(args.output, "w") as handle:
            json.dump(results, handle, indent=1)
    print(f"| {args.rows} rows, names via {args.resolver} | hosts | images/s | CPU ms per image | peak RSS | TCP connections | TLS resumed | saved |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for hosts in host_counts:
        for label in dict.fromkeys(row["tool"] for row in results):
            rows = [row for row in results if row["tool"] == label and row["hosts"] == hosts]
            if not rows:
                continue
            med = lambda key: statistics.median(row[key] for row in rows)  # noqa: E731
            print(f"| {label} | {hosts} | {med('images_per_s'):.0f} | {med('cpu_ms'):.2f} | {med('rss_mb'):.0f} MB | "
                  f"{med('connections'):.0f} | {med('resumed'):.0f} | {min(row['saved'] for row in rows)}/{rows[0]['rows']} |")


if __name__ == "__main__":
    main()
