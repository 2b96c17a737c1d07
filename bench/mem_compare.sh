#!/usr/bin/env bash
# linerate mem against a plain C memcpy loop over the same buffer size, one thread,
# alternating A B A B; prints the median of each and the ratio (target: linerate ≥ 0.9 × C).
# Usage: bench/mem_compare.sh [--rounds N] [--size MiB] [--linerate PATH]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=5
size_mib=256
lr=target/release/linerate
while (($#)); do
    case "$1" in
        --rounds) rounds=$2; shift 2 ;;
        --size) size_mib=$2; shift 2 ;;
        --linerate) lr=$2; shift 2 ;;
        *) echo "usage: $0 [--rounds N] [--size MiB] [--linerate PATH]" >&2; exit 2 ;;
    esac
done
((rounds >= 1 && rounds <= 20)) || { echo "--rounds: 1..20" >&2; exit 2; }
[ -x "$lr" ] || cargo build --release --locked -q
command -v gcc >/dev/null || { apt-get update -qq && apt-get install -y -qq gcc >/dev/null; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat > "$work/memcpy.c" <<'C'
/* The reference: memcpy over two buffers of N MiB for about one second; GB/s = bytes copied / s. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec / 1e9; }
int main(int argc, char **argv) {
    size_t n = (size_t)atol(argv[1]) << 20;
    char *a = malloc(n), *b = malloc(n);
    if (!a || !b) return 1;
    memset(a, 1, n); memset(b, 2, n);
    double t0 = now(), t; unsigned long rounds = 0;
    do { memcpy(b, a, n); rounds++; t = now() - t0; } while (t < 1.0 && rounds < 1000000);
    printf("%.3f\n", (double)rounds * n / t / 1e9);
    return b[n / 2] == 42;
}
C
gcc -O2 -o "$work/memcpy" "$work/memcpy.c"
lr_runs=(); c_runs=()
for ((i = 1; i <= rounds; i++)); do
    v=$(timeout 60 "$lr" mem --size "${size_mib}M" --threads 1 --json | python3 -c 'import json,sys; print(next(t["gb_per_s"] for t in json.load(sys.stdin)["tests"] if t["kind"]=="mem_copy" and t["threads"]==1))')
    lr_runs+=("$v")
    c=$(timeout 60 "$work/memcpy" "$size_mib")
    c_runs+=("$c")
    echo "round $i: linerate $v GB/s, C memcpy $c GB/s" >&2
done
python3 - "${lr_runs[*]}" "${c_runs[*]}" <<'PY'
import statistics, sys
lr = [float(x) for x in sys.argv[1].split()]
c = [float(x) for x in sys.argv[2].split()]
ml, mc = statistics.median(lr), statistics.median(c)
print("| test | linerate median (min–max) | C memcpy median (min–max) | ratio | target |")
print("|---|---|---|---|---|")
print(f"| copy, 1 thread | {ml:.2f} GB/s ({min(lr):.2f}–{max(lr):.2f}) | {mc:.2f} GB/s ({min(c):.2f}–{max(c):.2f}) | {ml/mc:.2f} | {'PASS' if ml/mc >= 0.9 else 'FAIL'} (≥ 0.9) |")
PY
