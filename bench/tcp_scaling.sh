#!/usr/bin/env bash
# TCP scaling: 1, 2, 4 and 8 streams on loopback and on a veth pair between two network
# namespaces this script creates and removes, linerate against iperf3 and iperf2, each at its
# default write size and at equal write sizes; one table of medians (Gb/s of payload received).
#   linerate default: 1 MiB writes for 1 stream, 256 KiB for 2-8
#     (proto's default_length); iperf3 and iperf2 default: 128 KiB.
#   equal: every tool at linerate's default for that stream count (-l), and linerate at
#     128 KiB, the peers' default: both pairings are in the table.
# Note: iperf3 3.12 runs every stream in one thread; iperf2 and linerate use a thread per stream.
# The veth half needs root (ip netns); without it only loopback is measured.
# Usage: bench/tcp_scaling.sh [--rounds N] [--time SECS] [--streams 1,2,4,8] [--paths lo,veth]
#                             [--linerate PATH]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=2
secs=3
streams=1,2,4,8
paths=lo,veth
lr=target/release/linerate
while (($#)); do
    case "$1" in
        --rounds) rounds=$2; shift 2 ;;
        --time) secs=$2; shift 2 ;;
        --streams) streams=$2; shift 2 ;;
        --paths) paths=$2; shift 2 ;;
        --linerate) lr=$2; shift 2 ;;
        *) echo "usage: $0 [--rounds N] [--time SECS] [--streams 1,2,4,8] [--paths lo,veth] [--linerate PATH]" >&2; exit 2 ;;
    esac
done
((rounds >= 1 && rounds <= 20)) || { echo "--rounds: 1..20" >&2; exit 2; }
((secs >= 1 && secs <= 60)) || { echo "--time: 1..60 s" >&2; exit 2; }
[[ $streams =~ ^[0-9]+(,[0-9]+)*$ ]] || { echo "--streams: a list like 1,2,4,8" >&2; exit 2; }
[[ $paths =~ ^(lo|veth)(,(lo|veth))*$ ]] || { echo "--paths: lo, veth or both" >&2; exit 2; }
[ -x "$lr" ] || cargo build --release --locked -q
for t in iperf3 iperf python3; do
    command -v "$t" >/dev/null || { echo "$t is not installed (bench/compare.sh --install)" >&2; exit 2; }
done

# linerate's default write size for n streams (proto::defaults::default_length).
lr_default() {
    (($1 <= 1)) && { echo 1024K; return; }
    local per=$(((2 << 20) / $1))
    ((per > 256 << 10)) && per=$((256 << 10))
    ((per < 128 << 10)) && per=$((128 << 10))
    local p=1
    while ((p * 2 <= per)); do p=$((p * 2)); done
    echo $((p >> 10))K
}

tag=lrsc$$
nsa=$tag-a; nsb=$tag-b
work=$(mktemp -d)
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    ip netns del "$nsa" 2>/dev/null || true
    ip netns del "$nsb" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

lport=$((17301 + $$ % 1000)); i3port=$((18201 + $$ % 1000)); i2port=$((19101 + $$ % 1000))
# Servers of one path: in namespace $2 (empty: this one), on address $1.
start_servers() {
    local addr=$1 ns=()
    [[ -n $2 ]] && ns=(ip netns exec "$2")
    "${ns[@]}" "$lr" serve -B "$addr" -p "$lport" >/dev/null 2>&1 & pids+=($!)
    "${ns[@]}" iperf3 -s -B "$addr" -p "$i3port" >/dev/null 2>&1 & pids+=($!)
    "${ns[@]}" iperf -s -B "$addr" -p "$i2port" >/dev/null 2>&1 & pids+=($!)
    sleep 0.5
}
stop_servers() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    pids=()
}

