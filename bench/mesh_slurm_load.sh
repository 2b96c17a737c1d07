#!/usr/bin/env bash
# `linerate mesh` under a real Slurm on a loaded machine (issue #25's "Done when"): a single-node
# cluster in a temporary directory (munged with its own key and socket, slurmctld and slurmd in
# the foreground with a generated slurm.conf, an oversubscribed partition, proctrack/linuxproc, no
# cgroups: the setup of crates/linerate-cli/tests/slurm.rs), every core kept busy by stress-ng (or
# by shell busy loops where stress-ng is missing), then:
#   RUNS   runs of `srun -n4 --overcommit linerate mesh --json` under the default MPI plugin
#          (pairwise on 4 ranks: two flows at once): on loopback no link may be slow or lossy, no
#          node degraded, no cable suspected;
#   KILLS  runs with rank 2 killed (SIGKILL) mid-run, and PAUSES runs with rank 3 stopped
#          (SIGSTOP): their links must be unreachable or cut short (or fine before, or
#          unconfirmed because the rank was lost), never slow, never a cable, and no other node
#          degraded.
# Prints one line per run and the counts of every link and node verdict; exit status 0 when no
# run blamed hardware. The documents are kept in the output directory it names.
#
# Needs root (the daemons and tasks run as root), slurm-wlm, munge and python3 (stress-ng
# optional). Every daemon, the load and every run are stopped by PID on exit (also on failure
# or Ctrl-C); every srun is bounded by timeout(1).
#
#   bench/mesh_slurm_load.sh [--bin path/to/linerate] [--runs 20] [--kills 3] [--pauses 3]
#                            [--time SECS] [--no-load] [--out DIR]
set -euo pipefail

BIN=target/release/linerate
RUNS=20
KILLS=3
PAUSES=3
TIME=1
LOAD=1
OUT=""
while [ $# -gt 0 ]; do
  case "$1" in
    --bin) BIN=$2; shift 2 ;;
    --runs) RUNS=$2; shift 2 ;;
    --kills) KILLS=$2; shift 2 ;;
    --pauses) PAUSES=$2; shift 2 ;;
    --time) TIME=$2; shift 2 ;;
    --no-load) LOAD=0; shift ;;
    --out) OUT=$2; shift 2 ;;
    *) echo "mesh_slurm_load: unknown option $1 (see the header of $0)" >&2; exit 2 ;;
  esac
done
for n in "$RUNS" "$KILLS" "$PAUSES"; do
  [[ "$n" =~ ^[0-9]+$ ]] && [ "$n" -le 1000 ] || { echo "mesh_slurm_load: run counts are whole numbers up to 1000" >&2; exit 2; }
done
[[ "$TIME" =~ ^[0-9]+(\.[0-9]+)?$ ]] || { echo "mesh_slurm_load: --time takes seconds" >&2; exit 2; }
[ -x "$BIN" ] || { echo "mesh_slurm_load: $BIN is not an executable (build with: cargo build --release -p linerate)" >&2; exit 2; }
BIN=$(realpath "$BIN")
[ "$(id -u)" = 0 ] || { echo "mesh_slurm_load: needs root (slurmd and munged run as root)" >&2; exit 2; }
for t in munged slurmctld slurmd srun sinfo python3; do
  command -v "$t" >/dev/null || [ -x "/usr/sbin/$t" ] || { echo "mesh_slurm_load: $t not installed (slurm-wlm, munge, python3)" >&2; exit 2; }
done
PATH=$PATH:/usr/sbin

WORK=$(mktemp -d)
chmod 755 "$WORK"
[ -n "$OUT" ] || OUT=$(mktemp -d /tmp/mesh-slurm-load.XXXXXX)
mkdir -p "$OUT"
DAEMONS=()   # PIDs, stopped last to first
LOADPIDS=()
RUNPID=""

