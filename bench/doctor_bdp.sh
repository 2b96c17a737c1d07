#!/usr/bin/env bash
# Does doctor's window bound hold, and do the buffers it recommends lift it? In the lab (two
# guests of Debian's stock kernel, docs/lab.md) with `netem delay D` on b's enp1s0 and both
# guests' TCP buffer limits capped, for each delay:
#   1. `linerate doctor --quick --no-disk --no-rdma --json` in a against `linerate serve` in b:
#      the window bound its tcp.buffers_small quotes (window_bound_gbps, per stream) and the
#      buffers it recommends (`linerate setup sysctl --rtt-ms R --gbps G`);
#   2. `linerate bench` (one TCP stream, the direction doctor judged) under the caps: measured;
#   3. the recommended buffers applied in both guests (`setup sysctl --apply`, then
#      `sysctl -p` on the file it wrote; the guests' /etc is a throwaway overlay), and bench
#      again: after.
# Prints per delay measured/bound (the bound holds when it is at most about 1) and after/before
# (what the recommendation bought). Takes the labs' lock (/tmp/linerate-netns-bench.lock), so it
# waits for a lab test or another lab; everything it starts ends on exit.
# Usage: bench/doctor_bdp.sh [--delays "5 20 50"] [--wmem BYTES] [--rmem BYTES] [--time S]
#                            [--bin DIR] [--dir LABDIR]
set -euo pipefail
cd "$(dirname "$0")/.."
delays="5 20 50"
wmem=131072
rmem=262144
secs=5
bin=""
dir=/tmp/doctor-bdp-lab
while (($#)); do
    case "$1" in
        --delays) delays=$2; shift 2 ;;
        --wmem) wmem=$2; shift 2 ;;
        --rmem) rmem=$2; shift 2 ;;
        --time) secs=$2; shift 2 ;;
        --bin) bin=$2; shift 2 ;;
        --dir) dir=$2; shift 2 ;;
        *) echo "usage: $0 [--delays \"5 20 50\"] [--wmem BYTES] [--rmem BYTES] [--time S] [--bin DIR] [--dir LABDIR]" >&2; exit 2 ;;
    esac
done
for d in $delays; do
    [[ $d =~ ^[0-9]+$ ]] && ((d >= 1 && d <= 1000)) || { echo "--delays: $d is not a whole number of milliseconds in 1-1000" >&2; exit 2; }
done
for v in "$wmem" "$rmem"; do
    [[ $v =~ ^[0-9]+$ ]] && ((v >= 4096)) || { echo "--wmem/--rmem: $v is not a byte count of at least 4096" >&2; exit 2; }
done
[[ $secs =~ ^[0-9]+$ ]] && ((secs >= 1 && secs <= 60)) || { echo "--time: $secs is not a whole number of seconds in 1-60" >&2; exit 2; }
if [ -z "$bin" ]; then
    if [ -x target/release/linerate ] && [ -x target/release/linerate-lab ]; then bin=target/release; else bin=target/debug; fi
fi
bin=$(cd "$bin" && pwd)
lr=$bin/linerate
lab=$bin/linerate-lab
for x in "$lr" "$lab"; do
    [ -x "$x" ] || { echo "$x is missing: cargo build -p linerate -p linerate-lab (--release)" >&2; exit 2; }
done
[ -e "$dir" ] && { echo "$dir exists: another lab's, or a killed run's (linerate-lab down $dir; rm -r $dir)" >&2; exit 2; }

exec 9>/tmp/linerate-netns-bench.lock
echo "waiting for the labs' lock ..." >&2
flock 9
up_pid=""
cleanup() {
    if [ -n "$up_pid" ]; then
        "$lab" down "$dir" >/dev/null 2>&1 || kill "$up_pid" 2>/dev/null || true
        wait "$up_pid" 2>/dev/null || true
    fi
    rm -rf "$dir" "$dir.up.log"
}
trap cleanup EXIT
"$lab" up --dir "$dir" --no-rxe >"$dir.up.log" 2>&1 &
up_pid=$!
"$lab" ready "$dir" >&2
ex() { # guest, command: its stdout; fails the script with the guest's stderr
    "$lab" exec "$dir" "$1" --timeout 300 -- "$2"
}
"$lab" exec "$dir" b --bg -- "exec $lr serve -B 198.18.0.2" >/dev/null
sleep 2
orig=()
for g in a b; do
    orig+=("$(ex $g "sysctl -n net.ipv4.tcp_wmem net.ipv4.tcp_rmem net.core.rmem_max net.core.wmem_max | tr '\t' ' ' | paste -sd'|'")")
