#!/usr/bin/env bash
# Side-by-side benchmark of a disk-to-disk file copy over loopback: `linerate bench --file`
# against `dd | nc` and `scp`, the same source file, the same destination directory.
#
#   bench/file_compare.sh                          # 3 rounds, 1 GiB file, /var/tmp and /dev/shm
#   bench/file_compare.sh --rounds 5 --size 2G --dirs "/mnt/nvme"
#
# Every copy is timed by the same wall clock, from start until the data is durable on the
# destination: linerate fsyncs (its default), dd gets conv=fsync, scp is followed by sync(1) of the
# destination file system. Before each copy the source file is dropped from the page cache (as root)
# so every tool reads it from disk. Runs alternate linerate, dd|nc, scp, linerate, ... because these
# machines are shared and noisy: quote the ratio of medians (targets: linerate >= 1.0 x dd|nc and
# > scp), not absolute figures. Rates are GB/s = 10^9 byte/s. Installs netcat-openbsd and
# openssh-server/-client from Debian when missing (needs root) and runs a private sshd on
# 127.0.0.1 with a throw-away key; the system's ssh configuration is not touched.
set -uo pipefail

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_DIR=$(cd "$BENCH_DIR/.." && pwd)

ROUNDS=3
SIZE=1G
LINERATE="$REPO_DIR/target/release/linerate"
DIRS=""
PORT=5311
NC_PORT=5312
SSH_PORT=5313

usage() {
    sed -n '2,15p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
    cat <<'EOF'
Options:
  --rounds N        alternating rounds (default 3, 1-20)
  --size BYTES      source file size (default 1G; K/M/G suffixes)
  --dirs "D1 D2"    directories holding source and destination (default: a new directory
                    under /var/tmp, the root file system, and /dev/shm, a RAM disk)
  --linerate PATH   linerate binary (default target/release/linerate; built if missing)
  -h, --help        this text
EOF
}

while [ $# -gt 0 ]; do
    case "$1" in
        --rounds) ROUNDS="$2"; shift 2 ;;
        --size) SIZE="$2"; shift 2 ;;
        --dirs) DIRS="$2"; shift 2 ;;
        --linerate) LINERATE="$2"; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        *) echo "file_compare.sh: unknown option $1" >&2; usage >&2; exit 2 ;;
    esac
done
case "$ROUNDS" in ''|*[!0-9]*) echo "--rounds: a number" >&2; exit 2 ;; esac
[ "$ROUNDS" -ge 1 ] && [ "$ROUNDS" -le 20 ] || { echo "--rounds: 1-20" >&2; exit 2; }

