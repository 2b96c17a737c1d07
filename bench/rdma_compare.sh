#!/usr/bin/env bash
# linerate's RDMA engine against libfabric's own fi_pingpong, both over the tcp provider on
# 127.0.0.1 (no RDMA hardware needed).
#
#   bench/rdma_compare.sh                 # 3 alternating rounds (A B A B A B)
#   ROUNDS=5 WINDOW=8 bench/rdma_compare.sh
#
# Each round runs linerate itself (`linerate bench --rdma --provider tcp` against a
# `linerate serve` on 127.0.0.1: write bandwidth at 1 MiB for DURATION s, then write and send
# ping-pong latency at 8 B for DURATION s each), then fi_pingpong (send/receive ping-pong,
# -e msg) at 1 MiB and at 8 B. Runs alternate because these
# machines are shared and noisy: quote the median ratios, not the absolute figures.
#
# What is compared:
#   bandwidth: linerate write MB/s (one direction, window of WINDOW writes in flight) against
#              fi_pingpong's MB/sec at 1 MiB (it counts the bytes of both directions of its
#              ping-pong over the elapsed time). Goal: ratio >= 0.95.
#   latency:   linerate's mean one-way latency (round trip / 2, as perftest's *_lat report) at 8 B
#              against fi_pingpong's usec/xfer (elapsed / (iterations x 2): also mean one-way).
#              Goal: ratio <= 1.10 (linerate at most 10% slower).
# Every run is bounded by `timeout`; the loop is bounded by ROUNDS.
set -uo pipefail

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_DIR=$(cd "$BENCH_DIR/.." && pwd)
ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-2}          # seconds of linerate write bandwidth per round
WINDOW=${WINDOW:-16}             # linerate's outstanding writes
BW_SIZE=1048576
LAT_SIZE=8
LAT_ITERS=${LAT_ITERS:-20000}    # fi_pingpong round trips at 8 B (linerate runs DURATION s)
PP_BW_ITERS=${PP_BW_ITERS:-2000} # fi_pingpong 1 MiB round trips (about 1 s here)
PORT=${PORT:-47600}              # fi_pingpong control port (+1, +2, ... per run)
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$REPO_DIR/target}

if ! command -v fi_pingpong >/dev/null; then
    echo "rdma_compare: installing libfabric-bin (fi_pingpong)" >&2
    if [ "$(id -u)" -ne 0 ]; then
        echo "rdma_compare: need root to install libfabric-bin" >&2
        exit 2
    fi
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libfabric1 libfabric-bin >/dev/null || exit 2
fi

echo "rdma_compare: building linerate (release)" >&2
(cd "$REPO_DIR" && cargo build --release --locked -q -p linerate) || exit 2
LINERATE="$CARGO_TARGET_DIR/release/linerate"
LR_PORT=$((PORT - 1))

OUT=$(mktemp -d)
SERVER=""
trap '[ -n "$SERVER" ] && kill "$SERVER" 2>/dev/null; rm -rf "$OUT"' EXIT
"$LINERATE" serve -B 127.0.0.1 -p "$LR_PORT" >/dev/null 2>&1 &
SERVER=$!
sleep 0.5
lr() { # extra args...
    timeout 120 "$LINERATE" bench 127.0.0.1 -p "$LR_PORT" --rdma --provider tcp -J "$@"
}

# fi_pingpong server + client on 127.0.0.1; prints the client's result row.
pingpong() { # size iterations
    local size=$1 iters=$2
    PORT=$((PORT + 1))
    timeout 60 fi_pingpong -p tcp -e msg -B "$PORT" -S "$size" -I "$iters" >/dev/null 2>&1 &
    local srv=$!
    sleep 0.3
    timeout 60 fi_pingpong -p tcp -e msg -P "$PORT" -S "$size" -I "$iters" 127.0.0.1 2>&1 | tail -n 1
    wait "$srv"
}

