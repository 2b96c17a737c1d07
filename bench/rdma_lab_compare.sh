#!/usr/bin/env bash
# linerate's RDMA engine over real verbs against perftest, in the lab: two QEMU guests of Debian's
# stock 6.1 kernel (crates/linerate-lab), joined by a virtual wire, each with a soft-RoCE device
# rxe0 (a 198.18.0.1 -> b 198.18.0.2). Both tools run on the same guests, the same devices and the
# same rdma_cm connection path (perftest -R; linerate through libfabric's verbs provider, which
# connects through rdma_cm as well), alternately, ROUNDS rounds per test.
#
#   ROUNDS=3 bench/rdma_lab_compare.sh            # default: about 20-25 min under TCG
#   ROUNDS=5 DURATION=10 LARGE_DURATION=20 WIDE_WINDOW=0 bench/rdma_lab_compare.sh
#   TESTS="write:65536 lat" ROUNDS=1 bench/rdma_lab_compare.sh   # a quick look
#
# What is compared (guest a runs the clients, guest b the servers):
#   bandwidth, send / write / read, at perftest's default message size (65536 B) and at the
#     largest size of linerate's --sweep (8 MiB = perftest -a's largest):
#       linerate bench 198.18.0.2 --rdma --provider verbs --op OP -l SIZE -t SECS -J
#         against one `linerate serve -B 198.18.0.2 --max-length 8M` in guest b for the whole run
#         (--max-length raises the server's per-test memory bound, 64 x 2 x max-length = 1 GiB,
#         above the 208 MiB an 8 MiB send test registers: linerate posts one message-sized receive
#         per outstanding send; with the default 1M the server allows 128 MiB and refuses it);
#         figure: .tests[0].rdma.sizes[0].gbps (payload, 10^9 bit/s, first post to last
#         completion; the same as .tests[0].gbps, which is rounded to 0.001);
#       ib_OP_bw -d rxe0 -R -D SECS -s SIZE -F --report_gbits [198.18.0.2]
#         figure: "BW average[Gb/sec]" of the client (perftest 4.5 counts the completions of the
#         middle SECS - 2 x margin seconds, margin = SECS/4 by default; without --report_gbits
#         it prints MiB/s = 2^20 byte/s: Gb/s = MiB/s / 119.2).
#       SECS = DURATION at 64 KiB, LARGE_DURATION at 1 MiB and more: under TCG an 8 MiB message
#       takes a second or more, and perftest counts whole messages in its middle half.
#     Goal: linerate / perftest >= 0.95 (ratio of the medians) at both sizes, for all three ops.
#   latency, RDMA write ping-pong at 2 bytes (ib_write_lat's default size):
#       linerate bench ... --rdma --provider verbs --op write --latency -l 2 -t DURATION -J
#         figure: .tests[0].rdma.perftest_p50_us (perftest's t_typical on its terms: the median round trip / 2 for write and send, a read's median completion for read)
#       ib_write_lat -d rxe0 -R -s 2 -n LAT_ITERS -F
#         figure: t_typical (perftest's median of (time between two posts) / 2; the median, not
#         t_avg, because linerate's figure is a median too and medians shrug off the scheduler
#         stalls a TCG guest takes now and then).
#     Goal: linerate / perftest <= 1.05.
#   Windows: perftest's bandwidth tests keep 128 operations outstanding (--tx-depth default),
#     linerate 16 (-w default). Each tool runs at its own defaults (the "lr_w16" column, the one
#     the goals are judged on), and linerate runs once more with -w WIDE_WINDOW (128, perftest's
#     depth: the "lr_w128" column) at sizes up to WIDE_MAX (64 KiB), so a gap that is only the
#     window shows as such. Not at 8 MiB: 16 messages of 8 MiB are already 128 MiB in flight,
#     far beyond what the wire holds; linerate drains its window at the end of a run (128 x 8 MiB
#     = 1 GiB: minutes at TCG rates, where perftest stops without draining), and an 8 MiB send at
#     -w 128 would register 1.1 GiB per side (one message-sized receive per outstanding message),
#     over linerate's 1 GiB region limit. At 8 MiB linerate runs at -w NARROW_WINDOW (2) instead
#     ("lr_w2"): still a message queued behind the one on the wire, and a drain short enough for
#     the server's deadline (duration + 10 s) and the engine's 5 s per-operation time-out, which
#     16 x 8 MiB at TCG's few MB/s overrun (see bench/README.md).
#   Around every client run the script reads /proc/stat and ksoftirqd/0's schedstat in both
#   guests: each test's table is followed by the guests' user/system/softirq/idle shares and how
#   long ksoftirqd waited for the CPU, per tool.
# Under TCG both tools pay the same emulation (every guest instruction, rxe's copies and CRCs
# included, runs on a host thread that this 2-core machine shares with other work), so absolute
# figures say nothing about RDMA hardware: the ratios of runs taken side by side are what count.
# Who goes first alternates by round (odd rounds linerate, even rounds perftest).
#
# Environment:
#   ROUNDS (3)         rounds per test (1-20)
#   DURATION (8)       seconds per bandwidth run below 1 MiB (both tools), and of linerate's
#                      latency run (2-60)
#   LARGE_DURATION (16) seconds per bandwidth run at 1 MiB and more (both tools; 2-120)
#   LAT_ITERS (3000)   ib_write_lat iterations
#   WIDE_WINDOW (128)  linerate's second window; 0 = run linerate at its default window only
#   WIDE_MAX (65536)   largest message size that also runs at -w WIDE_WINDOW
#   NARROW_WINDOW (2)  linerate's second window above WIDE_MAX; 0 = none
#   TESTS              default "send:65536 send:8388608 write:65536 write:8388608 read:65536
#                      read:8388608 lat"
#   MEMORY (2048)      MiB of memory per guest (an 8 MiB send registers 208 MiB on each side)
#   BOOT_TIMEOUT (600) seconds for the lab to boot
#   WAIT_OTHER (1800)  seconds to wait for another lab on this machine to end before starting
#   LAB_LIFE (5400)    the lab is ended after this many seconds whatever happens
#   KEEP_RAW (0)       1: keep every run's output in bench/results/rdma-lab-<timestamp>.raw/
#   CARGO_TARGET_DIR   where the release build goes (default target/)
# Every command is bounded by `timeout` (host) or `--timeout` (guest); the trap ends the lab and
# removes its directory on any exit, Ctrl-C included.
set -uo pipefail

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_DIR=$(cd "$BENCH_DIR/.." && pwd)
ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-8}
LARGE_DURATION=${LARGE_DURATION:-16}
LAT_ITERS=${LAT_ITERS:-3000}
WIDE_WINDOW=${WIDE_WINDOW:-128}
WIDE_MAX=${WIDE_MAX:-65536}
NARROW_WINDOW=${NARROW_WINDOW:-2}
TESTS=${TESTS:-"send:65536 send:8388608 write:65536 write:8388608 read:65536 read:8388608 lat"}
MEMORY=${MEMORY:-2048}
BOOT_TIMEOUT=${BOOT_TIMEOUT:-600}
WAIT_OTHER=${WAIT_OTHER:-1800}
LAB_LIFE=${LAB_LIFE:-5400}
KEEP_RAW=${KEEP_RAW:-0}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$REPO_DIR/target}