done
restore() { # guest index, guest
    IFS='|' read -r w r cr cw <<<"${orig[$1]}"
    ex "$2" "rm -f /etc/sysctl.d/90-linerate.conf; sysctl -q -w net.ipv4.tcp_wmem='$w' net.ipv4.tcp_rmem='$r' net.core.rmem_max=$cr net.core.wmem_max=$cw" >/dev/null
}
bench() { # direction: one stream's Gb/s
    local r=""
    [ "$1" = receive ] && r="-R"
    ex a "$lr bench 198.18.0.2 -t $secs $r -J" | jq -r '.tests[0].gbps'
}

rows=()
for d in $delays; do
    for i in 0 1; do
        g=$([ $i = 0 ] && echo a || echo b)
        restore $i $g
        ex $g "sysctl -q -w net.ipv4.tcp_wmem='4096 16384 $wmem' net.ipv4.tcp_rmem='4096 65536 $rmem'" >/dev/null
    done
    ex b "tc qdisc replace dev enp1s0 root netem delay ${d}ms" >/dev/null
    doc=$(ex a "$lr doctor 198.18.0.2 --quick --no-disk --no-rdma --json")
    f=$(jq -c '[.findings[] | select(.id == "tcp.buffers_small")][0]' <<<"$doc")
    verdict=$(jq -r '.verdict.summary' <<<"$doc")
    echo "delay ${d} ms: $verdict" >&2
    if [ "$f" = null ]; then
        rows+=("| $d | not window-limited | | | | | | |")
        ex b "tc qdisc del dev enp1s0 root" >/dev/null
        continue
    fi
    dir_=$(jq -r '.subject | split(" ")[1]' <<<"$f")
    bound=$(jq -r '.evidence.window_bound_gbps' <<<"$f")
    rtt=$(jq -r '.evidence.buffers_for_rtt_ms' <<<"$f")
    gbps=$(jq -r '.evidence.buffers_for_gbps' <<<"$f")
    size=$(jq -r '.evidence["net.ipv4.tcp_rmem max"]' <<<"$f")
    before=$(bench "$dir_")
    for g in a b; do
        ex $g "$lr setup sysctl --rtt-ms $rtt --gbps $gbps --apply >/dev/null && sysctl -q -p /etc/sysctl.d/90-linerate.conf" >/dev/null
    done
    after=$(bench "$dir_")
    ex b "tc qdisc del dev enp1s0 root" >/dev/null
    rows+=("$(python3 -c "
d, dr, b, r, g, s, be, af = '$d', '$dir_', float('$bound'), '$rtt', '$gbps', '$size', float('$before'), float('$after')
print(f'| {d} | {dr} | {b:.4f} | {be:.4f} | {be / b:.2f} | --rtt-ms {r} --gbps {g}: {int(s) // 2**20} MiB | {af:.4f} | {af / be:.2f} |' if b > 0 and be > 0 else f'| {d} | {dr} | {b} | {be} | ? | {r} {g} {s} | {af} | ? |')
")")
done
for i in 0 1; do restore $i $([ $i = 0 ] && echo a || echo b); done

echo
echo "caps: tcp_wmem max $wmem, tcp_rmem max $rmem bytes on both guests; one TCP stream, $secs s per bench run; $(uname -r) host, $(ex a 'uname -r') guests"
echo
echo "| netem delay (ms) | direction | doctor's window bound (Gb/s) | measured under the caps (Gb/s) | measured / bound | buffers doctor recommends | after applying them (Gb/s) | after / before |"
echo "|---|---|---|---|---|---|---|---|"
printf '%s\n' "${rows[@]}"
