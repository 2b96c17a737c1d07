#!/usr/bin/env bash
# What a soak costs, in two parts.
#
# 1. An active soak: `linerate soak` for DURATION over a veth pair between two network
#    namespaces this script creates (198.18.0.1 -> 198.18.0.2, `linerate serve` in the
#    second), then the engines' rate (both directions, from the soak's JSON), the sampling cost
#    on the soak's end (CPU time of the counter sampling, which soak reports, as % of one core
#    and per sample), and the soak process's RSS at 10 s, at minute 1 and at the end (memory
#    must stay flat).
# 2. The sampling alone at PORTS ports (PORTS=0 skips it): passive soaks (`soak --passive`, no
#    traffic) on a fixture tree of PORTS InfiniBand ports (ConnectX-3 at 4X QDR, as
#    bench/watch_cpu.sh makes it) every 0.1 s for SAMPLE_S seconds, the CPU each sample costs as
#    soak reports it, against the loop people write over the same counter files
#    (`xargs cat < FILES`, CPU per pass); then, with strace, the files each opens and the reads
#    it makes per sample.
#
# With BASE=path/to/an/earlier/linerate both parts run it too, alternating with LINERATE
# (ROUNDS rounds, default 1 for part 1 and 3 for part 2), and print the ratios.
#
#   sudo bench/soak_cost.sh              # 10 minutes, 1 s intervals; then 64 ports
#   sudo bench/soak_cost.sh 90s 500ms    # DURATION INTERVAL
#   ROOT=fixtures/sysfs/cx4-edr-no-sm sudo -E bench/soak_cost.sh 2m
#                                        # part 1's counters from a fixture tree on both ends
#                                        # (default: the live system: the veth, with ethtool
#                                        # and its statistics from one rtnetlink dump)
#   BASE=/tmp/old/linerate PORTS=512 sudo -E bench/soak_cost.sh 60s
# Needs root (ip netns). Run it on an otherwise idle machine; it uses `nice` for nothing, on
# purpose: the figures are the soak's own.
set -euo pipefail
cd "$(dirname "$0")/.."
duration=${1:-10m}
interval=${2:-1s}
root=${ROOT:-/}
PORTS=${PORTS:-64}
SAMPLE_S=${SAMPLE_S:-20}
base=${BASE:-}
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
[ -z "$base" ] || [ -x "$base" ] || {
    echo "soak_cost.sh: BASE=$base is not an executable" >&2
    exit 2
}
bin=${LINERATE:-$PWD/target/release/linerate}
[ -n "${LINERATE:-}" ] || cargo build --release --locked -q -p linerate
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
tools=()
[ -n "$base" ] && tools+=("before:$base")
tools+=("after:$bin")

ip netns add "$a"
ip netns add "$b"
ip -n "$a" link add "lrc${pid}a" type veth peer name "lrc${pid}b" netns "$b"
ip -n "$a" addr add 198.18.0.1/30 dev "lrc${pid}a"
ip -n "$b" addr add 198.18.0.2/30 dev "lrc${pid}b"
ip -n "$a" link set "lrc${pid}a" up
ip -n "$b" link set "lrc${pid}b" up
ip -n "$a" link set lo up
ip -n "$b" link set lo up

# active LABEL EXE: one active soak with EXE on both ends; its figures.
active() {
    local label=$1 exe=$2
    ip netns exec "$b" "$exe" serve -p 15302 --max-duration 86400 --root "$root" >"$out/serve.log" 2>&1 &
    server=$!
    for _ in $(seq 1 50); do
        grep -q listening "$out/serve.log" 2>/dev/null && break
        sleep 0.1
    done
    # `ip netns exec` execs the soak: $! is its pid, for /proc/$!/status.
    ip netns exec "$a" "$exe" soak 198.18.0.2 -p 15302 --duration "$duration" --interval "$interval" \
        --root "$root" --json >"$out/soak.json" 2>"$out/soak.err" &
    local soak=$!
    local start now r rss10= rss60= rsslast=
    start=$(date +%s)
    while kill -0 "$soak" 2>/dev/null; do
        now=$(($(date +%s) - start))
        r=$(awk '/^VmRSS:/ {print $2}' "/proc/$soak/status" 2>/dev/null || true)
        [ -n "$r" ] && rsslast=$r
        [ -z "$rss10" ] && [ "$now" -ge 10 ] && rss10=$r
        [ -z "$rss60" ] && [ "$now" -ge 60 ] && rss60=$r
        sleep 1
    done
    local status=0
    wait "$soak" || status=$?
    kill "$server" 2>/dev/null || true
    wait "$server" 2>/dev/null || true
    server=
    echo "== $label ($exe)"
    echo "soak: exit status $status (0 clean/insufficient, 1 marginal or bad, 2 stopped early)"
    python3 - "$out/soak.json" "$out/soak.err" "${rss10:-}" "${rss60:-}" "${rsslast:-}" "$label" "$out/active" <<'PY'
import json, re, statistics, sys
doc_path, err_path, rss10, rss60, rsslast, label, rows = sys.argv[1:8]
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
    with open(rows, "a") as f:
        f.write(f"{label}\t{m.group(2)}\n")
else:
    print("sampling: no figure on stderr:\n" + err)
kib = lambda v: f"{int(v) / 1024:.1f} MiB" if v else "n/a (the soak ended before)"
print(f"RSS of the soak: at 10 s {kib(rss10)}, at 1 min {kib(rss60)}, at the end {kib(rsslast)}")
PY
}

