#!/usr/bin/env bash
# What `linerate watch` costs per refresh: the process's CPU time (user + system, its
# children's included) per refresh over DURATION, against the loop people write: procps
# `watch -n INTERVAL 'xargs cat < FILES'` over the same counter files (in a terminal too). Each
# tool runs in a terminal of its own (a private tmux server, 200x50), one after another, in
# ROUNDS alternating rounds (BASE, LINERATE, the cat loop, then again), and the medians are
# compared side by side. Then, with strace, what each one does per refresh: the files it opens
# and the reads it makes (read + pread64 + recvmsg), counted between a short and a long run.
#
#   bench/watch_cpu.sh                          # MODE=fixture, 64 ports, 3 rounds of 20 s
#   PORTS=512 bench/watch_cpu.sh
#   MODE=netns PORTS=64 sudo -E bench/watch_cpu.sh
#   BASE=/tmp/old/linerate bench/watch_cpu.sh  # an earlier build side by side
#
# MODE=fixture: a fixture tree of PORTS InfiniBand ports (ConnectX-3 at 4X QDR, each with its
# counters/ and one IPoIB interface's statistics/), as crates/linerate-cli/tests/soak_tree/
# makes; the counters move while it runs (a writer adds to every port's port_rcv_data and
# port_xmit_data each 100 ms, outside the figures). A tree has no rtnetlink: watch reads files.
# MODE=netns (root): PORTS/2 veth pairs in a network namespace of this script's own, the live
# kernel's sysfs and rtnetlink: watch reads every netdev's statistics and carrier counts from
# one rtnetlink dump; the cat loop reads their files (statistics/* and carrier_*).
#
# CPU time: as root where a cgroup v2 hierarchy is mounted, each run is a cgroup of its own and
# its time is the cgroup's `cpu.stat` usage (microseconds, every process of the run, reaped or
# not); else utime + stime + cutime + cstime of the process tree from /proc (clock ticks, 10 ms
# each: quote those only over long runs). The header line says which.
#
# Variables: LINERATE (default target/release/linerate, built if missing), BASE (none),
# PORTS (64), ROUNDS (3), DURATION (20 s per run), INTERVALS ("1 0.1"), STRACE (1; 0 skips the
# counts). Quote the ratios to the cat loop taken side by side: these machines are shared and
# absolute CPU times move with the load (check `uptime` first). Needs tmux, procps, strace.
set -euo pipefail
cd "$(dirname "$0")/.."
MODE=${MODE:-fixture}
PORTS=${PORTS:-64}
ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-20}
INTERVALS=${INTERVALS:-1 0.1}
STRACE=${STRACE:-1}
bin=${LINERATE:-$PWD/target/release/linerate}
base=${BASE:-}
for t in tmux watch; do
    command -v "$t" >/dev/null || {
        echo "watch_cpu.sh: $t is needed (apt-get install tmux procps)" >&2
        exit 2
    }
done
if [ "$STRACE" = 1 ] && ! command -v strace >/dev/null; then
    echo "watch_cpu.sh: strace is needed for the counts (apt-get install strace), or STRACE=0" >&2
    exit 2
fi
case $MODE in
fixture) ;;
netns)
    [ "$(id -u)" = 0 ] || {
        echo "watch_cpu.sh: MODE=netns needs root (ip netns)" >&2
        exit 2
    }
    ;;
*)
    echo "watch_cpu.sh: MODE=$MODE: expected fixture or netns" >&2
    exit 2
    ;;
esac
[ -x "$bin" ] || cargo build --release --locked -q -p linerate
[ -z "$base" ] || [ -x "$base" ] || {
    echo "watch_cpu.sh: BASE=$base is not an executable" >&2
    exit 2
}
tick=$(getconf CLK_TCK)
sock=linerate-watch-cpu-$$
# A cgroup v2 hierarchy this script may make cgroups in (root), else the ticks of /proc.
cgroot=
if [ "$(id -u)" = 0 ]; then
    cgroot=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
    if [ -n "$cgroot" ] && mkdir "$cgroot/$sock-probe" 2>/dev/null; then
        rmdir "$cgroot/$sock-probe"
    else
        cgroot=
    fi