# One run: prints Gb/s received. $1 tool, $2 address, $3 streams, $4 write size or "default",
# $5 namespace of the client (may be empty).
one() {
    local tool=$1 addr=$2 n=$3 len=$4 ns=() l=()
    [[ -n $5 ]] && ns=(ip netns exec "$5")
    [[ $len != default ]] && l=(-l "$len")
    case $tool in
        linerate) timeout $((secs + 30)) "${ns[@]}" "$lr" bench "$addr" -p "$lport" -t "$secs" -P "$n" "${l[@]}" -J |
            python3 -c 'import json,sys; print(json.load(sys.stdin)["tests"][0]["gbps"])' ;;
        iperf3) timeout $((secs + 30)) "${ns[@]}" iperf3 -c "$addr" -p "$i3port" -t "$secs" -P "$n" "${l[@]}" -J |
            python3 -c 'import json,sys; print(json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"]/1e9)' ;;
        iperf2) timeout $((secs + 30)) "${ns[@]}" iperf -c "$addr" -p "$i2port" -t "$secs" -P "$n" "${l[@]}" -y C |
            python3 -c '
import sys
rows = [l.strip().split(",") for l in sys.stdin if l.count(",") >= 8]
s = [r for r in rows if r[5] == "-1"]
print((float(s[-1][8]) if s else sum(float(r[8]) for r in rows)) / 1e9)' ;;
    esac
}

measure_path() {
    local path=$1 addr=$2 ns=$3
    for n in ${streams//,/ }; do
        local eq; eq=$(lr_default "$n")
        for ((r = 1; r <= rounds; r++)); do
            for cfg in "linerate default" "linerate 128K" "iperf3 default" "iperf3 $eq" "iperf2 default" "iperf2 $eq"; do
                set -- $cfg
                local g; g=$(one "$1" "$addr" "$n" "$2" "$ns" || echo fail)
                local label=$2; [[ $label == default ]] && label="default"
                echo "$path $n $1 $label $g" >> "$work/runs"
                echo "$path P$n round $r: $1 -l $label: $g Gb/s" >&2
            done
        done
    done
}

echo "uptime before: $(uptime)" >&2
if [[ $paths == *lo* ]]; then
    start_servers 127.0.0.1 ""
    measure_path lo 127.0.0.1 ""
    stop_servers
fi
if [[ $paths == *veth* ]]; then
    if [[ $(id -u) != 0 ]] || ! ip netns add "$nsa" 2>/dev/null; then
        echo "veth: skipped (needs root and ip netns)" >&2
    else
        ip netns add "$nsb"
        ip link add "${tag}a" netns "$nsa" type veth peer name "${tag}b" netns "$nsb"
        ip -n "$nsa" addr add 198.18.0.1/30 dev "${tag}a"
        ip -n "$nsb" addr add 198.18.0.2/30 dev "${tag}b"
        for ns in "$nsa" "$nsb"; do ip -n "$ns" link set lo up; done
        ip -n "$nsa" link set "${tag}a" up
        ip -n "$nsb" link set "${tag}b" up
        start_servers 198.18.0.2 "$nsb"
        measure_path veth 198.18.0.2 "$nsa"
        stop_servers
    fi
fi
echo "uptime after: $(uptime)" >&2

python3 - "$work/runs" "$rounds" "$secs" <<'PY'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    path, n, tool, size, g = line.split()
    if g != "fail":
        runs.setdefault((path, int(n)), {}).setdefault(f"{tool} {size}", []).append(float(g))
print(f"TCP Gb/s received, median of {sys.argv[2]} alternating runs of {sys.argv[3]} s (write size: default or -l)")
cols = ["linerate default", "linerate 128K", "iperf3 default", "iperf3 =lr", "iperf2 default", "iperf2 =lr"]
print("| path | streams | " + " | ".join(cols) + " |")
print("|---|---|" + "---|" * len(cols))
for (path, n), v in sorted(runs.items()):
    def med(prefix, default):
        keys = [k for k in v if k.startswith(prefix) and ((k.endswith(" default")) == default)]
        return f"{statistics.median(v[keys[0]]):.1f}" if keys else "–"
    cells = [med("linerate", True), med("linerate", False), med("iperf3", True), med("iperf3", False), med("iperf2", True), med("iperf2", False)]
    print(f"| {path} | {n} | " + " | ".join(cells) + " |")
print("(=lr: the peer at linerate's default write size for that stream count; linerate 128K: linerate at the peers' default)")
PY
