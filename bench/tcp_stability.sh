#!/usr/bin/env bash
# TCP stability as a measured property: N single-stream runs of linerate and iperf3 on loopback,
# alternating A B A B, at equal write sizes (128 KiB and 1 MiB by default). For each tool and size:
# median, min, max and the coefficient of variation (population stdev / mean) of the runs, and
# the receiver's CPU; then the ratio of the medians. Targets (issue #16): linerate ≥ 1.0 × iperf3
# and its CV no worse than iperf3's.
# Each run is traced: five times during it, the CPU each end's stream thread last ran on
# (`ps -L -o psr`; linerate's threads are named stream-N, iperf3 has one thread per process),
# and once the receiving socket's `ss -ti` (rcv_space: what receive autotuning grew the window
# to). The table gives, per tool, the share of samples with both ends on the same CPU, and the
# median rate of the runs that mostly shared one against those that did not.
# Usage: bench/tcp_stability.sh [--runs N] [--time SECS] [--sizes 128K,1M] [--linerate PATH]
#                               [--affinity C,S]
#   --affinity C,S: pin the receiving (server) process to CPU S and the sender to CPU C, for
#   both tools (taskset), to compare with the unpinned default.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=10
secs=3
sizes=128K,1M
lr=target/release/linerate
affinity=
while (($#)); do
    case "$1" in
        --runs) runs=$2; shift 2 ;;
        --time) secs=$2; shift 2 ;;
        --sizes) sizes=$2; shift 2 ;;
        --linerate) lr=$2; shift 2 ;;
        --affinity) affinity=$2; shift 2 ;;
        *) echo "usage: $0 [--runs N] [--time SECS] [--sizes 128K,1M] [--linerate PATH] [--affinity C,S]" >&2; exit 2 ;;
    esac
done
((runs >= 2 && runs <= 50)) || { echo "--runs: 2..50" >&2; exit 2; }
((secs >= 1 && secs <= 60)) || { echo "--time: 1..60 s" >&2; exit 2; }
[[ $sizes =~ ^[0-9]+[KM]?(,[0-9]+[KM]?)*$ ]] || { echo "--sizes: a comma-separated list like 128K,1M" >&2; exit 2; }
cli_pin=(); srv_pin=()
if [[ -n $affinity ]]; then
    [[ $affinity =~ ^([0-9]+),([0-9]+)$ ]] || { echo "--affinity: C,S (two CPU numbers)" >&2; exit 2; }
    cli_pin=(taskset -c "${BASH_REMATCH[1]}"); srv_pin=(taskset -c "${BASH_REMATCH[2]}")
fi
[ -x "$lr" ] || cargo build --release --locked -q
command -v iperf3 >/dev/null || { echo "iperf3 is not installed (bench/compare.sh --install)" >&2; exit 2; }

lport=$((15301 + $$ % 1000)); iport=$((16201 + $$ % 1000))
work=$(mktemp -d)
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
"${srv_pin[@]}" "$lr" serve -B 127.0.0.1 -p "$lport" >/dev/null 2>&1 & pids+=($!); lsrv=$!
"${srv_pin[@]}" iperf3 -s -B 127.0.0.1 -p "$iport" >/dev/null 2>&1 & pids+=($!); isrv=$!
sleep 0.5
echo "uptime before: $(uptime)" >&2

# The CPU the stream thread of process $1 last ran on (linerate: the thread named stream-0;
# iperf3: its one thread).
stream_cpu() {
    ps -L -o psr=,comm= -p "$1" 2>/dev/null | awk '$2 ~ /^stream-0$|^iperf3$/ {print $1; exit}'
}

# Five samples spread over a run.
nap=$(python3 -c "print($secs / 7)")

