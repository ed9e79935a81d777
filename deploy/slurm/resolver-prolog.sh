#!/bin/bash
# A caching DNS resolver on each node, for mirror's array tasks (SCALING.md, "DNS"). Installed by the cluster's
# administrators as a SLURM prolog, which runs as root on a node before a job's first step there:
#
#   slurm.conf:   Prolog=/etc/slurm/prolog.d/*          (then: scontrol reconfigure)
#   on each node: apt-get install unbound               (Debian's; the service itself may stay disabled)
#                 install -m 0755 deploy/slurm/resolver-prolog.sh /etc/slurm/prolog.d/mirror-resolver.sh
#                 install -D -m 0644 deploy/resolver/unbound.conf /etc/mirror/unbound.conf.in
#
# It starts unbound once per node, forwarding to the resolver the node used so far, and points the node's
# /etc/resolv.conf at it; every later job finds it running and changes nothing. An array task that finds no local
# resolver says so on stderr (deploy/slurm/mirror-array.sbatch) and runs anyway. To undo: stop unbound and restore
# /run/mirror-resolver/resolv.conf.orig. A prolog that fails drains the node, so every failure here exits 0.
state=/run/mirror-resolver
command -v unbound >/dev/null 2>&1 || exit 0
[ -f /etc/mirror/unbound.conf.in ] || exit 0
if [ -f "$state/pid" ] && kill -0 "$(cat "$state/pid")" 2>/dev/null; then
  exit 0
fi
upstream=$(awk '$1 == "nameserver" && $2 !~ /^127\./ { print $2; exit }' /etc/resolv.conf)
[ -n "$upstream" ] || upstream=$(awk '$1 == "nameserver" && $2 !~ /^127\./ { print $2; exit }' "$state/resolv.conf.orig" 2>/dev/null)
[ -n "$upstream" ] || exit 0
mkdir -p "$state"
sed "s/@UPSTREAM@/$upstream/" /etc/mirror/unbound.conf.in > "$state/unbound.conf"
setsid unbound -d -c "$state/unbound.conf" < /dev/null > "$state/unbound.log" 2>&1 &
echo $! > "$state/pid"
# Point the node at it only once it answers (a TCP connect to port 53 within 5 s); otherwise leave DNS as it was.
tries=0
until (exec 3<>/dev/tcp/127.0.0.1/53) 2>/dev/null || [ "$tries" -ge 50 ]; do sleep 0.1; tries=$((tries + 1)); done
if [ "$tries" -lt 50 ] && [ ! -f "$state/resolv.conf.orig" ]; then
  cp /etc/resolv.conf "$state/resolv.conf.orig"
  { echo "nameserver 127.0.0.1"; grep -v '^nameserver' "$state/resolv.conf.orig"; } > "$state/resolv.conf.new"
  cat "$state/resolv.conf.new" > /etc/resolv.conf
fi
exit 0
