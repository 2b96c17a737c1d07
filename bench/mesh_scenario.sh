#!/usr/bin/env bash
# The 8-node fault scenario of `linerate mesh` (issue #12's "Done when"), on one machine:
# 8 network namespaces on a bridge, every link shaped to 1 Gbit/s with tc tbf, and four faults:
#   node 2: 300 Mbit/s both ways        (expect tx+rx-degraded)
#   node 5: 300 Mbit/s transmit only    (expect tx-degraded: its egress tbf)
#   node 6: 300 Mbit/s receive only     (expect rx-degraded: its ingress through an ifb device)
#   node 7: killed mid-run              (expect unreachable)
# Prints the wall time of the run, how the coordinator was found, and whether each fault was
# named with the right direction and nothing else was (node 5's and 6's verdicts also name
# their tbf with its direction: node 2's receive limit sits on its bridge port, outside it); exit status 0 when all four were found and no false positive.
#
# Needs root, iproute2 (ip, tc) and the ifb module. Everything it creates is named with this
# script's PID and removed on exit (also on failure or Ctrl-C).
#
#   bench/mesh_scenario.sh [path/to/linerate] [-- extra mesh options]
set -euo pipefail

BIN=${1:-target/release/linerate}
shift || true
[ "${1:-}" = "--" ] && shift
EXTRA=("$@")
[ -x "$BIN" ] || { echo "mesh_scenario: $BIN is not an executable (build with: cargo build --release -p linerate)" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "mesh_scenario: needs root (ip netns, tc)" >&2; exit 2; }

N=8
P="lrm$$"
BR="${P}br"
WORK=$(mktemp -d)
PIDS=()

cleanup() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  for i in $(seq 0 $((N - 1))); do
    ip netns del "${P}n$i" 2>/dev/null || true
    ip link del "${P}h$i" 2>/dev/null || true
  done
  ip link del "${P}i6" 2>/dev/null || true
  ip link del "$BR" 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT INT TERM

ip link add "$BR" type bridge
ip link set "$BR" up
for i in $(seq 0 $((N - 1))); do
  ns="${P}n$i"
  ip netns add "$ns"
  ip link add "${P}h$i" type veth peer name eth0 netns "$ns"
  ip link set "${P}h$i" master "$BR" up
  ip -n "$ns" addr add "198.18.0.$((10 + i))/24" dev eth0
  ip -n "$ns" link set eth0 up
  ip -n "$ns" link set lo up
  # into node i, and out of node i
  tc qdisc add dev "${P}h$i" root tbf rate 1gbit burst 128kb latency 100ms
  tc -n "$ns" qdisc add dev eth0 root tbf rate 1gbit burst 128kb latency 100ms
done
# node 2: slow both ways
tc qdisc replace dev "${P}h2" root tbf rate 300mbit burst 64kb latency 100ms
tc -n "${P}n2" qdisc replace dev eth0 root tbf rate 300mbit burst 64kb latency 100ms
# node 5: slow to transmit only
tc -n "${P}n5" qdisc replace dev eth0 root tbf rate 300mbit burst 64kb latency 100ms
# node 6: slow to receive only, on the node's side: its ingress redirected through an ifb
ip link add "${P}i6" type ifb
ip link set "${P}i6" netns "${P}n6"
ip -n "${P}n6" link set "${P}i6" up
tc -n "${P}n6" qdisc add dev eth0 handle ffff: ingress
tc -n "${P}n6" filter add dev eth0 parent ffff: protocol all u32 match u32 0 0 action mirred egress redirect dev "${P}i6"
tc -n "${P}n6" qdisc add dev "${P}i6" root tbf rate 300mbit burst 64kb latency 100ms

COORD=198.18.0.10:5302
start=$(date +%s.%N)
for i in $(seq 1 $((N - 1))); do
  ip netns exec "${P}n$i" "$BIN" mesh --rank "$i" --size $N --coordinator $COORD -t 1 \
    --join-timeout 20 "${EXTRA[@]}" >"$WORK/rank$i.out" 2>"$WORK/rank$i.err" &
  PIDS+=($!)
done
KILL_PID=${PIDS[6]}   # rank 7
ip netns exec "${P}n0" "$BIN" mesh --rank 0 --size $N --coordinator $COORD -t 1 \
  --join-timeout 20 --json "${EXTRA[@]}" >"$WORK/mesh.json" 2>"$WORK/rank0.err" &
R0=$!
PIDS+=($R0)
# Kill rank 7 mid-run: the 14 rounds of 1 s tests take well over 6 s.
sleep 6
kill -9 "$KILL_PID" 2>/dev/null || true
rc=0
wait "$R0" || rc=$?
end=$(date +%s.%N)
for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done

printf 'mesh_scenario: wall time %.1f s (8 ranks, pairwise, -t 1, the retest phase included), rank 0 exit status %s\n' \
  "$(python3 -c "print($end - $start)")" "$rc"
python3 - "$WORK/mesh.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
rv = doc.get("rendezvous") or {}
print(f"  coordinator at {rv.get('addr')}, found by {rv.get('label')}")
want = {2: "both", 5: "tx_degraded", 6: "rx_degraded", 7: "unreachable"}
ok = True
for n in doc["nodes"]:
    r, got = n["rank"], n["status"]
    exp = want.get(r, "ok")
    mark = "found" if got == exp else "WRONG"
    if got != exp:
        ok = False
    if r in want or got != "ok":
        print(f"  node {r}: {got:<12} expected {exp:<12} {mark}  {n['explanation']}")
slow_tx, slow_rx = {2, 5, 7}, {2, 6, 7}
false_links = [l for l in doc["links"]
               if l["status"] in ("slow", "lossy", "unreachable")
               and l["tx"] not in slow_tx and l["rx"] not in slow_rx]
for l in false_links:
    print(f"  false positive: link {l['tx']} -> {l['rx']} {l['status']}: {l['explanation']}")
# The shaped nodes' verdicts name their shaper with its direction.
for r, words in ((5, "eth0 egress tbf"), (6, "eth0 ingress tbf")):
    e = next(n["explanation"] for n in doc["nodes"] if n["rank"] == r)
    if words not in e:
        print(f"  node {r}: its verdict does not name its shaper ({words})")
        ok = False
ok = ok and not false_links
print("mesh_scenario: all four faults found with the right direction, no false positive" if ok
      else "mesh_scenario: FAILED (see above)")
sys.exit(0 if ok else 1)
PY
