#!/usr/bin/env bash
# linerate mem against a plain C memcpy loop over the same buffer size: one thread, and one
# thread per CPU (each with its own buffers, pinned, started together after a barrier, as
# linerate's all-thread copy does), alternating A B A B; prints the median of each and the ratio
# (targets: linerate ≥ 0.9 × C on one thread, ≥ 0.95 × C on all threads).
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
/* The reference: memcpy over two buffers of N MiB for about one second on each of T threads
 * (thread i pinned to CPU i, its buffers first touched by itself, all timing from a barrier);
 * GB/s = bytes copied by all threads / the longest thread's time. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec / 1e9; }
static size_t n; static pthread_barrier_t ready;
struct job { int cpu, pin; double bytes, secs; };
static void *run(void *arg) {
    struct job *j = arg;
    if (j->pin) { cpu_set_t s; CPU_ZERO(&s); CPU_SET(j->cpu, &s); pthread_setaffinity_np(pthread_self(), sizeof s, &s); }
    char *a = malloc(n), *b = malloc(n);
    if (!a || !b) exit(1);
    memset(a, 1, n); memset(b, 2, n);
    pthread_barrier_wait(&ready);
    double t0 = now(), t; unsigned long rounds = 0;
    do { memcpy(b, a, n); rounds++; t = now() - t0; } while (t < 1.0 && rounds < 1000000);
    j->bytes = (double)rounds * n; j->secs = t;
    if (b[n / 2] == 42) puts("");
    free(a); free(b);
    return NULL;
}
int main(int argc, char **argv) {
    n = (size_t)atol(argv[1]) << 20;
    int threads = argc > 2 ? atoi(argv[2]) : 1;
    if (threads < 1 || threads > 1024) return 2;
    struct job *jobs = calloc(threads, sizeof *jobs);
    pthread_t *t = calloc(threads, sizeof *t);
    pthread_barrier_init(&ready, NULL, threads);
    for (int i = 0; i < threads; i++) { jobs[i].cpu = i; jobs[i].pin = threads > 1; pthread_create(&t[i], NULL, run, &jobs[i]); }
    double bytes = 0, secs = 0;
    for (int i = 0; i < threads; i++) { pthread_join(t[i], NULL); bytes += jobs[i].bytes; if (jobs[i].secs > secs) secs = jobs[i].secs; }
    printf("%.3f\n", bytes / secs / 1e9);
    return 0;
}
C
gcc -O2 -pthread -o "$work/memcpy" "$work/memcpy.c"
cpus=$(nproc)
# linerate mem measures one thread and then (on more than one CPU) one per CPU in the same run.
lr1=(); lrn=(); c1=(); cn=()
for ((i = 1; i <= rounds; i++)); do
    read -r a b < <(timeout 120 "$lr" mem --size "${size_mib}M" --json | python3 -c '
import json, sys
t = [t for t in json.load(sys.stdin)["tests"] if t["kind"] == "mem_copy" and t.get("node") is None]
one = next(x["gb_per_s"] for x in t if x["threads"] == 1)
print(one, max((x["gb_per_s"] for x in t if x["threads"] > 1), default=one))')
    lr1+=("$a"); lrn+=("$b")
    c=$(timeout 60 "$work/memcpy" "$size_mib" 1); c1+=("$c")
    d=$(timeout 60 "$work/memcpy" "$size_mib" "$cpus"); cn+=("$d")
    echo "round $i: 1 thread: linerate $a GB/s, C $c GB/s; $cpus threads: linerate $b GB/s, C $d GB/s" >&2
done
python3 - "${lr1[*]}" "${c1[*]}" "${lrn[*]}" "${cn[*]}" "$cpus" <<'PY'
import statistics, sys
rows = [("copy, 1 thread", sys.argv[1], sys.argv[2], 0.9),
        (f"copy, {sys.argv[5]} threads", sys.argv[3], sys.argv[4], 0.95)]
print("| test | linerate median (min–max) | C memcpy median (min–max) | ratio | target |")
print("|---|---|---|---|---|")
for name, a, b, target in rows:
    lr = [float(x) for x in a.split()]
    c = [float(x) for x in b.split()]
    ml, mc = statistics.median(lr), statistics.median(c)
    verdict = "PASS" if ml / mc >= target else "FAIL"
    print(f"| {name} | {ml:.2f} GB/s ({min(lr):.2f}–{max(lr):.2f}) | {mc:.2f} GB/s ({min(c):.2f}–{max(c):.2f}) | {ml/mc:.2f} | {verdict} (≥ {target}) |")
PY