SERVER_IP=198.18.0.2
LR_PORT=5301
PT_PORT=18600             # perftest's port (+1 per run: every server has a port of its own)
DEV=rxe0

die() { echo "rdma_lab_compare: $*" >&2; exit 2; }
log() { echo "[$(date +%H:%M:%S)] $*" >&2; }

[[ "$ROUNDS" =~ ^[0-9]+$ ]] && ((ROUNDS >= 1 && ROUNDS <= 20)) || die "ROUNDS must be 1..20"
[[ "$DURATION" =~ ^[0-9]+$ ]] && ((DURATION >= 2 && DURATION <= 60)) || die "DURATION must be 2..60"
[[ "$LARGE_DURATION" =~ ^[0-9]+$ ]] && ((LARGE_DURATION >= 2 && LARGE_DURATION <= 120)) || die "LARGE_DURATION must be 2..120"
[[ "$WIDE_MAX" =~ ^[0-9]+$ ]] || die "WIDE_MAX must be a size in bytes"
[[ "$LAT_ITERS" =~ ^[0-9]+$ ]] && ((LAT_ITERS >= 5 && LAT_ITERS <= 1000000)) || die "LAT_ITERS must be 5..1000000"
[[ "$WIDE_WINDOW" =~ ^[0-9]+$ ]] && ((WIDE_WINDOW <= 4096)) || die "WIDE_WINDOW must be 0..4096"
[[ "$NARROW_WINDOW" =~ ^[0-9]+$ ]] && ((NARROW_WINDOW <= 4096)) || die "NARROW_WINDOW must be 0..4096"
for t in $TESTS; do
    [[ "$t" == lat || "$t" =~ ^(send|write|read):[0-9]+$ ]] || die "TESTS: '$t' is not OP:SIZE or lat"
