#!/usr/bin/env bash
# The host-stack model against measurement, in two CPU settings: `linerate doctor --quick
# --no-disk --json` on loopback with all cores, then under `taskset -c 0` (one core: both copies
# of every byte share it), alternating, ROUNDS times each. Prints, per run, one core's copy rate
# at a stream's write size, the host-stack bound doctor derives from it, the single-stream
# result, its share of the bound and the busiest thread; then the ranges per setting.
# The bound must halve with one core, and no stream may exceed it (else doctor says
# `ceiling.exceeded`). See docs/ceiling-model.md, "The host stack".
#
#   bench/host_stack.sh              # 3 rounds (about 1 min)
#   ROUNDS=5 bench/host_stack.sh
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${ROUNDS:-3}
case $rounds in '' | *[!0-9]* | 0)
    echo "host_stack.sh: ROUNDS must be a whole number of rounds, at least 1, not '$rounds'" >&2
    exit 2
    ;;
esac
command -v taskset >/dev/null || {
    echo "host_stack.sh: taskset (util-linux) is needed" >&2
    exit 2
}
cargo build --release --locked -q
bin=./target/release/linerate
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for i in $(seq 1 "$rounds"); do
    for mode in two one; do
        pre=()
        [ "$mode" = one ] && pre=(taskset -c 0)
        # A doctor --quick run takes about 8 s; 120 s is a hang.
        timeout 120 "${pre[@]}" "$bin" doctor --quick --no-disk --json >"$out/$mode-$i.json" 2>/dev/null || true
    done
done
python3 - "$out" "$rounds" <<'PY'
import json, sys, os
out, rounds = sys.argv[1], int(sys.argv[2])
rows = {"two": [], "one": []}
for i in range(1, rounds + 1):
    for mode in ("two", "one"):
        try:
            d = json.load(open(os.path.join(out, f"{mode}-{i}.json")))
            mem = min((m for m in d["memory"] if m["threads"] == 1), key=lambda m: m["buffer_bytes"])
            one = next(t for t in d["tests"] if t["kind"] == "tcp_bw" and t["streams"] == 1)
            bound = d["path"]["stack_ceiling_gbps"]
        except (OSError, ValueError, KeyError, StopIteration, TypeError) as e:
            print(f"{mode} round {i}: no usable result ({e})")
            continue
        exceeded = any(f["id"] == "ceiling.exceeded" for f in d["findings"])
        r = (mem["gb_per_s"], bound, one["gbps"], one["gbps"] / bound,
             one["sender"]["cpu_percent"], one["receiver"]["cpu_percent"])
        rows[mode].append(r)
        print(f"{mode} cores={'1' if mode == 'one' else 'all'} copy {r[0]:.1f} GB/s  bound {r[1]:.1f} Gb/s  "
              f"stream {r[2]:.2f} Gb/s  share {r[3]*100:.1f}%  sender {r[4]:.0f}% receiver {r[5]:.0f}%"
              + ("  CEILING EXCEEDED" if exceeded else ""))
print()
print("| CPU setting | copy, 1 MiB (GB/s) | bound (Gb/s) | one stream (Gb/s) | share of the bound |")
print("|---|---|---|---|---|")
for mode, label in (("two", "all cores"), ("one", "taskset -c 0")):
    v = rows[mode]
    if not v:
        continue
    rng = lambda k, f: f"{f(min(x[k] for x in v))}-{f(max(x[k] for x in v))}"
    print(f"| {label} | {rng(0, lambda x: f'{x:.1f}')} | {rng(1, lambda x: f'{x:.0f}')} | "
          f"{rng(2, lambda x: f'{x:.1f}')} | {rng(3, lambda x: f'{x*100:.1f}')}% |")
PY
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
