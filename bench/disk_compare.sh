#!/usr/bin/env bash
# Side-by-side benchmark: `linerate disk` against fio (io_uring engine), same file size, block size,
# queue depth and O_DIRECT flag, on tmpfs (/dev/shm) and on the root filesystem.
#
#   bench/disk_compare.sh                       # 3 rounds x 5 s, 1 GiB files (about 3 min)
#   bench/disk_compare.sh --rounds 5 --time 3 --size 2G --dirs "/dev/shm /mnt/nvme"
#   bench/disk_compare.sh --tests rand_read --busy-core 0   # one core held by a busy loop
#
# Tests: 1 MiB sequential read (GB/s = 10^9 byte/s), 4 KiB random read (IOPS), both at QD 32, and
# 4 KiB random read with 2 jobs (`--jobs 2` against fio `--numjobs=2 --group_reporting`; linerate
# gives each job half of the file, fio's jobs share the whole file).
# Runs alternate because these machines are shared and noisy, and who goes first alternates too
# (linerate, fio | fio, linerate | ...), after a warm-up pair that is left out: quote the ratio of
# medians taken side by side (target: linerate/fio >= 1.0), not absolute figures.
# fio is installed from Debian when missing (needs root). linerate decides O_DIRECT (tmpfs before
# Linux 6.6 and ramfs refuse it); fio gets the same --direct. Both read a file written just before
# (linerate fills its own each run; fio's is deleted and laid out again each round), untimed.
set -uo pipefail

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_DIR=$(cd "$BENCH_DIR/.." && pwd)

ROUNDS=3
TIME=5
SIZE=1G
QD=32
LINERATE="$REPO_DIR/target/release/linerate"
DIRS=""
KEEP_RAW=0
TESTS="seq_read,rand_read,rand_read_j2"
BUSY_CORE=""
WARMUP=1

usage() {
    sed -n '2,17p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
    cat <<'EOF'
Options:
  --rounds N        alternating rounds per test (default 3, 1-20)
  --time T          seconds per run (default 5, 1-60)
  --size BYTES      test file size for both tools (default 1G; K/M/G suffixes)
  --qd N            queue depth (default 32)
  --dirs "D1 D2"    directories to test (default: /dev/shm and a new directory under /var/tmp)
  --linerate PATH   linerate binary (default target/release/linerate; built if missing)
  --tests T1,T2     tests to run: seq_read, rand_read, rand_read_j2 (default all three)
  --busy-core CPU   hold CPU busy with a pinned busy loop (taskset) during every run of both
                    tools: the "one core busy with other work" setting
  --no-warmup       no warm-up pair (by default one run of each tool per test comes first and
                    is left out: the first runs on a new file are the slowest for both)
  --keep-raw        keep every run's JSON in bench/results/disk-<timestamp>.raw/
  -h, --help        this text
EOF
}

while [ $# -gt 0 ]; do
    case "$1" in
        --rounds) ROUNDS="$2"; shift 2 ;;
        --time) TIME="$2"; shift 2 ;;
        --size) SIZE="$2"; shift 2 ;;
        --qd) QD="$2"; shift 2 ;;
        --dirs) DIRS="$2"; shift 2 ;;
        --linerate) LINERATE="$2"; shift 2 ;;
        --keep-raw) KEEP_RAW=1; shift ;;
        --tests) TESTS="$2"; shift 2 ;;
        --busy-core) BUSY_CORE="$2"; shift 2 ;;
        --no-warmup) WARMUP=0; shift ;;
        -h|--help) usage; exit 0 ;;
        *) echo "disk_compare.sh: unknown option $1" >&2; usage >&2; exit 2 ;;
    esac
done
case "$ROUNDS" in ''|*[!0-9]*) echo "--rounds: a number" >&2; exit 2 ;; esac
case "$TIME" in ''|*[!0-9]*) echo "--time: whole seconds" >&2; exit 2 ;; esac
[ "$ROUNDS" -ge 1 ] && [ "$ROUNDS" -le 20 ] || { echo "--rounds: 1-20" >&2; exit 2; }
[ "$TIME" -ge 1 ] && [ "$TIME" -le 60 ] || { echo "--time: 1-60" >&2; exit 2; }
for t in ${TESTS//,/ }; do
    case "$t" in seq_read|rand_read|rand_read_j2) ;; *) echo "--tests: seq_read, rand_read, rand_read_j2 (got $t)" >&2; exit 2 ;; esac
done
if [ -n "$BUSY_CORE" ]; then
    case "$BUSY_CORE" in *[!0-9]*) echo "--busy-core: a CPU number" >&2; exit 2 ;; esac
    [ "$BUSY_CORE" -lt "$(nproc)" ] || { echo "--busy-core: this machine has CPUs 0-$(($(nproc) - 1))" >&2; exit 2; }
    command -v taskset >/dev/null || { echo "--busy-core needs taskset (util-linux)" >&2; exit 2; }