done
command -v python3 >/dev/null || die "python3 is needed"
for p in ib_send_bw ib_write_bw ib_read_bw ib_write_lat; do
    command -v "$p" >/dev/null || die "$p missing: apt-get install perftest (the guests see this root)"
done

main() {
# --------------------------------------------------------------------------------------------
# One lab at a time on this machine: wait (bounded) for another to end.
# --------------------------------------------------------------------------------------------
other_lab() { pgrep -f "linerate-lab up|linerate-lab agent" >/dev/null; }
if other_lab; then
    log "another lab is running ($(pgrep -f 'linerate-lab up' | tr '\n' ' ')); waiting up to ${WAIT_OTHER}s"
    waited=0
    while other_lab && ((waited < WAIT_OTHER)); do sleep 10; waited=$((waited + 10)); done
    other_lab && die "another lab is still running after ${WAIT_OTHER}s"
    log "the other lab ended after ${waited}s"
fi

log "building linerate and linerate-lab (release)"
(cd "$REPO_DIR" && timeout --foreground 3600 cargo build --release --locked -q -p linerate -p linerate-lab) ||
    die "cargo build --release failed"
LINERATE="$CARGO_TARGET_DIR/release/linerate"
LAB="$CARGO_TARGET_DIR/release/linerate-lab"

# --------------------------------------------------------------------------------------------
# The lab, and the trap that always ends it.
# --------------------------------------------------------------------------------------------
LAB_DIR=$(mktemp -d /tmp/lr-rdma-lab.XXXXXX)
OUT=$(mktemp -d /tmp/lr-rdma-out.XXXXXX)
UP_PID=""
SERVE_ID=""
cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    if [[ -n "$UP_PID" ]]; then
        if [[ -n "$SERVE_ID" ]]; then
            timeout 60 "$LAB" stop "$LAB_DIR" b "$SERVE_ID" >"$OUT/serve.out" 2>"$OUT/serve.err" || true
        fi
        log "ending the lab"
        local i
        if [[ -S "$LAB_DIR/control.sock" ]]; then
            timeout 90 "$LAB" down "$LAB_DIR" >/dev/null 2>&1
            for ((i = 0; i < 60; i++)); do kill -0 "$UP_PID" 2>/dev/null || break; sleep 1; done
        fi
        if kill -0 "$UP_PID" 2>/dev/null; then
            log "the lab is not up or did not end: SIGTERM to pid $UP_PID"
            kill -TERM "$UP_PID" 2>/dev/null
            for ((i = 0; i < 30; i++)); do kill -0 "$UP_PID" 2>/dev/null || break; sleep 1; done
            kill -0 "$UP_PID" 2>/dev/null && kill -KILL "$UP_PID" 2>/dev/null
        fi
        wait "$UP_PID" 2>/dev/null
    fi
    if ((KEEP_RAW)); then
        local keep
        keep="$BENCH_DIR/results/rdma-lab-$(date +%Y%m%dT%H%M%S).raw"
        mkdir -p "$keep" && cp -r "$OUT"/. "$keep"/ && log "raw outputs kept in $keep"
    fi
    rm -rf "$LAB_DIR" "$OUT"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

log "booting the lab in $LAB_DIR (2 guests, ${MEMORY} MiB each, soft-RoCE; bounded to ${LAB_LIFE}s)"
T_BOOT=$SECONDS
timeout "$LAB_LIFE" "$LAB" up --dir "$LAB_DIR" --guests 2 --memory "$MEMORY" >"$OUT/up.out" 2>"$OUT/up.err" &
UP_PID=$!
if ! READY=$(timeout --foreground $((BOOT_TIMEOUT + 30)) "$LAB" ready "$LAB_DIR" --timeout "$BOOT_TIMEOUT" 2>&1); then
    cat "$OUT/up.err" >&2
    die "the lab did not come up: $READY"
fi
WALL_BOOT=$((SECONDS - T_BOOT))
echo "$READY" >"$OUT/ready.txt"
log "lab up (${WALL_BOOT}s from start to ready):"
echo "$READY" | sed 's/^/    /' >&2

# gexec GUEST TIMEOUT CMD... : runs CMD in GUEST, bounded in the guest and on the host.
gexec() {
    local g=$1 t=$2
    shift 2
    timeout --foreground $((t + 60)) "$LAB" exec "$LAB_DIR" "$g" --timeout "$t" -- "$@"
}
# Here and in the guests, `timeout --foreground`: a plain `timeout` moves itself into a process
# group of its own, out of reach of Ctrl-C here (the trap would wait for it) and, in a guest, of
# `linerate-lab stop` (which signals the group the agent started: the command would outlive the
# stop until its own limit).
gbg() { # GUEST CMD... : starts CMD in the background in GUEST, prints its id
    local g=$1
    shift
    timeout --foreground 60 "$LAB" exec "$LAB_DIR" "$g" --bg -- "$@"
}
gwait() { # GUEST ID TIMEOUT
    timeout --foreground $(($3 + 60)) "$LAB" wait "$LAB_DIR" "$1" "$2" --timeout "$3"
}
gstop() { timeout --foreground 120 "$LAB" stop "$LAB_DIR" "$1" "$2"; }

# Facts about the guests (the clock source matters under TCG: see bench/README.md).
{
    echo "kernel: $(gexec a 30 uname -r)"
    echo "clocksource a: $(gexec a 30 cat /sys/devices/system/clocksource/clocksource0/current_clocksource)"
    echo "cpus a: $(gexec a 30 nproc), b: $(gexec b 30 nproc)"
    echo "devices a: $(gexec a 30 sh -c 'ls /sys/class/infiniband | tr "\n" " "'), b: $(gexec b 30 sh -c 'ls /sys/class/infiniband | tr "\n" " "')"
    echo "linerate: $("$LINERATE" --version 2>/dev/null | head -1)"
    echo "perftest: $(dpkg-query -W -f='${Version}' perftest 2>/dev/null)"
    echo "libfabric: $(dpkg-query -W -f='${Version}' libfabric1 2>/dev/null)"
    echo "host: $(nproc) cpus, load average $(cut -d' ' -f1-3 /proc/loadavg) at start"
} >"$OUT/facts.txt" 2>&1
sed 's/^/    /' "$OUT/facts.txt" >&2

# linerate serve in guest b, one for the whole run (its life bounded in the guest too).
SERVE_ID=$(gbg b timeout --foreground "$LAB_LIFE" "$LINERATE" serve -B "$SERVER_IP" -p "$LR_PORT" --max-length 8M) ||
    die "could not start linerate serve in guest b"
for ((i = 0; i < 60; i++)); do
    gexec b 30 sh -c "ss -Hltn 'sport = :$LR_PORT' | grep -q ." >/dev/null 2>&1 && break
    sleep 1
done
((i < 60)) || die "linerate serve did not listen on $SERVER_IP:$LR_PORT in guest b"

# The manifest: one line per run, read by the report at the end.
MANIFEST="$OUT/manifest.tsv"
: >"$MANIFEST"
record() { # test tool round rc file seconds
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$@" >>"$MANIFEST"
}

# The first line of /proc/stat of both guests, into FILE (before and after each client run):
# how busy each guest's one vCPU was while the test ran (under TCG an idle vCPU halts and frees
# its host thread; a polling one keeps it busy).
# With it, ksoftirqd/0's /proc/PID/schedstat (ns on the CPU, ns waiting for it, slices): when
# softirq work (rxe's tasklets) overflows into ksoftirqd, a task polling in user space makes it
# wait for the CPU.
cpu_snap() { # FILE TAG
    local g
    for g in a b; do
        gexec "$g" 20 sh -c 'head -1 /proc/stat; cat /proc/$(pgrep -x ksoftirqd/0)/schedstat' 2>/dev/null |
            sed "s/^/$2 $g /" >>"$1"
    done
}

# lr TEST ROUND TOOL ARGS... : one linerate client run in guest a.
lr() {
    local test=$1 round=$2 tool=$3
    shift 3
    local f="$OUT/$test.$tool.$round" t0=$SECONDS rc
    # A run lasts its time plus the drain of its window (16 x 8 MiB at 3-30 MB/s: 4-40 s) plus
    # start-up.
    cpu_snap "$f.cpu" before
    gexec a $((LARGE_DURATION + 300)) "$LINERATE" bench "$SERVER_IP" -p "$LR_PORT" --rdma --provider verbs "$@" -J \
        >"$f.json" 2>"$f.err"
    rc=$?
    cpu_snap "$f.cpu" after
    record "$test" "$tool" "$round" "$rc" "$f.json" $((SECONDS - t0))
    log "  $test round $round $tool: rc $rc, $(summary "$tool" "$f.json")"
}

# Waits until a perftest server listens on PORT in guest b (its rdma_cm id in state LISTEN).
pt_listening() {
    local port=$1 i
    for ((i = 0; i < 40; i++)); do
        gexec b 30 sh -c "rdma res show cm_id 2>/dev/null | grep LISTEN | grep -q ':$port '" >/dev/null 2>&1 && return 0
        sleep 0.5
    done
    return 1
}

# pt TEST ROUND PROG ARGS... : a perftest server in guest b, its client in guest a.
pt() {
    local test=$1 round=$2 prog=$3
    shift 3
    local f="$OUT/$test.perftest.$round" t0=$SECONDS rc id port
    PT_PORT=$((PT_PORT + 1))
    port=$PT_PORT
    local limit=$((LARGE_DURATION * 2 + 180))
    id=$(gbg b timeout --foreground "$limit" "$prog" -d "$DEV" -R -F -p "$port" "$@") || {
        record "$test" perftest "$round" 98 "$f.txt" 0
        log "  $test round $round perftest: the server did not start"
        return
    }
    if ! pt_listening "$port"; then
        log "  $test round $round perftest: no listener on port $port after 20 s (running the client anyway)"
    fi
    cpu_snap "$f.cpu" before
    gexec a "$limit" "$prog" -d "$DEV" -R -F -p "$port" "$@" "$SERVER_IP" >"$f.txt" 2>"$f.err"
    rc=$?
    cpu_snap "$f.cpu" after
    if ! gwait b "$id" 30 >"$f.server.txt" 2>"$f.server.err"; then
        gstop b "$id" >>"$f.server.txt" 2>>"$f.server.err"
    fi
    record "$test" perftest "$round" "$rc" "$f.txt" $((SECONDS - t0))
    log "  $test round $round perftest: rc $rc, $(summary perftest "$f.txt")"
}

# The one figure of a run, for the log.
summary() {
    python3 "$OUT/report.py" one "$1" "$2" 2>&1
}

cat >"$OUT/report.py" <<'PY'
import json, re, statistics, sys

COUNT = {}  # path -> messages (bandwidth) or samples (latency) the figure rests on
FLAG = {}   # path -> the server-side error of a run whose own figure stands

def lr_figure(path):
    """(value, device, error): Gb/s or one-way p50 µs of a linerate run."""
    try:
        doc = json.load(open(path))
    except (OSError, ValueError) as e:
        return None, None, f"no JSON ({type(e).__name__})"
    tests = doc.get("tests") or []
    if not tests:
        return None, None, (doc.get("error") or "no test in the JSON")
    t = tests[0]
    r = t.get("rdma") or {}
    dev = r.get("device")
    if t.get("error"):
        # Only the server's side failed (its target took the initiator's closing for a failure,
        # after this side had finished): the figure stands, marked.
        if not str(t["error"]).startswith("server:"):
            return None, dev, t["error"]
        FLAG[path] = t["error"]
    sizes = r.get("sizes") or [{}]
    COUNT[path] = sizes[-1].get("messages")
    if str(t.get("kind", "")).endswith("_lat"):
        return r.get("perftest_p50_us", r.get("one_way_p50_us")), dev, None
    # .gbps is rounded to 0.001 Gb/s, which is 3-7 % at TCG's 15-30 Mb/s: the size row is not.
    return sizes[-1].get("gbps", t.get("gbps")), dev, None

def pt_figure(path):
    """(value, None, error): BW average in Gb/s, or t_typical µs, of a perftest client."""
    try:
        lines = open(path, errors="replace").read().splitlines()
    except OSError:
        return None, None, "no output"
    for i, l in enumerate(lines):
        if "BW average[" in l:
            gbits = "Gb/sec" in l
            for row in lines[i + 1:]:
                f = row.split()
                if len(f) >= 4 and f[0].isdigit():
                    v = float(f[3])
                    COUNT[path] = int(f[1])
                    return (v if gbits else v * 1048576 * 8 / 1e9), None, None
        if "t_typical[" in l:
            for row in lines[i + 1:]:
                f = row.split()
                if len(f) >= 5 and f[0].isdigit():
                    COUNT[path] = int(f[1])
                    return float(f[4]), None, None
    err = [l.strip() for l in lines if l.strip() and not l.startswith("-")]
    return None, None, (err[-1] if err else "no result line")

def cpu_busy(path):
    """{guest: (user %, system %, softirq %, idle %, ksoftirqd ms waiting per s)} of the guests'
    vCPUs between the snapshots around a client run."""
    snaps, kq = {}, {}
    try:
        for line in open(path.rsplit(".", 1)[0] + ".cpu"):
            f = line.split()
            if len(f) >= 7 and f[2] == "cpu":
                snaps[(f[0], f[1])] = [int(x) for x in f[3:]]
            elif len(f) == 5 and all(x.isdigit() for x in f[2:]):
                kq[(f[0], f[1])] = [int(x) for x in f[2:]]
    except (OSError, ValueError):
        return {}
    out = {}
    for g in ("a", "b"):
        b, a = snaps.get(("before", g)), snaps.get(("after", g))
        if not a or not b:
            continue
        d = [y - x for x, y in zip(b, a)]
        total = sum(d[:8])  # user nice system idle iowait irq softirq steal (USER_HZ ticks)
        if total <= 0:
            continue
        pct = lambda v: 100.0 * v / total
        wait = None
        kb, ka = kq.get(("before", g)), kq.get(("after", g))
        if kb and ka:
            wait = (ka[1] - kb[1]) / 1e6 / (total / 100.0)  # ms per second (USER_HZ = 100)
        out[g] = (pct(d[0] + d[1]), pct(d[2] + d[5]), pct(d[6]), pct(d[3] + d[4]), wait)
    return out

def figure(tool, path):
    return pt_figure(path) if tool == "perftest" else lr_figure(path)

def errtext(path, fallback):
    try:
        t = open(path.rsplit(".", 1)[0] + ".err", errors="replace").read().strip().splitlines()
    except OSError:
        t = []
    t = [l for l in t if l.strip()]
    return (t[-1] if t else fallback)[:110]

if sys.argv[1] == "one":
    tool, path = sys.argv[2], sys.argv[3]
    v, dev, e = figure(tool, path)
    unit = "µs" if "lat" in path.rsplit("/", 1)[-1] else "Gb/s"
    print(f"{v:.4g} {unit}" + (f" ({dev})" if dev else "") if v is not None else f"failed: {errtext(path, e or '?')}")
    sys.exit(0)

# report MANIFEST FACTS READY ROUNDS WIDE
manifest, facts, ready, rounds, wide = sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]), int(sys.argv[6])
runs = {}
order = []
for line in open(manifest):
    test, tool, rnd, rc, path, secs = line.rstrip("\n").split("\t")
    v, dev, e = figure(tool, path)
    if v is None:
        e = errtext(path, e or f"exit status {rc}")
    runs.setdefault(test, {}).setdefault(tool, {})[int(rnd)] = (v, dev, e, int(rc), int(secs), COUNT.get(path), cpu_busy(path), FLAG.get(path))
    if test not in order:
        order.append(test)

