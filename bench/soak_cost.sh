#!/usr/bin/env bash
# What a soak costs: `linerate soak` for DURATION over a veth pair between two network
# namespaces this script creates (198.18.0.1 -> 198.18.0.2, `linerate serve` in the second),
# then prints the engines' rate (both directions, from the soak's JSON), the sampling cost on
# the soak's end (CPU time of the counter sampling, which soak reports, as % of one core and per
# sample), and the soak process's RSS at 10 s, at minute 1 and at the end (memory must stay flat).
#
#   sudo bench/soak_cost.sh              # 10 minutes, 1 s intervals
#   sudo bench/soak_cost.sh 90s 500ms    # DURATION INTERVAL
#   ROOT=fixtures/sysfs/cx4-edr-no-sm sudo -E bench/soak_cost.sh 2m
#                                        # counters from a fixture tree on both ends
#                                        # (default: the live system: the veth, with ethtool)
# Needs root (ip netns). Run it on an otherwise idle machine; it uses `nice` for nothing, on
# purpose: the figures are the soak's own.
set -euo pipefail
cd "$(dirname "$0")/.."
duration=${1:-10m}
interval=${2:-1s}
root=${ROOT:-/}
[ "$(id -u)" = 0 ] || {
    echo "soak_cost.sh: needs root for ip netns (sudo bench/soak_cost.sh)" >&2
    exit 2
}
command -v ip >/dev/null || {
    echo "soak_cost.sh: ip (iproute2) is needed" >&2
    exit 2
}
[ -d "$root" ] || {
    echo "soak_cost.sh: ROOT=$root is not a directory (expected / or a fixture tree)" >&2
    exit 2
}
cargo build --release --locked -q -p linerate
bin=$PWD/target/release/linerate
root=$(realpath "$root")
pid=$$
a=lrcost-$pid-a
b=lrcost-$pid-b
out=$(mktemp -d)
server=
cleanup() {
    # The server ends by our TERM: its status (143) is not the script's.
    if [ -n "$server" ]; then
        kill "$server" 2>/dev/null || true
        wait "$server" 2>/dev/null || true
    fi
    ip netns del "$a" 2>/dev/null || true
    ip netns del "$b" 2>/dev/null || true
    rm -rf "$out"
}
trap cleanup EXIT
ip netns add "$a"
ip netns add "$b"
ip -n "$a" link add "lrc${pid}a" type veth peer name "lrc${pid}b" netns "$b"
ip -n "$a" addr add 198.18.0.1/30 dev "lrc${pid}a"
ip -n "$b" addr add 198.18.0.2/30 dev "lrc${pid}b"
ip -n "$a" link set "lrc${pid}a" up
ip -n "$b" link set "lrc${pid}b" up
ip -n "$a" link set lo up
ip -n "$b" link set lo up

ip netns exec "$b" "$bin" serve -p 15302 --max-duration 86400 --root "$root" >"$out/serve.log" 2>&1 &
server=$!
for _ in $(seq 1 50); do
    grep -q listening "$out/serve.log" 2>/dev/null && break
    sleep 0.1
done

# `ip netns exec` execs the soak: $! is its pid, for /proc/$!/status.
ip netns exec "$a" "$bin" soak 198.18.0.2 -p 15302 --duration "$duration" --interval "$interval" \
    --root "$root" --json >"$out/soak.json" 2>"$out/soak.err" &
soak=$!
start=$(date +%s)
rss() { awk '/^VmRSS:/ {print $2}' "/proc/$soak/status" 2>/dev/null || true; }
rss10= rss60= rsslast=
while kill -0 "$soak" 2>/dev/null; do
    now=$(($(date +%s) - start))
    r=$(rss)
    [ -n "$r" ] && rsslast=$r
    [ -z "$rss10" ] && [ "$now" -ge 10 ] && rss10=$r
    [ -z "$rss60" ] && [ "$now" -ge 60 ] && rss60=$r
    sleep 1
done
status=0
wait "$soak" || status=$?
echo "soak: exit status $status (0 clean/insufficient, 1 marginal or bad, 2 stopped early)"
python3 - "$out/soak.json" "$out/soak.err" "${rss10:-}" "${rss60:-}" "${rsslast:-}" <<'PY'
import json, re, statistics, sys
doc_path, err_path, rss10, rss60, rsslast = sys.argv[1:6]
err = open(err_path).read()
try:
    d = json.load(open(doc_path))
except ValueError as e:
    sys.exit(f"no soak document ({e}); stderr:\n{err}")
dur = d["duration_s"] or 1e-9
moved = d["bytes_sent"] + d["bytes_received"]
print(f"duration {dur:.1f} s, verdict {d['verdict']} ({d['rule']})" + (f", error: {d['error']}" if d["error"] else ""))
print(f"engines: {moved * 8 / dur / 1e9:.2f} Gb/s through the soak's end "
      f"(sent {d['bytes_sent'] * 8 / dur / 1e9:.2f}, received {d['bytes_received'] * 8 / dur / 1e9:.2f})")
for end in ("local", "remote"):
    g = [i["gbps"] for i in d["timeline"] if i["end"] == end and i["end_s"] - i["start_s"] > 0.5 * d["params"]["interval_s"]]
    if g:
        print(f"  {end}: median {statistics.median(g):.2f} Gb/s per interval, min {min(g):.2f}, max {max(g):.2f}, {len(g)} intervals")
m = re.search(r"sampling: (\d+) samples on this host, ([\d.]+) ms CPU each, ([\d.]+)% of one core", err)
if m:
    print(f"sampling (soak's end): {m.group(3)}% of one core, {m.group(2)} ms CPU per sample, {m.group(1)} samples")
else:
    print("sampling: no figure on stderr:\n" + err)
kib = lambda v: f"{int(v) / 1024:.1f} MiB" if v else "n/a (the soak ended before)"
print(f"RSS of the soak: at 10 s {kib(rss10)}, at 1 min {kib(rss60)}, at the end {kib(rsslast)}")
PY
