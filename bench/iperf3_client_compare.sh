#!/usr/bin/env bash
# `linerate bench --iperf3` against a stock `iperf3 -s`, side by side with a stock `iperf3 -c`
# against the same server, on 127.0.0.1 (issue #21: linerate as a client of iperf3's protocol
# should move at least as much as iperf3's own client does).
#
#   bench/iperf3_client_compare.sh                         # 3 rounds x 5 s of each test
#   bench/iperf3_client_compare.sh --rounds 5 --only tcp1,udp
#   bench/iperf3_client_compare.sh --dry-run               # print the commands, run nothing
#
# One stock server (`iperf3 -s -B 127.0.0.1 -p PORT`) serves every run; the two clients take
# turns (linerate first in odd rounds, iperf3 first in even ones), each run bounded by
# `timeout`, the loop by --rounds. The server is ended by its PID when the script exits.
#
# Tests and the figure compared (the receiver's Gb/s, as the end that received counted it):
#   tcp1  one TCP stream            linerate .tests[0].gbps  vs iperf3 .end.sum_received.bits_per_second
#   tcp4  -P 4                      the same
#   rev   -R (the server sends)     the same
#   udp   -u -b RATE -l LEN         the same, and loss % (.tests[0].loss_percent vs .end.sum.lost_percent)
# The ratio is median(linerate) / median(iperf3) per test; the goal is >= 1.0 (UDP: and loss no
# higher). These machines are shared and noisy: quote ratios from one run, not absolute figures.
set -uo pipefail

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_DIR=$(cd "$BENCH_DIR/.." && pwd)
ROUNDS=3
DURATION=5
UDP_RATE=2G
UDP_LEN=1448
ONLY="tcp1,tcp4,rev,udp"
PORT=47720
LINERATE=""
IPERF3=iperf3
DRY=0

usage() {
    sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'
    cat <<EOF

options:
  --rounds N        alternating rounds per test, 1-20 (default $ROUNDS)
  --time T          seconds per run, 1-30 (default $DURATION)
  --udp-rate RATE   udp's offered rate, iperf3 -b syntax (default $UDP_RATE)
  --udp-len BYTES   udp's datagram payload, both clients (default $UDP_LEN)
  --only LIST       of tcp1,tcp4,rev,udp (default all)
  --port N          the stock server's port on 127.0.0.1 (default $PORT)
  --linerate PATH   default: target/release/linerate, built if missing
  --iperf3 PATH     the stock iperf3 for both server and client (default: iperf3 on PATH)
  --dry-run         print every command and run nothing
EOF
}

while [ $# -gt 0 ]; do
    case "$1" in
        --rounds) ROUNDS=${2:?}; shift 2 ;;
        --time) DURATION=${2:?}; shift 2 ;;
        --udp-rate) UDP_RATE=${2:?}; shift 2 ;;
        --udp-len) UDP_LEN=${2:?}; shift 2 ;;
        --only) ONLY=${2:?}; shift 2 ;;
        --port) PORT=${2:?}; shift 2 ;;
        --linerate) LINERATE=${2:?}; shift 2 ;;
        --iperf3) IPERF3=${2:?}; shift 2 ;;
        --dry-run) DRY=1; shift ;;
        -h|--help) usage; exit 0 ;;
        *) echo "iperf3_client_compare: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
done

int_in() { # value low high name
    if ! [[ "$1" =~ ^[0-9]+$ ]] || [ "$1" -lt "$2" ] || [ "$1" -gt "$3" ]; then
        echo "iperf3_client_compare: $4 must be a whole number from $2 to $3, not '$1'" >&2
        exit 2
    fi
}
int_in "$ROUNDS" 1 20 --rounds
int_in "$DURATION" 1 30 --time
int_in "$PORT" 1024 65535 --port
int_in "$UDP_LEN" 16 65507 --udp-len
for t in ${ONLY//,/ }; do
    case "$t" in
        tcp1|tcp4|rev|udp) ;;
        *) echo "iperf3_client_compare: --only: unknown test '$t' (tcp1, tcp4, rev, udp)" >&2; exit 2 ;;
    esac
done

# The arguments each test adds to both clients.
args_of() {
    case "$1" in
        tcp1) echo "" ;;
        tcp4) echo "-P 4" ;;
        rev) echo "-R" ;;
        udp) echo "-u -b $UDP_RATE -l $UDP_LEN" ;;
    esac
}

if [ "$DRY" = 0 ]; then
    if ! command -v "$IPERF3" >/dev/null; then
        echo "iperf3_client_compare: $IPERF3 is not installed (apt-get install iperf3, or bench/compare.sh --install)" >&2
        exit 2
    fi
    if [ -z "$LINERATE" ]; then
        export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$REPO_DIR/target}
        LINERATE="$CARGO_TARGET_DIR/release/linerate"
        if [ ! -x "$LINERATE" ]; then
            echo "iperf3_client_compare: building linerate (release)" >&2
            (cd "$REPO_DIR" && nice cargo build --release --locked -q -p linerate) || exit 2
        fi
    fi
fi
LINERATE=${LINERATE:-target/release/linerate}