def med(tool_runs):
    v = [x[0] for x in tool_runs.values() if x[0] is not None]
    return statistics.median(v) if v else None

fmt = lambda v, d=3: "-" if v is None else f"{v:.{d}g}" if abs(v) < 1000 else f"{v:.0f}"
boot = re.search(r"lab up in ([0-9.]+) s", open(ready).read())
print()
print("## linerate bench --rdma --provider verbs against perftest, lab guests a -> b over rxe0 (TCG)")
print()
for l in open(facts):
    print("    " + l.rstrip())
print(f"    lab boot: {boot.group(1) if boot else '?'} s (linerate-lab ready: \"lab up in N s\")")
print()
summary = []
for test in order:
    t = runs[test]
    lat = test.startswith("lat")
    unit = "one-way p50 µs (perftest: t_typical)" if lat else "Gb/s (10^9 bit/s)"
    others = sorted((k for k in t if k.startswith("lr_w") and k != "lr_w16"), key=lambda k: int(k[4:]))
    tools = ["lr_w16"] + others + ["perftest"]
    if lat:
        tools = ["lr", "perftest"]
    print(f"### {test}: {unit}")
    print()
    if not lat:
        print("(in brackets: the messages each figure counts)")
        print()
    print("| round | " + " | ".join(tools) + " | " + " | ".join(f"{x}/perftest" for x in tools[:-1]) + " |")
    print("|---" * (2 * len(tools)) + "|")
    for r in range(1, rounds + 1):
        cells, vals = [], []
        for tool in tools:
            x = t.get(tool, {}).get(r)
            if x is None:
                cells.append("not run"); vals.append(None)
            elif x[0] is None:
                cells.append(f"failed: {x[2]}"); vals.append(None)
            else:
                n = f" ({x[5]})" if x[5] is not None and not lat else ""
                n += " *" if x[7] else ""
                cells.append(fmt(x[0], 4) + n); vals.append(x[0])
        ratios = [fmt(v / vals[-1]) if v is not None and vals[-1] else "-" for v in vals[:-1]]
        print(f"| {r} | " + " | ".join(cells) + " | " + " | ".join(ratios) + " |")
    meds = [med(t.get(tool, {})) for tool in tools]
    ratios = [(m / meds[-1] if m is not None and meds[-1] else None) for m in meds[:-1]]
    print("| median | " + " | ".join(fmt(m, 4) for m in meds) + " | " + " | ".join(f"**{fmt(x)}**" for x in ratios) + " |")
    flags = [f"{tool} round {r}: {x[7][:160]}" for tool in tools for r, x in sorted(t.get(tool, {}).items()) if x[7]]
    if flags:
        print("\n\\* linerate exited 2: its server reported " + "; ".join(flags))
    devs = sorted({x[1] for tool in tools for x in t.get(tool, {}).values() if x[1]})
    if devs:
        print(f"\n(linerate's device: {', '.join(devs)})")
    busy = []
    for tool in tools:
        cells = []
        for g in ("a", "b"):
            rows = [x[6][g] for x in t.get(tool, {}).values() if g in x[6]]
            if not rows:
                cells.append("-")
                continue
            m = [statistics.median([r[i] for r in rows]) for i in range(4)]
            w = [r[4] for r in rows if r[4] is not None]
            cells.append("/".join(f"{v:.0f}" for v in m) + (f" kq {statistics.median(w):.0f}" if w else ""))
        if cells != ["-", "-"]:
            busy.append(f"| {tool} | {cells[0]} | {cells[1]} |")
    if busy:
        print("\nguests' vCPU during the client runs, medians: user/system/softirq/idle %, and kq = ms per")
        print("second ksoftirqd/0 waited for the CPU (a task polling in user space holds it off)\n")
        print("| tool | guest a (clients) | guest b (servers) |\n|---|---|---|")
        print("\n".join(busy))
    print()
    ratio = ratios[0]
    why = ("no linerate figure (its runs failed)" if meds[0] is None else
           "no perftest figure (no completion in its sample window)" if not meds[-1] else "")
    if lat:
        ok = ratio is not None and ratio <= 1.05
        goal = "<= 1.05"
    else:
        ok = ratio is not None and ratio >= 0.95
        goal = ">= 0.95"
    other = ", ".join(f"-w {tool[4:]}: {fmt(x)}" for tool, x in zip(tools[1:-1], ratios[1:]))
    summary.append((test, ratio, other or "-", goal, ok, why))