fi
tmp=$(mktemp -d)
ns=lrwcpu-$$
writer=
runs=0
cleanup() {
    [ -n "$writer" ] && kill "$writer" 2>/dev/null || true
    for i in $(seq 1 "$runs"); do
        tmux -L "$sock-$i" kill-server 2>/dev/null || true
        rm -f "${TMUX_TMPDIR:-/tmp}/tmux-$(id -u)/$sock-$i"
        [ -z "$cgroot" ] || [ ! -d "$cgroot/$sock-$i" ] || rmdir "$cgroot/$sock-$i" 2>/dev/null || true
    done
    [ "$MODE" = netns ] && ip netns del "$ns" 2>/dev/null || true
    rm -rf "$tmp"
}
trap cleanup EXIT

# in_ns CMD...: CMD where the ports are (the namespace in MODE=netns).
in_ns() {
    if [ "$MODE" = netns ]; then
        ip netns exec "$ns" "$@"
    else
        "$@"
    fi
}

if [ "$MODE" = fixture ]; then
    # The fixture's device copied PORTS-1 times (the class links added), as
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
    rootarg="--root $root"
    # The counters move: every port's data counters, every 100 ms, in place.
    (
        v=1000000
        while :; do
            v=$((v + 31250000))
            for d in "$class"/*; do
                echo "$v" >"$d/ports/1/counters/port_rcv_data"
                echo "$v" >"$d/ports/1/counters/port_xmit_data"
            done
            sleep 0.1
        done
    ) &
    writer=$!
else
    ip netns add "$ns"
    ip -n "$ns" link set lo up
    # No IPv6: the pairs stay quiet but for what the kernel does with a link that is up.
    ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1
    ip netns exec "$ns" sysctl -qw net.ipv6.conf.default.disable_ipv6=1
    for i in $(seq 1 $((PORTS / 2))); do
        echo "link add wv${i}a type veth peer name wv${i}b"
        echo "link set wv${i}a up"
        echo "link set wv${i}b up"
    done | ip -n "$ns" -batch -
    files=$(in_ns sh -c 'ls /sys/class/net/*/statistics/* /sys/class/net/*/carrier_changes /sys/class/net/*/carrier_up_count /sys/class/net/*/carrier_down_count | grep -v "/lo/"')
    rootarg=
fi
echo "$files" >"$tmp/files"
nfiles=$(wc -l <"$tmp/files")

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

# CPU seconds of the cgroup CG, from its microseconds.
cg_s() {
    awk '$1 == "usage_usec" { printf "%.6f\n", $2 / 1e6 }' "$1/cpu.stat"
}

# run NAME INTERVAL COMMAND: COMMAND in a fresh tmux window for DURATION seconds; one row, and
# "NAME INTERVAL ms-per-refresh" in $tmp/rows.
run() {
    local name=$1 interval=$2 cmd=$3
    runs=$((runs + 1))
    local sock=$sock-$runs cg=
    if [ -n "$cgroot" ]; then
        cg=$cgroot/$sock
        mkdir "$cg"
        cmd="echo \$\$ > $cg/cgroup.procs && exec $cmd"
    fi
    tmux -L "$sock" -f /dev/null new-session -d -s run -x 200 -y 50 "$cmd"
    sleep 2
    local pid
    pid=$(tmux -L "$sock" display -p -t run '#{pane_pid}')
    local c0 c1
    if [ -n "$cg" ]; then c0=$(cg_s "$cg"); else c0=$(cpu_s "$pid"); fi
    sleep "$DURATION"
    if [ -n "$cg" ]; then c1=$(cg_s "$cg"); else c1=$(cpu_s "$pid"); fi
    tmux -L "$sock" kill-server 2>/dev/null || true
    if [ -n "$cg" ]; then
        # The cgroup goes once its processes have.
        for _ in 1 2 3 4 5 6 7 8 9 10; do
            rmdir "$cg" 2>/dev/null && break
            sleep 0.2
        done
    fi
    awk -v n="$name" -v i="$interval" -v c0="$c0" -v c1="$c1" -v d="$DURATION" 'BEGIN {
        cpu = c1 - c0; refreshes = d / i
        printf "| %s | %s s | %.3f s | %.2f %% | %.2f ms |\n", n, i, cpu, 100 * cpu / d, 1000 * cpu / refreshes
    }'
    awk -v n="$name" -v i="$interval" -v c0="$c0" -v c1="$c1" -v d="$DURATION" 'BEGIN {
        printf "%s\t%s\t%.4f\n", n, i, 1000 * (c1 - c0) / (d / i)
    }' >>"$tmp/rows"
}

