#!/usr/bin/env bash
# What `linerate watch` costs per refresh with 64 ports: the process's CPU time (user + system,
# its children's included) over DURATION at 1 s and at 0.1 s intervals, on a fixture tree of
# PORTS InfiniBand ports (ConnectX-3 at 4X QDR, each with its counters/ and its IPoIB
# interface's statistics/), against the loop people write: `watch -n1 cat` over the same counter
# files (procps watch, in a terminal too). Each tool runs in a terminal of its own (a private
# tmux server, 200x50), one after another, and the counters move while they run (a writer adds
# to every port's port_rcv_data and port_xmit_data each 100 ms, outside the figures).
#
#   bench/watch_cpu.sh                    # 60 s per run, 64 ports (about 7 minutes)
#   DURATION=20 PORTS=16 bench/watch_cpu.sh
#   LINERATE=path/to/linerate bench/watch_cpu.sh
#
# Runs: linerate's screen, its plain lines to /dev/null, and `watch -n INTERVAL cat FILES`, each
# at 1 s and 0.1 s. Quote the ratios to the cat loop taken side by side: these machines are
# shared, and absolute CPU times move with the load (check `uptime` first). Needs tmux and procps.
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${DURATION:-60}
PORTS=${PORTS:-64}
bin=${LINERATE:-$PWD/target/release/linerate}
for t in tmux watch; do
    command -v "$t" >/dev/null || {
        echo "watch_cpu.sh: $t is needed (apt-get install tmux procps)" >&2
        exit 2
    }
done
[ -x "$bin" ] || cargo build --release --locked -q -p linerate
tick=$(getconf CLK_TCK)
sock=linerate-watch-cpu-$$
tmp=$(mktemp -d)
writer=
cleanup() {
    [ -n "$writer" ] && kill "$writer" 2>/dev/null || true
    for i in $(seq 1 "$runs"); do
        tmux -L "$sock-$i" kill-server 2>/dev/null || true
        rm -f "${TMUX_TMPDIR:-/tmp}/tmux-$(id -u)/$sock-$i"
    done
    rm -rf "$tmp"
}
trap cleanup EXIT

# The tree: the fixture's device copied PORTS-1 times (the class links added), as
# crates/linerate-cli/tests/soak_tree/mod.rs does.
root=$tmp/root
cp -a fixtures/sysfs/cx3-fdr-at-qdr-datagram "$root"
class=$root/sys/class/infiniband
target=$(readlink "$class/mlx4_0")
real=$(cd "$class" && cd "$(dirname "$target")" && pwd)
for i in $(seq 1 $((PORTS - 1))); do
    cp -a "$real/mlx4_0" "$real/mlx4_$i"
    ln -s "$(dirname "$target")/mlx4_$i" "$class/mlx4_$i"
done
files=$(ls "$root"/sys/class/infiniband/*/ports/*/counters/* "$root"/sys/class/net/*/statistics/*)
nfiles=$(echo "$files" | wc -l)

# The counters move: every port's data counters, every 100 ms.
(
    v=1000000
    while :; do
        v=$((v + 31250000))
        for d in "$class"/*; do
            echo "$v" > "$d/ports/1/counters/port_rcv_data"
            echo "$v" > "$d/ports/1/counters/port_xmit_data"
        done
        sleep 0.1
    done
) &
writer=$!

# CPU seconds of a process, its live descendants and every child they reaped:
# utime + stime + cutime + cstime over the tree.
cpu_s() {
    local pids=$1 todo=$1 p c
    while [ -n "$todo" ]; do
        set -- $todo
        todo=
        for p in "$@"; do
            for c in $(cat /proc/"$p"/task/*/children 2>/dev/null); do
                pids="$pids $c"
                todo="$todo $c"
            done
        done
    done
    for p in $pids; do
        cat "/proc/$p/stat" 2>/dev/null || true
    done | awk -v t="$tick" '{ sub(/.*\) /, ""); s += $12 + $13 + $14 + $15 } END { print s / t }'
}

# run NAME INTERVAL COMMAND: COMMAND in a fresh tmux window for DURATION seconds; one row.
runs=0
run() {
    local name=$1 interval=$2 cmd=$3
    runs=$((runs + 1))
    local sock=$sock-$runs
    tmux -L "$sock" -f /dev/null new-session -d -s run -x 200 -y 50 "$cmd"
    sleep 2
    local pid
    pid=$(tmux -L "$sock" display -p -t run '#{pane_pid}')
    local c0 c1
    c0=$(cpu_s "$pid")
    sleep "$DURATION"
    c1=$(cpu_s "$pid")
    tmux -L "$sock" kill-server 2>/dev/null || true
    awk -v n="$name" -v i="$interval" -v c0="$c0" -v c1="$c1" -v d="$DURATION" 'BEGIN {
        cpu = c1 - c0; refreshes = d / i
        printf "| %s | %s s | %.2f s | %.2f %% | %.2f ms |\n", n, i, cpu, 100 * cpu / d, 1000 * cpu / refreshes
    }'
}

echo "linerate watch CPU: $PORTS ports ($nfiles counter files), ${DURATION} s per run, $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| run | interval | CPU time | of one core | per refresh |"
echo "|---|---|---|---|---|"
for i in 1 0.1; do
    run "linerate watch (screen)" "$i" "$bin watch --root $root -i ${i}s"
    run "linerate watch --plain > /dev/null" "$i" "sh -c 'exec $bin watch --root $root -i ${i}s --plain > /dev/null'"
    echo "$files" > "$tmp/files"
    run "watch -n $i cat (the same files)" "$i" "watch -n $i 'xargs cat < $tmp/files'"
done