fi

# fio from Debian when missing.
if ! command -v fio >/dev/null 2>&1; then
    if [ "$(id -u)" -ne 0 ]; then
        echo "fio is missing and installing it needs root: apt-get install fio" >&2
        exit 2
    fi
    echo "installing fio from Debian ..." >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y fio >/dev/null 2>&1 \
        || { apt-get update >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y fio >/dev/null; } \
        || { echo "could not install fio" >&2; exit 2; }
fi
if [ ! -x "$LINERATE" ]; then
    echo "building linerate (release) ..." >&2
    (cd "$REPO_DIR" && cargo build --release --locked -p linerate >&2) || exit 2
fi

RAW=$(mktemp -d)
MADE_DIR=""
BUSY_PID=""
cleanup() {
    if [ -n "$BUSY_PID" ]; then kill "$BUSY_PID" 2>/dev/null; wait "$BUSY_PID" 2>/dev/null; fi
    for d in $DIRS; do rm -f "$d"/linerate-bench-fio.dat; done
    [ -n "$MADE_DIR" ] && rm -rf "$MADE_DIR"
    if [ "$KEEP_RAW" = 1 ]; then
        local keep
        keep="$BENCH_DIR/results/disk-$(date +%Y%m%d-%H%M%S).raw"
        mkdir -p "$keep" && cp -r "$RAW"/. "$keep"/ && echo "raw outputs kept in $keep" >&2
    fi
    rm -rf "$RAW"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if [ -z "$DIRS" ]; then
    MADE_DIR=$(mktemp -d /var/tmp/linerate-disk-bench.XXXXXX)
    DIRS="/dev/shm $MADE_DIR"
fi

# Bytes from 1G / 512M / 4096.
to_bytes() {
    python3 -c 'import sys
s = sys.argv[1].strip(); m = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
print(int(float(s[:-1]) * m[s[-1].upper()]) if s[-1].upper() in m else int(s))' "$1"
}
SIZE_BYTES=$(to_bytes "$SIZE") || { echo "--size: e.g. 1G" >&2; exit 2; }
LIMIT=$((TIME + 300)) # a run that takes this long is killed (fill or layout included)

if [ -n "$BUSY_CORE" ]; then
    # Bounded whatever happens to this script: every run's limit, for every run.
    timeout $(( (TIME + 60) * ROUNDS * 6 + 120 )) taskset -c "$BUSY_CORE" sh -c 'while :; do :; done' &
    BUSY_PID=$!
    echo "CPU $BUSY_CORE held by a busy loop (pid $BUSY_PID)" >&2
    sleep 0.5
fi
echo "uptime: $(uptime)" >&2
RESULTS="$RAW/results.tsv" # dir, test, tool, round, value, direct
label() { if [ "$1" = 0 ]; then echo "warm-up (left out)"; else echo "round $1"; fi; }
: >"$RESULTS"

for dir in $DIRS; do
    [ -d "$dir" ] || { echo "skipping $dir: not a directory" >&2; continue; }
    direct=""
    for test in ${TESTS//,/ }; do
        jobs=1
        case "$test" in
            seq_read) bs=1M; rw=read; lr_test=seq_read ;;
            rand_read) bs=4k; rw=randread; lr_test=rand_read ;;
            rand_read_j2) bs=4k; rw=randread; lr_test=rand_read; jobs=2 ;;
        esac
        # One run of each tool; round 0 is the warm-up pair, run and left out of the results.
        run_linerate() {
            local round=$1 out value d
            out="$RAW/$(basename "$dir")-$test-linerate-$round.json"
            if timeout "$LIMIT" "$LINERATE" disk "$dir" --size "$SIZE_BYTES" --time "$TIME" \
                --block 1M --qd "$QD" --jobs "$jobs" --tests "$lr_test" --engine io_uring --json >"$out" 2>"$out.err"; then
                read -r value d < <(python3 -c 'import json,sys
doc = json.load(open(sys.argv[1])); t = doc["tests"][0]
print(t["gb_per_s"] if sys.argv[2] == "seq_read" else t["iops"], "1" if t["direct"] else "0")' "$out" "$test")
                direct=$d
                [ "$round" -gt 0 ] && printf '%s\t%s\tlinerate\t%s\t%s\t%s\n' "$dir" "$test" "$round" "$value" "$d" >>"$RESULTS"
                echo "$dir $test $(label "$round"): linerate $value" >&2
            else
                echo "$dir $test $(label "$round"): linerate failed: $(cat "$out.err")" >&2
            fi
        }
        # fio, same parameters, on a freshly laid-out file as linerate's is (untimed).
        run_fio() {
            local round=$1 out value
            out="$RAW/$(basename "$dir")-$test-fio-$round.json"
            rm -f "$dir/linerate-bench-fio.dat"
            if timeout "$LIMIT" fio --name=linerate-bench --filename="$dir/linerate-bench-fio.dat" \
                --size="$SIZE_BYTES" --bs="$bs" --rw="$rw" --iodepth="$QD" --ioengine=io_uring \
                --direct="${direct:-1}" --time_based --runtime="$TIME" --norandommap --randrepeat=0 \
                --invalidate=1 --numjobs="$jobs" --group_reporting --output-format=json >"$out" 2>"$out.err"; then
                value=$(python3 -c 'import json,sys
r = json.load(open(sys.argv[1]))["jobs"][0]["read"]
print(round(r["bw_bytes"] / 1e9, 3) if sys.argv[2] == "seq_read" else round(r["iops"]))' "$out" "$test")
                [ "$round" -gt 0 ] && printf '%s\t%s\tfio\t%s\t%s\t%s\n' "$dir" "$test" "$round" "$value" "${direct:-1}" >>"$RESULTS"
                echo "$dir $test $(label "$round"): fio $value" >&2
            else
                echo "$dir $test $(label "$round"): fio failed: $(cat "$out.err")" >&2
            fi
        }
        first=$([ "$WARMUP" = 1 ] && echo 0 || echo 1)
        for round in $(seq "$first" "$ROUNDS"); do
            # Who goes first alternates (linerate in odd rounds, fio in even ones): on a disk
            # whose throughput drifts from run to run (a virtual disk's host cache warming), the
            # first of a pair is otherwise always the one on the colder side of the drift.
            if [ $((round % 2)) -eq 1 ]; then
                run_linerate "$round"; run_fio "$round"
            else
                run_fio "$round"; run_linerate "$round"
            fi
        done
    done
    rm -f "$dir/linerate-bench-fio.dat"
done

python3 - "$RESULTS" "$TIME" "$ROUNDS" "$SIZE" "$QD" "$BUSY_CORE" <<'EOF'
import collections, statistics, subprocess, sys

path, secs, rounds, size, qd, busy = sys.argv[1:7]
runs = collections.defaultdict(list)
by_round = collections.defaultdict(dict)
direct = {}
for line in open(path):
    d, test, tool, rnd, value, dflag = line.rstrip("\n").split("\t")
    runs[(d, test, tool)].append(float(value))
    by_round[(d, test, int(rnd))][tool] = float(value)
    direct[d] = dflag == "1"

def fs(d):
    try:
        out = subprocess.run(["findmnt", "-n", "-o", "FSTYPE", "-T", d], capture_output=True, text=True)
        lines = out.stdout.split()
        return lines[-1] if lines else "?"
    except OSError:
        return "?"

setting = f", CPU {busy} held by a busy loop" if busy else ""
print(f"\nlinerate disk vs fio (io_uring), {rounds} alternating rounds x {secs} s, file {size}, QD {qd}{setting}\n")
print("| path | test | linerate median (runs) | fio median (runs) | linerate/fio | each round | verdict |")
print("|---|---|---|---|---|---|---|")
dirs = list(dict.fromkeys(d for d, _, _ in runs))
for d in dirs:
    for test, unit, label in [("seq_read", "GB/s", "1 MiB seq read"), ("rand_read", "IOPS", "4 KiB rand read"),
                              ("rand_read_j2", "IOPS", "4 KiB rand read, 2 jobs")]:
        a, b = runs.get((d, test, "linerate"), []), runs.get((d, test, "fio"), [])
        if not a and not b:
            continue
        if not a or not b:
            print(f"| {d} | {label} | {a or '-'} | {b or '-'} | - | - | incomplete |")
            continue
        each = [r["linerate"] / r["fio"] for k, r in sorted(by_round.items())
                if k[0] == d and k[1] == test and r.get("fio") and "linerate" in r]
        ma, mb = statistics.median(a), statistics.median(b)
        ratio = ma / mb if mb else float("nan")
        fmt = (lambda x: f"{x:.2f}") if unit == "GB/s" else (lambda x: f"{x:,.0f}")
        verdict = "ok (>= 1.0)" if ratio >= 1.0 else ("within 5%" if ratio >= 0.95 else "BEHIND by more than 5%")
        if ratio >= 1.0 and any(x < 1.0 for x in each):
            verdict = "median ok, a round below 1.0"
        rounds_s = ", ".join(f"{x:.2f}" for x in each)
        mode = "O_DIRECT" if direct.get(d) else "buffered"
        print(f"| {d} ({fs(d)}, {mode}) | {label}, {unit} | {fmt(ma)} ({', '.join(fmt(x) for x in a)}) "
              f"| {fmt(mb)} ({', '.join(fmt(x) for x in b)}) | {ratio:.3f} | {rounds_s} | {verdict} |")
EOF
