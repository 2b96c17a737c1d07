#!/usr/bin/env bash
# NFS over RDMA against NFS over TCP on the same two lab guests and the same link (soft-RoCE
# rxe0 on a virtio NIC, docs/lab.md), with the local disks of both guests beside them: the
# storage pyramid on a real kernel's NFS. Each figure is `linerate disk` and fio on the same
# directory, same file size, block, queue depth, O_DIRECT (where the file system takes it) and
# io_uring, alternating (linerate first in odd rounds, fio in even ones); the ratio of medians is
# printed.
#
#   bench/nfs_rdma_fio.sh                    # 3 rounds, 16 MiB files, 5 s per run (about 15 min)
#   ROUNDS=5 SIZE=32M TIME=5 QD=8 bench/nfs_rdma_fio.sh
#
# Guest b runs the kernel's nfsd (configured by `linerate setup nfs-rdma --apply`, started as
# nfs-server.service does: the guests have no systemd) and exports a tmpfs; guest a mounts it
# twice, both NFSv3 so that only the transport differs: proto=rdma,port=20049 on /mnt/nfs-rdma
# and proto=tcp on /mnt/nfs-tcp (an NFSv4.1 mount of the same server would share the first
# mount's session and its transport). The local disks: a's /tmp (the guest's writable overlay,
# in its memory) and b's /srv/nfs (the tmpfs behind the export).
#
# Tests: seq_read and seq_write (1 MiB blocks, GB/s = 10^9 byte/s) and rand_read (4 KiB, IOPS),
# at QD. Under TCG (this project's machines) the guests are emulated: the figures are an
# emulator's, tens of MB/s at best; compare the ratios, not the absolute values.
# Needs: the lab (scripts/setup-tests.sh), nfs-kernel-server and fio on this machine (the guests
# run this machine's root read-only). Every command in a guest has a deadline, the loop is
# bounded by ROUNDS, and the lab is brought down on exit.
set -uo pipefail

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_DIR=$(cd "$BENCH_DIR/.." && pwd)
ROUNDS=${ROUNDS:-3}
SIZE=${SIZE:-16M}
TIME=${TIME:-5}
QD=${QD:-8}
TESTS=${TESTS:-seq_read seq_write rand_read}
LIMIT=${LIMIT:-240}      # seconds any one run may take
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$REPO_DIR/target}

for t in fio exportfs rpc.nfsd; do
    command -v "$t" >/dev/null || PATH=$PATH:/usr/sbin
    command -v "$t" >/dev/null || { echo "nfs_rdma_fio: $t missing: scripts/setup-tests.sh installs fio and nfs-kernel-server" >&2; exit 2; }
done

echo "nfs_rdma_fio: building linerate (release) and linerate-lab" >&2
(cd "$REPO_DIR" && cargo build --release --locked -q -p linerate && cargo build --locked -q -p linerate-lab) || exit 2
LINERATE="$CARGO_TARGET_DIR/release/linerate"
LAB_BIN="$CARGO_TARGET_DIR/debug/linerate-lab"

LAB=$(mktemp -d /tmp/linerate-nfs-bench.XXXXXX)
OUT="$LAB/out"
mkdir -p "$OUT"
UP=""
cleanup() {
    [ -n "$UP" ] && { timeout 60 "$LAB_BIN" down "$LAB/lab" >/dev/null 2>&1; kill "$UP" 2>/dev/null; wait "$UP" 2>/dev/null; }
    rm -rf "$LAB"
}
trap cleanup EXIT

"$LAB_BIN" up --dir "$LAB/lab" >"$LAB/up.log" 2>&1 &
UP=$!
timeout 400 "$LAB_BIN" ready "$LAB/lab" >&2 || { echo "nfs_rdma_fio: the lab did not come up: $(cat "$LAB/up.log")" >&2; exit 2; }

ex() { # guest seconds command: runs it in the guest, its stdout on ours
    local g=$1 secs=$2
    shift 2
    "$LAB_BIN" exec "$LAB/lab" "$g" --timeout "$secs" -- "$*"
}