ns_prefix=
[ "$MODE" = netns ] && ns_prefix="ip netns exec $ns "
tools=()
[ -n "$base" ] && tools+=("before:$base")
tools+=("after:$bin")

if [ -n "$cgroot" ]; then
    accounting="a cgroup per run (cpu.stat, microseconds)"
else
    accounting="/proc of the process tree (clock ticks of $((1000 / tick)) ms)"
fi
echo "linerate watch CPU, MODE=$MODE: $PORTS ports ($nfiles counter files), ${DURATION} s per run, $ROUNDS rounds, $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg), CPU time from $accounting"
echo
echo "| run | interval | CPU time | of one core | per refresh |"
echo "|---|---|---|---|---|"
for i in $INTERVALS; do
    for r in $(seq 1 "$ROUNDS"); do
        for t in "${tools[@]}"; do
            label=${t%%:*}
            exe=${t#*:}
            run "linerate watch $label (screen)" "$i" "${ns_prefix}$exe watch $rootarg -i ${i}s"
        done
        run "watch -n $i cat (the same files)" "$i" "${ns_prefix}watch -n $i 'xargs cat < $tmp/files'"
    done
done
echo
echo "Medians per refresh, and the ratio to the cat loop's median:"
echo
echo "| run | interval | CPU per refresh | ratio to the cat loop |"
echo "|---|---|---|---|"
awk -F'\t' '
    { v[$1 FS $2] = v[$1 FS $2] " " $3; order[$1 FS $2] = NR }
    END {
        for (k in v) {
            n = split(substr(v[k], 2), a, " ")
            # median
            for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
            m[k] = (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
        }
        for (k in m) {
            split(k, p, FS)
            cat = m["watch -n " p[2] " cat (the same files)" FS p[2]]
            printf "| %s | %s s | %.2f ms | %.2fx |\n", p[1], p[2], m[k], (cat > 0 ? m[k] / cat : 0)
        }
    }' "$tmp/rows" | sort -t'|' -k3,3 -k2,2

[ "$STRACE" = 1 ] || exit 0

# What each does per refresh: strace's counts over a run of N2 refreshes less one of N1, so
# the start (the inventory, the first listing of every directory) is not counted.
N1=5
N2=25
# counts NAME COMMAND: the calls per refresh, one row (@N@ in COMMAND is the refreshes).
counts() {
    local name=$1 cmd=$2 a b
    a=$tmp/strace-$runs-a
    b=$tmp/strace-$runs-b
    runs=$((runs + 1))
    in_ns strace -f -qq -c -U name,calls -o "$a" sh -c "${cmd//@N@/$N1}" >/dev/null 2>&1 || true
    in_ns strace -f -qq -c -U name,calls -o "$b" sh -c "${cmd//@N@/$N2}" >/dev/null 2>&1 || true
    awk -v n="$name" -v k=$((N2 - N1)) '
        FNR == NR { a[$1] = $2; next }
        { b[$1] = $2 }
        END {
            o = (b["openat"] - a["openat"]) / k
            r = (b["read"] + b["pread64"] + b["recvmsg"] + b["recvfrom"] - a["read"] - a["pread64"] - a["recvmsg"] - a["recvfrom"]) / k
            p = (b["pread64"] - a["pread64"]) / k
            nl = (b["recvmsg"] + b["recvfrom"] - a["recvmsg"] - a["recvfrom"]) / k
            printf "| %s | %.0f | %.0f | %.0f | %.0f |\n", n, o, r, p, nl
        }' "$a" "$b"
}
echo
echo "Per refresh (strace, the calls of a $N2-refresh run less those of a $N1-refresh one):"
echo
echo "| run | files opened | reads (read, pread64, recvmsg) | of which pread64 | of which rtnetlink |"
echo "|---|---|---|---|---|"
for t in "${tools[@]}"; do
    label=${t%%:*}
    exe=${t#*:}
    counts "linerate watch $label" "$exe watch $rootarg -i 0.1s --plain --count @N@ > /dev/null"
done
counts "xargs cat (the same files)" "for i in \$(seq 1 @N@); do xargs cat < $tmp/files > /dev/null; done"