print("### ratios of medians (linerate / perftest)")
print()
print("| test | linerate at its defaults | linerate at other windows | goal (defaults) | verdict |")
print("|---|---|---|---|---|")
for test, r, other, goal, ok, why in summary:
    print(f"| {test} | {fmt(r)} | {other} | {goal} | {'meets' if ok else 'BELOW' if r is not None else why} |")
print()
PY

# --------------------------------------------------------------------------------------------
# The runs: for each test, ROUNDS rounds; linerate first in odd rounds, perftest in even ones.
# --------------------------------------------------------------------------------------------
n_bw=0
for t in $TESTS; do [[ "$t" == lat ]] || n_bw=$((n_bw + 1)); done
log "tests: $TESTS; $ROUNDS rounds; about $(( (n_bw * 3 * (LARGE_DURATION + 15) + 2 * (DURATION + 15)) * ROUNDS / 60 + 1 )) min"

secs_for() { if (($1 >= 1048576)); then echo "$LARGE_DURATION"; else echo "$DURATION"; fi; }
lr_runs() { # test op size round
    local test=$1 op=$2 size=$3 r=$4 secs
    secs=$(secs_for "$size")
    lr "$test" "$r" lr_w16 --op "$op" -l "$size" -t "$secs"
    if ((WIDE_WINDOW > 0 && size <= WIDE_MAX)); then
        lr "$test" "$r" "lr_w$WIDE_WINDOW" --op "$op" -l "$size" -t "$secs" -w "$WIDE_WINDOW"
    fi
    if ((NARROW_WINDOW > 0 && size > WIDE_MAX)); then
        lr "$test" "$r" "lr_w$NARROW_WINDOW" --op "$op" -l "$size" -t "$secs" -w "$NARROW_WINDOW"
    fi
}