echo "nfs_rdma_fio: nfsd on b, over RDMA and TCP" >&2
ex b 120 "mkdir -p /srv/nfs && mount -t tmpfs -o size=1g tmpfs /srv/nfs \
  && echo '/srv/nfs *(rw,no_root_squash,insecure,no_subtree_check,fsid=0)' > /etc/exports \
  && $LINERATE setup nfs-rdma --apply >/dev/null \
  && mount -t nfsd nfsd /proc/fs/nfsd && rpcbind && rpc.mountd && exportfs -ra && modprobe svcrdma && rpc.nfsd \
  && grep -q 'rdma 20049' /proc/fs/nfsd/portlist" >&2 || { echo "nfs_rdma_fio: nfsd did not start with its RDMA listener" >&2; exit 2; }
ex a 120 "mount -t tmpfs tmpfs /mnt && mkdir -p /mnt/nfs-rdma /mnt/nfs-tcp && modprobe xprtrdma \
  && mount -t nfs -o vers=3,nolock,proto=rdma,port=20049 198.18.0.2:/srv/nfs /mnt/nfs-rdma \
  && mount -t nfs -o vers=3,nolock,proto=tcp 198.18.0.2:/srv/nfs /mnt/nfs-tcp \
  && mkdir -p /mnt/nfs-rdma/rdma /mnt/nfs-tcp/tcp /tmp/local-a && grep nfs /proc/self/mountinfo" >&2 \
  || { echo "nfs_rdma_fio: the mounts failed" >&2; exit 2; }
ex b 30 "mkdir -p /srv/nfs/local-b" >&2

# Where each figure is measured: label guest directory. The two NFS mounts write in separate
# directories of the same export.
PLACES="nfs-rdma:a:/mnt/nfs-rdma/rdma nfs-tcp:a:/mnt/nfs-tcp/tcp local-a:a:/tmp/local-a local-b:b:/srv/nfs/local-b"

# linerate decides O_DIRECT (tmpfs before Linux 6.6 and the guest's overlay refuse it); fio gets
# the same: DIRECT is what linerate's last run in that directory used.
DIRECT=1
run_linerate() { # label guest dir test round
    local label=$1 g=$2 dir=$3 test=$4 round=$5 out
    out="$OUT/$label-$test-linerate-$round.json"
    if ex "$g" "$LIMIT" "$LINERATE disk $dir --size $SIZE --time $TIME --block 1M --qd $QD --tests $test --engine io_uring --json" \
        >"$out" 2>"$out.err"; then
        DIRECT=$(python3 -c 'import json,sys; print(1 if json.load(open(sys.argv[1]))["direct"] else 0)' "$out")
    else
        echo "nfs_rdma_fio: $label $test round $round: linerate failed: $(tail -n 3 "$out.err")" >&2
    fi
}
run_fio() { # label guest dir test round
    local label=$1 g=$2 dir=$3 test=$4 round=$5 bs rw
    case "$test" in
        seq_read) bs=1M; rw=read ;;
        seq_write) bs=1M; rw=write ;;
        rand_read) bs=4k; rw=randread ;;
    esac
    ex "$g" "$LIMIT" "rm -f $dir/fio.dat; fio --name=nfsbench --filename=$dir/fio.dat --size=$SIZE --bs=$bs --rw=$rw \
        --iodepth=$QD --ioengine=io_uring --direct=$DIRECT --time_based --runtime=$TIME --norandommap --randrepeat=0 \
        --invalidate=1 --output-format=json; rm -f $dir/fio.dat" \
        >"$OUT/$label-$test-fio-$round.json" 2>"$OUT/$label-$test-fio-$round.err" \
        || echo "nfs_rdma_fio: $label $test round $round: fio failed: $(tail -n 3 "$OUT/$label-$test-fio-$round.err")" >&2
    grep -q '"error" : [1-9]' "$OUT/$label-$test-fio-$round.json" 2>/dev/null \
        && echo "nfs_rdma_fio: $label $test round $round: fio failed: $(head -n 2 "$OUT/$label-$test-fio-$round.err")" >&2
    return 0
}