# One traced run; prints "gbps receiver_cpu_percent same_cpu_share rcv_space".
run_one() {
    local tool=$1 size=$2 out=$work/out.json srv port
    if [[ $tool == linerate ]]; then
        srv=$lsrv; port=$lport
        "${cli_pin[@]}" "$lr" bench 127.0.0.1 -p "$lport" -t "$secs" -l "$size" -J > "$out" &
    else
        srv=$isrv; port=$iport
        "${cli_pin[@]}" iperf3 -c 127.0.0.1 -p "$iport" -t "$secs" -l "$size" -J > "$out" &
    fi
    local cli=$! same=0 seen=0 space=0
    for k in 1 2 3 4 5; do
        sleep "$nap"
        local a b
        a=$(stream_cpu "$cli"); b=$(stream_cpu "$srv")
        if [[ -n $a && -n $b ]]; then
            seen=$((seen + 1)); [[ $a == "$b" ]] && same=$((same + 1))
        fi
        if ((k == 2)); then
            # The receiving socket: the server's end of the data connection (local port = port).
            space=$(ss -tinH state established "( sport = :$port )" 2>/dev/null |
                grep -o 'rcv_space:[0-9]*' | cut -d: -f2 | sort -n | tail -1)
        fi
    done
    timeout $((secs + 30)) tail --pid="$cli" -f /dev/null || kill "$cli" 2>/dev/null || true
    wait "$cli" || true
    local share; share=$(python3 -c "print(round($same / max($seen, 1), 2))")
    if [[ $tool == linerate ]]; then
        python3 -c 'import json,sys; t=json.load(open(sys.argv[1]))["tests"][0]; print(t["gbps"], (t.get("receiver") or {}).get("cpu_percent", 0), end=" ")' "$out"
    else
        python3 -c 'import json,sys; e=json.load(open(sys.argv[1]))["end"]; print(e["sum_received"]["bits_per_second"]/1e9, e["cpu_utilization_percent"]["remote_total"], end=" ")' "$out"
    fi
    echo "$share ${space:-0}"
}

# One run of each, alternating; lines "tool size gbps receiver_cpu share rcv_space" into $work/runs.
for size in ${sizes//,/ }; do
    for ((i = 1; i <= runs; i++)); do
        a=$(run_one linerate "$size")
        b=$(run_one iperf3 "$size")
        echo "linerate $size $a" >> "$work/runs"
        echo "iperf3 $size $b" >> "$work/runs"
        echo "$size run $i: linerate $a | iperf3 $b  (Gb/s, receiver CPU %, same-CPU share, rcv_space)" >&2
    done
done
echo "uptime after: $(uptime)" >&2

python3 - "$work/runs" "$runs" "$secs" "${affinity:-none}" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    tool, size, g, cpu, share, space = line.split()
    rows.setdefault((size, tool), []).append((float(g), float(cpu), float(share), int(space)))
print(f"{sys.argv[2]} runs of {sys.argv[3]} s per tool and size, alternating; one stream on loopback; pinning: {sys.argv[4]}")
print("| write size | tool | median Gb/s | min–max | CV | receiver CPU % (median) | same-CPU share (mean) | Gb/s sharing / apart (runs) | rcv_space KiB (median) |")
print("|---|---|---|---|---|---|---|---|---|")
stats = {}
med = lambda v: f"{statistics.median(v):.1f} ({len(v)})" if v else "– (0)"
for (size, tool), v in sorted(rows.items()):
    g = [x[0] for x in v]
    mean = statistics.fmean(g)
    cv = statistics.pstdev(g) / mean if mean > 0 else 0.0
    stats[(size, tool)] = (statistics.median(g), cv)
    shared = [x[0] for x in v if x[2] >= 0.5]
    apart = [x[0] for x in v if x[2] < 0.5]
    print(f"| {size} | {tool} | {statistics.median(g):.1f} | {min(g):.1f}–{max(g):.1f} | {cv*100:.1f}% | "
          f"{statistics.median(x[1] for x in v):.0f} | {statistics.fmean(x[2] for x in v):.2f} | "
          f"{med(shared)} / {med(apart)} | {statistics.median(x[3] for x in v) / 1024:.0f} |")
print()
print("| write size | linerate / iperf3 (medians) | CV linerate vs iperf3 | target |")
print("|---|---|---|---|")
for size in sorted({s for s, _ in rows}):
    (ml, cl), (mi, ci) = stats[(size, "linerate")], stats[(size, "iperf3")]
    ok = ml / mi >= 1.0 and cl <= ci
    print(f"| {size} | {ml/mi:.2f} | {cl*100:.1f}% vs {ci*100:.1f}% | {'PASS' if ok else 'FAIL'} (≥ 1.0, CV no worse) |")
PY