for t in $TESTS; do
    if [[ "$t" == lat ]]; then
        test=lat_write_2
        log "$test: linerate --latency --op write -l 2 -t $DURATION against ib_write_lat -s 2 -n $LAT_ITERS"
        for ((r = 1; r <= ROUNDS; r++)); do
            if ((r % 2)); then
                lr "$test" "$r" lr --op write --latency -l 2 -t "$DURATION"
                pt "$test" "$r" ib_write_lat -s 2 -n "$LAT_ITERS"
            else
                pt "$test" "$r" ib_write_lat -s 2 -n "$LAT_ITERS"
                lr "$test" "$r" lr --op write --latency -l 2 -t "$DURATION"
            fi
        done
        continue
    fi
    op=${t%%:*}
    size=${t##*:}
    test="${op}_bw_$size"
    secs=$(secs_for "$size")
    log "$test: linerate -w 16$( ((WIDE_WINDOW > 0 && size <= WIDE_MAX)) && echo " and -w $WIDE_WINDOW")$( ((NARROW_WINDOW > 0 && size > WIDE_MAX)) && echo " and -w $NARROW_WINDOW") against ib_${op}_bw (tx depth 128), ${secs}s each"
    for ((r = 1; r <= ROUNDS; r++)); do
        if ((r % 2)); then
            lr_runs "$test" "$op" "$size" "$r"
            pt "$test" "$r" "ib_${op}_bw" -D "$secs" -s "$size" --report_gbits
        else
            pt "$test" "$r" "ib_${op}_bw" -D "$secs" -s "$size" --report_gbits
            lr_runs "$test" "$op" "$size" "$r"
        fi
    done
done

echo "host load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$OUT/facts.txt"
python3 "$OUT/report.py" report "$MANIFEST" "$OUT/facts.txt" "$OUT/ready.txt" "$ROUNDS" "$WIDE_WINDOW"
}

main "$@"; exit $?   # one line: bash stops reading here even if the file is edited mid-run