echo "Part 1: an active soak, $duration at $interval, counters under $root; $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq 1 "${ROUNDS:-1}"); do
    for t in "${tools[@]}"; do
        active "${t%%:*}" "${t#*:}"
    done
done
if [ -n "$base" ]; then
    awk -F'\t' '{ s[$1] += $2; n[$1]++ }
        END { if (n["before"] && n["after"]) printf "sampling per sample, mean of the rounds: before %.3f ms, after %.3f ms: %.2fx\n", s["before"] / n["before"], s["after"] / n["after"], (s["after"] / n["after"]) / (s["before"] / n["before"]) }' "$out/active"
fi

[ "$PORTS" -gt 0 ] || exit 0

# Part 2: the sampling alone on a tree of PORTS InfiniBand ports.
tree=$out/tree
cp -a fixtures/sysfs/cx3-fdr-at-qdr-datagram "$tree"
class=$tree/sys/class/infiniband
target=$(readlink "$class/mlx4_0")
real=$(cd "$class" && cd "$(dirname "$target")" && pwd)
for i in $(seq 1 $((PORTS - 1))); do
    cp -a "$real/mlx4_0" "$real/mlx4_$i"
    ln -s "$(dirname "$target")/mlx4_$i" "$class/mlx4_$i"
done
ls "$tree"/sys/class/infiniband/*/ports/*/counters/* "$tree"/sys/class/net/*/statistics/* >"$out/files"
nfiles=$(wc -l <"$out/files")
passes=${PASSES:-50}
echo
echo "Part 2: the sampling alone, $PORTS InfiniBand ports of a fixture tree ($nfiles counter files), passive soaks of ${SAMPLE_S} s at 0.1 s, ${ROUNDS:-3} rounds"
echo
echo "| run | CPU per sample (or pass) |"
echo "|---|---|"
: >"$out/rows"
for r in $(seq 1 "${ROUNDS:-3}"); do
    for t in "${tools[@]}"; do
        label=${t%%:*}
        "${t#*:}" soak --passive --root "$tree" --duration "${SAMPLE_S}s" --interval 100ms --json \
            >/dev/null 2>"$out/passive.err" || true
        ms=$(sed -n 's/.*samples on this host, \([0-9.]*\) ms CPU each.*/\1/p' "$out/passive.err")
        echo "| linerate soak --passive $label | ${ms:-?} ms |"
        echo "linerate soak --passive $label	${ms:-0}" >>"$out/rows"
    done
    cpu=$(/usr/bin/time -f "%U %S" sh -c "for i in \$(seq 1 $passes); do xargs cat < $out/files > /dev/null; done" 2>&1 >/dev/null | tail -1)
    ms=$(echo "$cpu" | awk -v p="$passes" '{ printf "%.3f", 1000 * ($1 + $2) / p }')
    echo "| xargs cat (the same files) | $ms ms |"
    echo "xargs cat (the same files)	$ms" >>"$out/rows"
done
echo
echo "| run | median CPU per sample | ratio to the cat loop |"
echo "|---|---|---|"
awk -F'\t' '
    { v[$1] = v[$1] " " $2 }
    END {
        for (k in v) {
            n = split(substr(v[k], 2), a, " ")
            for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
            m[k] = (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
        }
        cat = m["xargs cat (the same files)"]
        for (k in m) printf "| %s | %.3f ms | %.2fx |\n", k, m[k], (cat > 0 ? m[k] / cat : 0)
    }' "$out/rows" | sort

command -v strace >/dev/null || exit 0
# Per sample: strace's counts over a run of 25 samples less one of 5 (not the start).
counts() {
    local name=$1 cmd=$2
    strace -f -qq -c -U name,calls -o "$out/s1" sh -c "${cmd//@N@/5}" >/dev/null 2>&1 || true
    strace -f -qq -c -U name,calls -o "$out/s2" sh -c "${cmd//@N@/25}" >/dev/null 2>&1 || true
    awk -v n="$name" '
        FNR == NR { a[$1] = $2; next }
        { b[$1] = $2 }
        END {
            o = (b["openat"] - a["openat"]) / 20
            r = (b["read"] + b["pread64"] - a["read"] - a["pread64"]) / 20
            p = (b["pread64"] - a["pread64"]) / 20
            printf "| %s | %.0f | %.0f | %.0f |\n", n, o, r, p
        }' "$out/s1" "$out/s2"
}
echo
echo "Per sample (strace, the calls of 25 samples less those of 5):"
echo
echo "| run | files opened | reads (read, pread64) | of which pread64 |"
echo "|---|---|---|---|"
for t in "${tools[@]}"; do
    # N samples at 0.1 s: a duration of N/10 s.
    counts "linerate soak --passive ${t%%:*}" "${t#*:} soak --passive --root $tree --interval 100ms --duration @N@00ms --json"
done
counts "xargs cat (the same files)" "for i in \$(seq 1 @N@); do xargs cat < $out/files > /dev/null; done"
