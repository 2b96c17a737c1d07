#!/usr/bin/env bash
# Run `linerate doctor` across a veth pair between two network namespaces this script
# creates, in the scenarios doctor must explain: healthy, a tbf shaper, an MTU mismatch,
# tiny TCP buffers. Prints doctor's terminal report for each. Root only; it touches no
# interface but the veth pair it creates, and deletes everything on exit.
# Usage: bench/doctor_scenarios.sh [healthy|shaper|mtu|buffers ...] [--report-dir DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
lr=${LINERATE:-target/release/linerate}
[ -x "$lr" ] || cargo build --release --locked -q
scenarios=()
report_dir=""
while (($#)); do
    case "$1" in
        --report-dir) report_dir=$2; shift 2 ;;
        healthy|shaper|mtu|buffers) scenarios+=("$1"); shift ;;
        *) echo "usage: $0 [healthy|shaper|mtu|buffers ...] [--report-dir DIR]" >&2; exit 2 ;;
    esac
done
((${#scenarios[@]})) || scenarios=(healthy shaper mtu buffers)
A=lrd-a B=lrd-b
cleanup() {
    [ -n "${srv:-}" ] && kill "$srv" 2>/dev/null || true
    ip netns del "$A" 2>/dev/null || true
    ip netns del "$B" 2>/dev/null || true
}
trap cleanup EXIT
setup() { # $1 = mtu of a, $2 = mtu of b
    cleanup
    ip netns add "$A"; ip netns add "$B"
    ip -n "$A" link add va type veth peer name vb netns "$B"
    ip -n "$A" addr add 10.203.0.1/24 dev va; ip -n "$B" addr add 10.203.0.2/24 dev vb
    ip -n "$A" link set va mtu "$1"; ip -n "$B" link set vb mtu "$2"
    for ns in "$A" "$B"; do ip -n "$ns" link set lo up; done
    ip -n "$A" link set va up; ip -n "$B" link set vb up
    ip netns exec "$B" timeout 300 "$lr" serve -B 10.203.0.2 -p 5301 >/dev/null &
    srv=$!
    for _ in $(seq 50); do ip netns exec "$A" bash -c ': </dev/tcp/10.203.0.2/5301' 2>/dev/null && break; sleep 0.1; done
}
for s in "${scenarios[@]}"; do
    case "$s" in
        healthy) setup 1500 1500 ;;
        shaper) setup 1500 1500; tc -n "$A" qdisc add dev va root tbf rate 2gbit burst 1m latency 50ms ;;
        mtu) setup 9000 1500 ;;
        buffers) setup 1500 1500
            for ns in "$A" "$B"; do
                ip netns exec "$ns" sysctl -qw net.ipv4.tcp_rmem='4096 8192 16384' net.ipv4.tcp_wmem='4096 8192 16384'
            done ;;
    esac
    echo "===== scenario: $s"
    args=(doctor 10.203.0.2 --quick --fail-on never)
    [ -n "$report_dir" ] && args+=(--report "$report_dir/doctor-$s.html")
    NO_COLOR=1 ip netns exec "$A" timeout 120 "$lr" "${args[@]}" || echo "(doctor exited $?)"
done