cleanup() {
  # timeout(1) passes SIGTERM on to srun, which ends the step.
  [ -n "$RUNPID" ] && kill -TERM "$RUNPID" 2>/dev/null || true
  # stress-ng ends its workers on SIGTERM; the busy loops have none.
  for pid in "${LOADPIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  sleep 1
  for pid in "${LOADPIDS[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
  for ((i = ${#DAEMONS[@]} - 1; i >= 0; i--)); do
    pid=${DAEMONS[$i]}
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
    kill -KILL "$pid" 2>/dev/null || true
  done
  wait 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# --- the cluster
mkdir -p "$WORK"/{munge,key,state,spool,log}
chmod 755 "$WORK/munge"; chmod 700 "$WORK/key"
head -c 1024 /dev/urandom > "$WORK/key/munge.key"; chmod 400 "$WORK/key/munge.key"
HOST=$(cut -d. -f1 /proc/sys/kernel/hostname)
CPUS=$(nproc)
export SLURM_CONF="$WORK/slurm.conf"
cat > "$SLURM_CONF" <<EOF
ClusterName=lrbench
SlurmctldHost=$HOST(127.0.0.1)
SlurmctldPort=$(free_port)
SlurmdPort=$(free_port)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$WORK/munge/munge.sock
CredType=cred/munge
StateSaveLocation=$WORK/state
SlurmdSpoolDir=$WORK/spool
SlurmctldPidFile=$WORK/slurmctld.pid
SlurmdPidFile=$WORK/slurmd.pid
SlurmctldLogFile=$WORK/log/slurmctld.log
SlurmdLogFile=$WORK/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SwitchType=switch/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
KillWait=10
NodeName=$HOST NodeAddr=127.0.0.1 CPUs=$CPUS State=UNKNOWN
PartitionName=lr Nodes=$HOST Default=YES OverSubscribe=FORCE:8 MaxTime=30 State=UP
EOF
munged -F --key-file="$WORK/key/munge.key" --socket="$WORK/munge/munge.sock" \
  --pid-file="$WORK/munge/munged.pid" --log-file="$WORK/log/munged.log" \
  --seed-file="$WORK/key/munged.seed" >"$WORK/log/munged.out" 2>&1 &
DAEMONS+=($!)
for _ in $(seq 50); do [ -S "$WORK/munge/munge.sock" ] && break; sleep 0.2; done
slurmctld -D -f "$SLURM_CONF" >"$WORK/log/slurmctld.out" 2>&1 &
DAEMONS+=($!)
slurmd -D -N "$HOST" -f "$SLURM_CONF" >"$WORK/log/slurmd.out" 2>&1 &
DAEMONS+=($!)
for _ in $(seq 150); do [ "$(sinfo -h -o %t 2>/dev/null)" = idle ] && break; sleep 0.4; done
[ "$(sinfo -h -o %t 2>/dev/null)" = idle ] || { echo "mesh_slurm_load: the node never became idle" >&2; tail "$WORK"/log/*; exit 1; }

# --- the load: every core busy with other programs
if [ "$LOAD" = 1 ]; then
  if command -v stress-ng >/dev/null; then
    stress-ng --cpu "$CPUS" --timeout 7200s --quiet &
    LOADPIDS+=($!)
    LOADDESC="stress-ng --cpu $CPUS"
  else
    for _ in $(seq "$CPUS"); do sh -c 'while :; do :; done' & LOADPIDS+=($!); done
    LOADDESC="$CPUS shell busy loops"
  fi
else
  LOADDESC="none (other work on the machine only)"
fi
sleep 2

# One run: srun of 4 ranks with a wrapper that notes each rank's PID; $1 the document's name,
# $2 "kill", "pause" or "" (the fault), the rest extra mesh options.
one_run() {
  local name=$1 fault=$2; shift 2
  local d="$WORK/run-$name"
  mkdir -p "$d"
  timeout -k 10 300 srun -n4 --overcommit \
    sh -c 'echo $$ > "$0/rank$SLURM_PROCID.pid"; exec "$@"' "$d" \
    "$BIN" mesh --json --join-timeout 60 -t "$TIME" "$@" \
    >"$OUT/$name.json" 2>"$OUT/$name.err" &
  RUNPID=$!
  if [ -n "$fault" ]; then
    local victim=2 sig=KILL
    [ "$fault" = pause ] && { victim=3; sig=STOP; }
    for _ in $(seq 150); do [ -s "$d/rank$victim.pid" ] && [ -s "$d/rank0.pid" ] && break; sleep 0.2; done
    sleep $((3 + 2 * ${TIME%.*}))
    kill "-$sig" "$(cat "$d/rank$victim.pid")" 2>/dev/null || true
    if [ "$fault" = pause ]; then
      # srun waits for the stopped rank: kill it once rank 0 is done.
      local r0; r0=$(cat "$d/rank0.pid")
      for _ in $(seq 1500); do kill -0 "$r0" 2>/dev/null || break; sleep 0.2; done
      kill -KILL "$(cat "$d/rank$victim.pid")" 2>/dev/null || true
    fi
  fi
  local rc=0
  wait "$RUNPID" || rc=$?
  RUNPID=""
  echo "$rc" >"$OUT/$name.rc"
}

echo "mesh_slurm_load: $BIN, load: $LOADDESC, -t $TIME, $RUNS runs + $KILLS killed + $PAUSES paused; documents in $OUT" >&2
start=$(date +%s)
for i in $(seq -w 1 "$RUNS"); do one_run "load-$i" ""; echo "run load-$i: exit $(cat "$OUT/load-$i.rc")" >&2; done
for i in $(seq -w 1 "$KILLS"); do one_run "killed-$i" kill; echo "run killed-$i: exit $(cat "$OUT/killed-$i.rc")" >&2; done
for i in $(seq -w 1 "$PAUSES"); do one_run "paused-$i" pause; echo "run paused-$i: exit $(cat "$OUT/paused-$i.rc")" >&2; done
echo "mesh_slurm_load: $(($(date +%s) - start)) s of runs" >&2

python3 - "$OUT" "$RUNS" "$KILLS" "$PAUSES" <<'EOF'
import json, sys, collections, os
out, runs, kills, pauses = sys.argv[1], *map(int, sys.argv[2:])
bad_any = False
def check(kind, n, lost_rank):
    global bad_any
    links, nodes, accused, reasons = collections.Counter(), collections.Counter(), [], collections.Counter()
    lost_ok = 0
    for i in range(1, n + 1):
        name = f"{kind}-{i:0{len(str(n))}d}"
        try:
            d = json.load(open(os.path.join(out, name + ".json")))
        except Exception as e:
            accused.append(f"{name}: no document ({e})")
            continue
        rc = open(os.path.join(out, name + ".rc")).read().strip()
        line = collections.Counter(l["status"] for l in d["links"])
        links.update(line)
        nodes.update(n["status"] for n in d["nodes"])
        reasons.update(l["unconfirmed"] for l in d["links"] if l["unconfirmed"])
        for l in d["links"]:
            e = l["explanation"]
            ends = {l["tx"], l["rx"]}
            if l["status"] in ("slow", "lossy") or "cable" in e or "suspect this link" in e:
                accused.append(f"{name}: {l['tx']}->{l['rx']} {l['status']}: {e}")
            if lost_rank is not None and lost_rank in ends and l["status"] not in ("unreachable", "cut_short", "ok", "unconfirmed"):
                accused.append(f"{name}: link of the lost rank {l['tx']}->{l['rx']} {l['status']}")
            if lost_rank is None and l["status"] in ("unreachable", "cut_short"):
                accused.append(f"{name}: {l['tx']}->{l['rx']} {l['status']} with no rank lost: {e}")
        for nd in d["nodes"]:
            if nd["status"] in ("tx_degraded", "rx_degraded", "both"):
                accused.append(f"{name}: node {nd['label']} {nd['status']}: {nd['explanation']}")
            if lost_rank is None and nd["status"] == "unreachable":
                accused.append(f"{name}: node {nd['label']} unreachable (live rank lost?): {nd['explanation']}")
        if lost_rank is not None and d["lost"] == [lost_rank]:
            lost_ok += 1
        print(f"  {name}: exit {rc}, healthy {d['healthy']}, lost {d['lost']}, links " +
              ", ".join(f"{k} {v}" for k, v in sorted(line.items())))
    print(f"{kind}: {n} runs; links: " + ", ".join(f"{k} {v}" for k, v in sorted(links.items())) +
          "; nodes: " + ", ".join(f"{k} {v}" for k, v in sorted(nodes.items())) +
          ("; unconfirmed because: " + ", ".join(f"{k} {v}" for k, v in sorted(reasons.items())) if reasons else ""))
    if lost_rank is not None:
        print(f"{kind}: rank {lost_rank} lost (and no other) in {lost_ok} of {n} runs")
        if lost_ok != n:
            bad_any = True
    print(f"{kind}: {len(accused)} verdict(s) blaming hardware or losing a live rank")
    for a in accused:
        print("    " + a)
    bad_any |= bool(accused)
check("load", runs, None)
if kills: check("killed", kills, 2)
if pauses: check("paused", pauses, 3)
sys.exit(1 if bad_any else 0)
EOF