OUT=$(mktemp -d)
SERVER=""
cleanup() {
    if [ -n "$SERVER" ]; then
        kill "$SERVER" 2>/dev/null
        wait "$SERVER" 2>/dev/null
    fi
    rm -rf "$OUT"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

LIMIT=$((DURATION + 30))
run() { # name output command...
    local name=$1 out=$2
    shift 2
    if [ "$DRY" = 1 ]; then
        echo "timeout -k 5 $LIMIT $*"
        return
    fi
    timeout -k 5 "$LIMIT" "$@" >"$out" 2>"$out.err" ||
        echo "iperf3_client_compare: $name failed: $(tail -n 2 "$out.err" | tr '\n' ' ')" >&2
    # A stock server reopens its listening socket after each test: give it the moment.
    sleep 0.5
}

if [ "$DRY" = 1 ]; then
    echo "$IPERF3 -s -B 127.0.0.1 -p $PORT &    # ended by its PID at exit"
else
    "$IPERF3" -s -B 127.0.0.1 -p "$PORT" >"$OUT/server.log" 2>&1 &
    SERVER=$!
    for _ in $(seq 1 50); do
        ss -Hltn "sport = :$PORT" | grep -q . && break
        sleep 0.1
    done
    if ! ss -Hltn "sport = :$PORT" | grep -q .; then
        echo "iperf3_client_compare: $IPERF3 -s did not listen on 127.0.0.1:$PORT: $(cat "$OUT/server.log")" >&2
        exit 2
    fi
fi

for t in ${ONLY//,/ }; do
    # shellcheck disable=SC2207
    extra=($(args_of "$t"))
    for r in $(seq 1 "$ROUNDS"); do
        [ "$DRY" = 0 ] && echo "iperf3_client_compare: $t round $r/$ROUNDS" >&2
        lr=(run "linerate $t round $r" "$OUT/lr_${t}_$r.json"
            "$LINERATE" bench 127.0.0.1 --iperf3 -p "$PORT" -t "$DURATION" "${extra[@]}" --json)
        ip=(run "iperf3 $t round $r" "$OUT/ip_${t}_$r.json"
            "$IPERF3" -c 127.0.0.1 -p "$PORT" -t "$DURATION" "${extra[@]}" -J)
        if [ $((r % 2)) = 1 ]; then "${lr[@]}"; "${ip[@]}"; else "${ip[@]}"; "${lr[@]}"; fi
    done
done
[ "$DRY" = 1 ] && exit 0

python3 - "$OUT" "$ROUNDS" "$ONLY" "$DURATION" "$UDP_RATE" "$UDP_LEN" <<'PY'
import json, pathlib, statistics, sys
out, rounds, only = pathlib.Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3].split(",")
duration, udp_rate, udp_len = sys.argv[4], sys.argv[5], sys.argv[6]

def load(p):
    try:
        return json.loads(p.read_text())
    except (FileNotFoundError, ValueError):
        return None

def linerate(t, r):
    d = load(out / f"lr_{t}_{r}.json")
    try:
        x = d["tests"][0]
        if x.get("error"):
            return None
        return x["gbps"], x.get("loss_percent")
    except (TypeError, KeyError, IndexError):
        return None

def iperf3(t, r):
    d = load(out / f"ip_{t}_{r}.json")
    try:
        if d.get("error"):
            return None
        e = d["end"]
        got = e.get("sum_received") or e["sum"]
        gbps = got["bits_per_second"] / 1e9
        if t == "udp" and "sum_received" not in e:
            gbps *= 1 - e["sum"]["lost_percent"] / 100
        return gbps, e["sum"].get("lost_percent") if t == "udp" else None
    except (TypeError, KeyError, AttributeError):
        return None

fmt = lambda v, d=2: "-" if v is None else f"{v:.{d}f}"
med = lambda v: statistics.median(v) if v else None
names = {"tcp1": "TCP, 1 stream", "tcp4": "TCP, -P 4", "rev": "TCP, -R",
         "udp": f"UDP at {udp_rate}b/s, -l {udp_len}"}
print(f"\nlinerate bench --iperf3 vs iperf3 -c, both against one stock iperf3 -s on 127.0.0.1, "
      f"{duration} s per run, {rounds} alternating rounds")
print(f"{'test':<24} {'linerate Gb/s':>22} {'iperf3 Gb/s':>22} {'ratio':>6}  loss % (lr / ip)")
ok = True
for t in only:
    lr = [x for x in (linerate(t, r) for r in range(1, rounds + 1)) if x]
    ip = [x for x in (iperf3(t, r) for r in range(1, rounds + 1)) if x]
    lg, ig = med([x[0] for x in lr]), med([x[0] for x in ip])
    span = lambda v: "-" if not v else f"{fmt(med(v))} ({fmt(min(v))}-{fmt(max(v))})"
    ratio = lg / ig if lg and ig else None
    loss = ""
    if t == "udp":
        ll = med([x[1] for x in lr if x[1] is not None])
        il = med([x[1] for x in ip if x[1] is not None])
        loss = f"{fmt(ll, 3)} / {fmt(il, 3)}"
        if ll is None or il is None or ll > il:
            ok = False
    if ratio is None or ratio < 1.0:
        ok = False
    missing = 2 * rounds - len(lr) - len(ip)
    note = f"  ({missing} run(s) failed)" if missing else ""
    print(f"{names[t]:<24} {span([x[0] for x in lr]):>22} {span([x[0] for x in ip]):>22} "
          f"{fmt(ratio):>6}  {loss}{note}")
print("\nverdict:", "meets the goal (ratio >= 1.0, UDP loss no higher)" if ok
      else "BELOW the goal on some test (noisy machine? rerun with more --rounds)")
PY
