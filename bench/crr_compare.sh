#!/usr/bin/env bash
# linerate's connection-rate test against netperf's TCP_CRR, on 127.0.0.1.
#
#   bench/crr_compare.sh                   # 5 alternating rounds of 3 s, one stream
#   ROUNDS=7 DURATION=5 STREAMS=2 bench/crr_compare.sh
#
# Each round runs `linerate bench --test tcp-crr` against a `linerate serve`, then netperf's
# TCP_CRR against a netserver (STREAMS netperf processes at once for STREAMS > 1, their rates
# summed, as netperf users do), both with 1-byte requests and responses for DURATION s. Runs
# alternate because these machines are shared and noisy: quote the median ratios, not the
# absolute figures.
#
# What is compared:
#   rate:    connections per second, linerate / netperf. Goal: ratio >= 0.95.
#   latency: the median time of one connection (connect, request, response, close), linerate /
#            netperf (netperf's percentiles are whole microseconds from its histogram).
#            Goal: ratio <= 1.10.
# Every run is bounded by `timeout`; the loop is bounded by ROUNDS. netperf is installed by
# `bench/compare.sh --install` (Debian's non-free component).
set -uo pipefail

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_DIR=$(cd "$BENCH_DIR/.." && pwd)
ROUNDS=${ROUNDS:-5}
DURATION=${DURATION:-3}
STREAMS=${STREAMS:-1}
PORT=${PORT:-47700}           # linerate serve; netserver on PORT + 1
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$REPO_DIR/target}

for t in netperf netserver; do
    if ! command -v "$t" >/dev/null; then
        echo "crr_compare: $t is not installed: run bench/compare.sh --install" >&2
        exit 2
    fi
done

echo "crr_compare: building linerate (release)" >&2
(cd "$REPO_DIR" && cargo build --release --locked -q -p linerate) || exit 2
LINERATE="$CARGO_TARGET_DIR/release/linerate"
NS_PORT=$((PORT + 1))

OUT=$(mktemp -d)
SERVER=""
NETSERVER=""
cleanup() {
    [ -n "$SERVER" ] && kill "$SERVER" 2>/dev/null
    [ -n "$NETSERVER" ] && kill "$NETSERVER" 2>/dev/null
    rm -rf "$OUT"
}
trap cleanup EXIT
"$LINERATE" serve -B 127.0.0.1 -p "$PORT" >/dev/null 2>&1 &
SERVER=$!
# -D: stay in the foreground, so this script owns (and ends) it.
netserver -D -L 127.0.0.1 -p "$NS_PORT" >/dev/null 2>&1 &
NETSERVER=$!
sleep 0.5

lr() { # round
    timeout $((DURATION + 30)) "$LINERATE" bench 127.0.0.1 -p "$PORT" --test tcp-crr \
        -t "$DURATION" -P "$STREAMS" -l 1 -J >"$OUT/lr_$1.json" ||
        echo "crr_compare: linerate run $1 failed" >&2
}

np() { # round: STREAMS netperf processes at once, one output file each
    local pids=() i
    for i in $(seq 1 "$STREAMS"); do
        timeout $((DURATION + 30)) netperf -H 127.0.0.1 -p "$NS_PORT" -t TCP_CRR -l "$DURATION" \
            -P 0 -- -r 1,1 -o TRANSACTION_RATE,P50_LATENCY,P99_LATENCY >"$OUT/np_$1_$i.txt" 2>&1 &
        pids+=($!)
    done
    for i in "${pids[@]}"; do
        wait "$i" || echo "crr_compare: a netperf run of round $1 failed" >&2
    done
}

for r in $(seq 1 "$ROUNDS"); do
    echo "crr_compare: round $r/$ROUNDS: linerate, then netperf" >&2
    lr "$r"
    np "$r"
done

python3 - "$OUT" "$ROUNDS" "$STREAMS" "$DURATION" <<'PY'
import json, pathlib, statistics, sys
out, rounds, streams, duration = pathlib.Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]

def linerate(r):
    try:
        t = json.loads((out / f"lr_{r}.json").read_text())["tests"][0]
        if t.get("error"):
            return None
        return t["transactions_per_s"], t["latency_us"]["p50"]
    except (FileNotFoundError, ValueError, KeyError, IndexError, TypeError):
        return None

def netperf(r):
    # -P 0 with -o: one CSV row, rate (per second), then p50 and p99 (whole microseconds).
    rates, p50s = [], []
    for i in range(1, streams + 1):
        try:
            row = (out / f"np_{r}_{i}.txt").read_text().strip().splitlines()[-1].split(",")
            rates.append(float(row[0]))
            p50s.append(float(row[1]))
        except (FileNotFoundError, IndexError, ValueError):
            return None
    return sum(rates), statistics.median(p50s)

def ratio(a, b):
    return a / b if a and b else None

fmt = lambda v, d=2: "-" if v is None else f"{v:.{d}f}"
rows = []
print(f"\nlinerate bench --test tcp-crr vs netperf TCP_CRR, 127.0.0.1, 1-byte request and response, "
      f"{streams} stream(s), {duration} s per run")
print(f"{'round':>5} {'lr conn/s':>10} {'np conn/s':>10} {'rate':>6} {'lr p50 us':>10} {'np p50 us':>10} {'p50':>6}")
for r in range(1, rounds + 1):
    l, n = linerate(r), netperf(r)
    x = dict(rate=ratio(l and l[0], n and n[0]), p50=ratio(l and l[1], n and n[1]))
    rows.append(x)
    print(f"{r:>5} {fmt(l and l[0], 0):>10} {fmt(n and n[0], 0):>10} {fmt(x['rate']):>6} "
          f"{fmt(l and l[1], 1):>10} {fmt(n and n[1], 1):>10} {fmt(x['p50']):>6}")

def med(k):
    v = [x[k] for x in rows if x[k] is not None]
    return statistics.median(v) if v else None

rate, p50 = med("rate"), med("p50")
print(f"\nmedian ratios (linerate / netperf): connections per second {fmt(rate)} (goal >= 0.95); "
      f"median connection time {fmt(p50)} (goal <= 1.10)")
ok = rate is not None and rate >= 0.95 and p50 is not None and p50 <= 1.10
print("verdict:", "meets the goals" if ok else "BELOW the goals (see the table; machines are noisy: rerun with more ROUNDS)")
PY