for r in $(seq 1 "$ROUNDS"); do
    echo "rdma_compare: round $r/$ROUNDS: linerate" >&2
    lr -l "$BW_SIZE" -t "$DURATION" -w "$WINDOW" >"$OUT/lr_bw_$r.json" ||
        echo "rdma_compare: linerate bandwidth run $r failed" >&2
    lr --latency -l "$LAT_SIZE" -t "$DURATION" --op write >"$OUT/lr_write_$r.json" ||
        echo "rdma_compare: linerate write latency run $r failed" >&2
    lr --latency -l "$LAT_SIZE" -t "$DURATION" --op send >"$OUT/lr_send_$r.json" ||
        echo "rdma_compare: linerate send latency run $r failed" >&2
    echo "rdma_compare: round $r/$ROUNDS: fi_pingpong" >&2
    pingpong "$BW_SIZE" "$PP_BW_ITERS" >"$OUT/pp_bw_$r.txt"
    pingpong "$LAT_SIZE" "$LAT_ITERS" >"$OUT/pp_lat_$r.txt"
done

python3 - "$OUT" "$ROUNDS" "$WINDOW" <<'PY'
import json, statistics, sys, pathlib
out, rounds, window = pathlib.Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3]

def test(p):
    try:
        return json.loads(p.read_text())["tests"][0]
    except (FileNotFoundError, ValueError, KeyError, IndexError):
        return None

def pp(p):
    # bytes #sent #ack total time MB/sec usec/xfer Mxfers/sec
    try:
        f = p.read_text().split()
        return float(f[5]), float(f[6])
    except (FileNotFoundError, IndexError, ValueError):
        return None

rows = []
for r in range(1, rounds + 1):
    b, w, s = (test(out / f"lr_{k}_{r}.json") for k in ("bw", "write", "send"))
    bw = b and b["gbps"] * 1000 / 8  # Gb/s -> MB/s (10^6 byte/s)
    wl = w and w["rdma"]["one_way_mean_us"]
    sl = s and s["rdma"]["one_way_mean_us"]
    pb, pl = pp(out / f"pp_bw_{r}.txt"), pp(out / f"pp_lat_{r}.txt")
    rows.append(dict(round=r, lr_bw=bw, pp_bw=pb and pb[0], lr_wlat=wl, lr_slat=sl, pp_lat=pl and pl[1]))

def ratio(a, b):
    return a / b if a and b else None

fmt = lambda v, d=2: "-" if v is None else f"{v:.{d}f}"
print(f"\nlinerate bench --rdma vs fi_pingpong, provider tcp, 127.0.0.1 (write window {window})")
print(f"{'round':>5} {'lr write MB/s':>14} {'pp MB/s':>9} {'bw ratio':>9} {'lr write lat':>13} {'lr send lat':>12} {'pp lat':>8} {'w/pp':>6} {'s/pp':>6}")
for x in rows:
    x["bw_ratio"] = ratio(x["lr_bw"], x["pp_bw"])
    x["wlat_ratio"] = ratio(x["lr_wlat"], x["pp_lat"])
    x["slat_ratio"] = ratio(x["lr_slat"], x["pp_lat"])
    print(f"{x['round']:>5} {fmt(x['lr_bw'],1):>14} {fmt(x['pp_bw'],1):>9} {fmt(x['bw_ratio']):>9} "
          f"{fmt(x['lr_wlat']):>10} us {fmt(x['lr_slat']):>9} us {fmt(x['pp_lat']):>5} us {fmt(x['wlat_ratio']):>6} {fmt(x['slat_ratio']):>6}")

def med(k):
    v = [x[k] for x in rows if x.get(k) is not None]
    return statistics.median(v) if v else None

b, wl, sl = med("bw_ratio"), med("wlat_ratio"), med("slat_ratio")
print(f"\nmedian ratios: write bandwidth at 1 MiB {fmt(b)} (goal >= 0.95); "
      f"8 B one-way latency: write {fmt(wl)}, send {fmt(sl)} (goal <= 1.10)")
ok = b is not None and b >= 0.95 and sl is not None and sl <= 1.10
print("verdict:", "meets the goals" if ok else "BELOW the goals (see the table; machines are noisy: rerun with more ROUNDS)")
PY