need=()
command -v nc >/dev/null 2>&1 || need+=(netcat-openbsd)
[ -x /usr/sbin/sshd ] || need+=(openssh-server)
command -v scp >/dev/null 2>&1 || need+=(openssh-client)
if ((${#need[@]})); then
    if [ "$(id -u)" -ne 0 ]; then
        echo "missing ${need[*]}; installing needs root" >&2
        exit 2
    fi
    echo "installing ${need[*]} from Debian ..." >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y "${need[@]}" >/dev/null 2>&1 \
        || { apt-get update >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y "${need[@]}" >/dev/null; } \
        || { echo "could not install ${need[*]}" >&2; exit 2; }
fi
if [ ! -x "$LINERATE" ]; then
    echo "building linerate (release) ..." >&2
    (cd "$REPO_DIR" && cargo build --release --locked -p linerate >&2) || exit 2
fi

WORK=$(mktemp -d)
MADE_DIR=""
SERVER_PID=""
SSHD_PID=""
cleanup() {
    [ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null
    [ -n "$SSHD_PID" ] && kill "$SSHD_PID" 2>/dev/null
    for d in $DIRS; do rm -rf "$d/linerate-fc"; done
    [ -n "$MADE_DIR" ] && rm -rf "$MADE_DIR"
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if [ -z "$DIRS" ]; then
    MADE_DIR=$(mktemp -d /var/tmp/linerate-file-bench.XXXXXX)
    DIRS="$MADE_DIR /dev/shm"
fi
to_bytes() {
    python3 -c 'import sys
s = sys.argv[1].strip(); m = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
print(int(float(s[:-1]) * m[s[-1].upper()]) if s[-1].upper() in m else int(s))' "$1"
}
SIZE_BYTES=$(to_bytes "$SIZE") || { echo "--size: e.g. 1G" >&2; exit 2; }
LIMIT=600 # seconds; a copy that takes longer is killed

# A private sshd on 127.0.0.1 with throw-away keys.
mkdir -p /run/sshd "$WORK/ssh"
ssh-keygen -q -t ed25519 -N '' -f "$WORK/ssh/host" >/dev/null
ssh-keygen -q -t ed25519 -N '' -f "$WORK/ssh/user" >/dev/null
cp "$WORK/ssh/user.pub" "$WORK/ssh/authorized_keys"
chmod 600 "$WORK/ssh/authorized_keys"
cat >"$WORK/ssh/sshd_config" <<EOF
ListenAddress 127.0.0.1
Port $SSH_PORT
HostKey $WORK/ssh/host
AuthorizedKeysFile $WORK/ssh/authorized_keys
PermitRootLogin prohibit-password
PasswordAuthentication no
StrictModes no
UsePAM no
PidFile $WORK/ssh/sshd.pid
Subsystem sftp /usr/lib/openssh/sftp-server
EOF
/usr/sbin/sshd -D -f "$WORK/ssh/sshd_config" 2>"$WORK/ssh/log" &
SSHD_PID=$!
SSH_OPTS=(-i "$WORK/ssh/user" -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR -P "$SSH_PORT")
for _ in $(seq 1 50); do
    ssh "${SSH_OPTS[@]/-P/-p}" root@127.0.0.1 true 2>/dev/null && break
    sleep 0.1
done

drop_cache() {
    # Drop the source from the page cache so every tool reads it from disk (root only).
    sync
    [ -w /proc/sys/vm/drop_caches ] && echo 1 >/proc/sys/vm/drop_caches 2>/dev/null
    true
}

now() { date +%s.%N; }

echo "uptime: $(uptime)" >&2
RESULTS="$WORK/results.tsv" # dir, tool, round, GB/s
: >"$RESULTS"

for dir in $DIRS; do
    [ -d "$dir" ] || { echo "skipping $dir: not a directory" >&2; continue; }
    base="$dir/linerate-fc"
    rm -rf "$base" && mkdir -p "$base/src" "$base/dst"
    echo "$dir: writing a $SIZE source file ..." >&2
    head -c "$SIZE_BYTES" /dev/urandom >"$base/src/source.bin" || { echo "cannot write $base" >&2; continue; }
    "$LINERATE" serve -B 127.0.0.1 -p "$PORT" --write-dir "$base/dst" >"$WORK/serve.log" 2>&1 &
    SERVER_PID=$!
    sleep 0.5
    for round in $(seq 1 "$ROUNDS"); do
        # A: linerate (fsync on the server is its default and is timed)
        rm -f "$base/dst/"*; drop_cache
        t0=$(now)
        if timeout "$LIMIT" "$LINERATE" bench 127.0.0.1 -p "$PORT" --file "$base/src/source.bin" \
            --file-name "copy-$round" --json >"$WORK/lr-$round.json" 2>"$WORK/lr.err"; then
            t1=$(now)
            v=$(python3 -c "print(round($SIZE_BYTES / ($t1 - $t0) / 1e9, 3))")
            self=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["tests"][0]["file"]["bottleneck"])' "$WORK/lr-$round.json")
            printf '%s\tlinerate\t%s\t%s\n' "$dir" "$round" "$v" >>"$RESULTS"
            echo "$dir round $round: linerate $v GB/s (its own verdict: $self)" >&2
        else
            echo "$dir round $round: linerate failed: $(cat "$WORK/lr.err")" >&2
        fi
        # B: dd | nc, with the receiving dd making the file durable
        rm -f "$base/dst/"*; drop_cache
        (nc -l 127.0.0.1 "$NC_PORT" | dd of="$base/dst/nc-$round" bs=1M conv=fsync status=none) &
        rx=$!
        sleep 0.2
        t0=$(now)
        timeout "$LIMIT" dd if="$base/src/source.bin" bs=1M status=none | timeout "$LIMIT" nc -N 127.0.0.1 "$NC_PORT"
        wait "$rx"
        t1=$(now)
        got=$(stat -c %s "$base/dst/nc-$round" 2>/dev/null || echo 0)
        if [ "$got" = "$SIZE_BYTES" ]; then
            v=$(python3 -c "print(round($SIZE_BYTES / ($t1 - $t0) / 1e9, 3))")
            printf '%s\tdd|nc\t%s\t%s\n' "$dir" "$round" "$v" >>"$RESULTS"
            echo "$dir round $round: dd|nc $v GB/s" >&2
        else
            echo "$dir round $round: dd|nc copied $got of $SIZE_BYTES bytes" >&2
        fi
        # C: scp, then sync of the destination file system
        rm -f "$base/dst/"*; drop_cache
        t0=$(now)
        if timeout "$LIMIT" scp -q "${SSH_OPTS[@]}" "$base/src/source.bin" "root@127.0.0.1:$base/dst/scp-$round" \
            && sync -f "$base/dst/scp-$round"; then
            t1=$(now)
            v=$(python3 -c "print(round($SIZE_BYTES / ($t1 - $t0) / 1e9, 3))")
            printf '%s\tscp\t%s\t%s\n' "$dir" "$round" "$v" >>"$RESULTS"
            echo "$dir round $round: scp $v GB/s" >&2
        else
            echo "$dir round $round: scp failed; sshd said: $(tail -3 "$WORK/ssh/log")" >&2
        fi
    done
    kill "$SERVER_PID" 2>/dev/null; wait "$SERVER_PID" 2>/dev/null; SERVER_PID=""
    rm -rf "$base"
done

python3 - "$RESULTS" "$ROUNDS" "$SIZE" <<'EOF'
import collections, statistics, subprocess, sys

path, rounds, size = sys.argv[1:4]
runs = collections.defaultdict(list)
for line in open(path):
    d, tool, _round, value = line.rstrip("\n").split("\t")
    runs[(d, tool)].append(float(value))

def fs(d):
    out = subprocess.run(["findmnt", "-n", "-o", "FSTYPE", "-T", d], capture_output=True, text=True)
    return (out.stdout.split() or ["?"])[-1]

print(f"\nfile copy over loopback, disk to disk, {rounds} alternating rounds, {size} file, durable at the end\n")
print("| directory | linerate GB/s median (runs) | dd\\|nc median (runs) | scp median (runs) | linerate/dd\\|nc | linerate/scp |")
print("|---|---|---|---|---|---|")
for d in dict.fromkeys(d for d, _ in runs):
    a, b, c = (runs.get((d, t), []) for t in ("linerate", "dd|nc", "scp"))
    med = lambda v: statistics.median(v) if v else float("nan")
    show = lambda v: f"{med(v):.3f} ({', '.join(f'{x:.3f}' for x in v)})" if v else "-"
    ratio = lambda x, y: f"{med(x) / med(y):.2f}" if x and y else "-"
    print(f"| {d} ({fs(d)}) | {show(a)} | {show(b)} | {show(c)} | {ratio(a, b)} | {ratio(a, c)} |")
EOF