for place in $PLACES; do
    IFS=: read -r label g dir <<<"$place"
    for test in $TESTS; do
        for round in $(seq 1 "$ROUNDS"); do
            echo "nfs_rdma_fio: $label $test round $round/$ROUNDS" >&2
            if [ $((round % 2)) -eq 1 ]; then
                run_linerate "$label" "$g" "$dir" "$test" "$round"; run_fio "$label" "$g" "$dir" "$test" "$round"
            else
                run_fio "$label" "$g" "$dir" "$test" "$round"; run_linerate "$label" "$g" "$dir" "$test" "$round"
            fi
        done
    done
done

python3 - "$OUT" "$ROUNDS" "$SIZE" "$TIME" "$QD" "$TESTS" <<'PY'
import json, pathlib, statistics, sys
out, rounds, size, secs, qd, tests = pathlib.Path(sys.argv[1]), int(sys.argv[2]), *sys.argv[3:6], sys.argv[6].split()
places = ["nfs-rdma", "nfs-tcp", "local-a", "local-b"]

def lr(p, test):
    try:
        doc = json.loads(p.read_text())
        t = doc["tests"][0]
        # The document's GB/s is rounded to 3 decimals: too coarse for an emulator's MB/s.
        return (t["iops"] if test == "rand_read" else t["bytes"] / t["seconds"] / 1e9), doc["filesystem"]
    except (FileNotFoundError, ValueError, KeyError, IndexError):
        return None, None

def fio(p, test):
    try:
        txt = p.read_text()
        job = json.loads(txt[txt.index("{"):])["jobs"][0]
        if job.get("error"):
            return None
        j = job["write" if test == "seq_write" else "read"]
        return j["iops"] if test == "rand_read" else j["bw_bytes"] / 1e9
    except (FileNotFoundError, ValueError, KeyError, IndexError):
        return None

def med(v):
    v = [x for x in v if x]
    return statistics.median(v) if v else None

unit = lambda t: "IOPS" if t == "rand_read" else "GB/s"
fmt = lambda v, t: "-" if v is None else (f"{v:.0f}" if t == "rand_read" else f"{v:.4f}")
print(f"\nlinerate disk vs fio on the lab's guests (TCG), {rounds} alternating rounds x {secs} s, file {size}, QD {qd}, io_uring, O_DIRECT where the file system takes it\n")
print("| where | file system | test | linerate median | fio median | linerate/fio | each round (linerate/fio) |")
print("|---|---|---|---|---|---|---|")
meds = {}
for p in places:
    for t in tests:
        l = [lr(out / f"{p}-{t}-linerate-{r}.json", t) for r in range(1, rounds + 1)]
        f = [fio(out / f"{p}-{t}-fio-{r}.json", t) for r in range(1, rounds + 1)]
        fs = next((x[1] for x in l if x[1]), "?")
        lm, fm = med([x[0] for x in l]), med(f)
        meds[(p, t)] = (lm, fm)
        each = " ".join("-" if not (a[0] and b) else f"{a[0] / b:.2f}" for a, b in zip(l, f))
        ratio = f"{lm / fm:.2f}" if lm and fm else "-"
        print(f"| {p} | {fs} | {t} ({unit(t)}) | {fmt(lm, t)} | {fmt(fm, t)} | {ratio} | {each} |")
print("\nNFS over RDMA / NFS over TCP, same guests, same link:")
for t in tests:
    (lr_r, f_r), (lr_t, f_t) = meds[("nfs-rdma", t)], meds[("nfs-tcp", t)]
    a = f"{lr_r / lr_t:.2f}" if lr_r and lr_t else "-"
    b = f"{f_r / f_t:.2f}" if f_r and f_t else "-"
    print(f"  {t:<10} linerate {a}   fio {b}")
PY
