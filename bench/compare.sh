#!/usr/bin/env bash
# Side-by-side benchmark: linerate against the peer tools (iperf3, iperf2, nuttcp, netperf, sockperf).
#
#   bench/compare.sh --install                       # install the peers from Debian (root, idempotent)
#   bench/compare.sh                                 # loopback, every test, 3 rounds of 5 s
#   bench/compare.sh --path veth --mtu 9000 --shape 10gbit --only tcp1,lat
#   bench/compare.sh --peers-only --path all         # peer side only (no linerate binary needed)
#   bench/compare.sh --dry-run --path veth           # print the commands, run nothing
#
# Runs are alternated (linerate, peer, linerate, peer, ...) because these machines are shared and
# noisy: the ratios of medians taken side by side are what to quote, not absolute figures.
# Parsing, medians, the table and the results JSON are done by bench/compare.py (Python 3 stdlib).
# See bench/README.md for what each number means.
set -uo pipefail

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_DIR=$(cd "$BENCH_DIR/.." && pwd)
PY=(python3 "$BENCH_DIR/compare.py")

# ---------------------------------------------------------------------------------------------------
# Settings (command-line options override them)
# ---------------------------------------------------------------------------------------------------
PATHS=lo                  # lo | veth | all
MTU=1500                  # veth MTU: 1500 | 9000 | 65520
SHAPE=""                  # tbf rate on the sending veth end, e.g. 10gbit ("" = none)
ROUNDS=3                  # alternating rounds per test
TIME=5                    # seconds per run
UDP_RATE=""               # UDP offered rate (iperf3 -b syntax); default 1G, or 90% of --shape
ONLY="tcp1,tcp1_1m,tcp2,tcp_rev,lat,udp,cpu"
LINERATE="target/release/linerate"
PEERS_ONLY=0
DRY_RUN=0
DO_INSTALL=0
DO_CLEANUP=0
KEEP_RAW=0
BUDGET=540                # seconds: runs that would start after this are skipped, not run
PORT_OFFSET=0             # added to every server port (when another copy holds the defaults)

ALL_TESTS=(tcp1 tcp1_1m tcp2 tcp_rev lat udp cpu)

# Namespace and interface names: everything this script creates starts with "lrb-".
NS_A=lrb-a                # clients (and the sending veth end)
NS_B=lrb-b                # servers
VETH_A=lrb-va
VETH_B=lrb-vb
ADDR_A=10.77.0.1
ADDR_B=10.77.0.2

# Server ports (one server per tool, started once per path).
PORT_LINERATE=5301
PORT_IPERF3=5201
PORT_IPERF2=5001
PORT_NETPERF=12865
PORT_SOCKPERF=11111
PORT_NUTTCP=5100          # nuttcp control port (default 5000); data port PORT_NUTTCP+1
                          # (nuttcp's default data port 5001 would collide with iperf2)

usage() {
    sed -n '2,13p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
    cat <<'EOF'
Options:
  --install            install iperf3, iperf (2), nuttcp, sockperf and netperf (non-free) from Debian
  --path lo|veth|all   where to measure (default lo); veth = namespaces lrb-a -> lrb-b
  --mtu N              veth MTU: 1500, 9000 or 65520 (default 1500)
  --shape RATE         tc tbf rate on the sending veth end (lrb-a), e.g. 10gbit, 1gbit
  --rounds N           alternating rounds per test (default 3, at most 20)
  --time T             seconds per run (default 5, at most 60)
  --udp-rate RATE      UDP offered rate, iperf3 -b syntax (default 1G, or 90% of --shape)
  --only LIST          comma-separated tests: tcp1,tcp1_1m,tcp2,tcp_rev,lat,udp,cpu (cpu reuses tcp1's
                       runs; tcp1_1m: both tools with 1 MiB writes, the engines at equal sizes)
  --linerate PATH      linerate binary (default target/release/linerate; built if missing)
  --peers-only         skip linerate: run only the peer side
  --budget S           stop starting new runs after S seconds (default 540)
  --port-offset N      add N to every server port (if another run holds 5201, 5301, ... on lo)
  --keep-raw           keep every run's raw stdout/stderr in bench/results/<timestamp>.raw/
  --dry-run            print the commands that would run, run nothing
  --cleanup            delete namespaces lrb-a/lrb-b left over by a killed run, then exit
  -h, --help           this text
EOF
}

die() { echo "compare.sh: $*" >&2; exit 2; }
log() { echo "[$(date +%H:%M:%S)] $*" >&2; }

parse_args() {
    while (($#)); do
        case "$1" in
            --install) DO_INSTALL=1 ;;
            --cleanup) DO_CLEANUP=1 ;;
            --path) PATHS=${2:?}; shift ;;
            --mtu) MTU=${2:?}; shift ;;
            --shape) SHAPE=${2:?}; shift ;;
            --rounds) ROUNDS=${2:?}; shift ;;
            --time) TIME=${2:?}; shift ;;
            --udp-rate) UDP_RATE=${2:?}; shift ;;
            --only) ONLY=${2:?}; shift ;;
            --linerate) LINERATE=${2:?}; shift ;;
            --peers-only) PEERS_ONLY=1 ;;
            --budget) BUDGET=${2:?}; shift ;;
            --port-offset) PORT_OFFSET=${2:?}; shift ;;
            --keep-raw) KEEP_RAW=1 ;;
            --dry-run) DRY_RUN=1 ;;
            -h|--help) usage; exit 0 ;;
            *) usage >&2; die "unknown option: $1" ;;
        esac
        shift
    done
    case "$PATHS" in lo|veth) ;; all) PATHS="lo veth" ;; *) die "--path must be lo, veth or all" ;; esac
    case "$MTU" in 1500|9000|65520) ;; *) die "--mtu must be 1500, 9000 or 65520" ;; esac
    [[ "$ROUNDS" =~ ^[0-9]+$ ]] && ((ROUNDS >= 1 && ROUNDS <= 20)) || die "--rounds must be 1..20"
    [[ "$TIME" =~ ^[0-9]+$ ]] && ((TIME >= 1 && TIME <= 60)) || die "--time must be 1..60"
    [[ "$BUDGET" =~ ^[0-9]+$ ]] || die "--budget must be a number of seconds"
    [[ "$PORT_OFFSET" =~ ^[0-9]+$ ]] && ((PORT_OFFSET < 50000)) || die "--port-offset must be 0..49999"
    local v
    for v in PORT_LINERATE PORT_IPERF3 PORT_IPERF2 PORT_NETPERF PORT_SOCKPERF PORT_NUTTCP; do
        printf -v "$v" '%d' $((${!v} + PORT_OFFSET))
    done
    if [[ -n "$SHAPE" && ! "$SHAPE" =~ ^[0-9.]+[kmgt]?(bit|bps)$ ]]; then
        die "--shape takes a tc rate such as 10gbit, 500mbit"
    fi
    local t
    for t in ${ONLY//,/ }; do
        [[ " ${ALL_TESTS[*]} " == *" $t "* ]] || die "unknown test '$t' (tests: ${ALL_TESTS[*]})"
    done
    if [[ -z "$UDP_RATE" ]]; then
        if [[ -n "$SHAPE" ]]; then UDP_RATE=$("${PY[@]}" udp-rate "$SHAPE") || die "bad --shape"; else UDP_RATE=1G; fi
    fi
    [[ "$LINERATE" = /* ]] || LINERATE="$REPO_DIR/$LINERATE"
}

want() { [[ ",$ONLY," == *",$1,"* ]]; }

# ---------------------------------------------------------------------------------------------------
# --install: the peers from Debian. netperf lives in the non-free component only, which is added in a
# file of its own for the install and removed again afterwards (also if the install fails).
# ---------------------------------------------------------------------------------------------------
NONFREE_FILE=""

remove_nonfree() {
    if [[ -n "$NONFREE_FILE" && -e "$NONFREE_FILE" ]]; then
        rm -f "$NONFREE_FILE"
        log "install: removed the non-free component again ($NONFREE_FILE)"
        timeout 300 apt-get update -qq || log "install: apt-get update after removing non-free failed"
    fi
    NONFREE_FILE=""
}

# Prints "URI SUITE KEYRING" of the main Debian archive, read from the deb822 sources or sources.list.
debian_mirror() {
    local f uri="" suite="" key=""
    for f in /etc/apt/sources.list.d/*.sources; do
        [[ -e "$f" ]] || continue
        # First stanza whose URIs is a Debian archive (not -security).
        read -r uri suite key < <(awk '
            /^[[:space:]]*$/ { if (u != "") exit; u = s = k = "" }
            /^URIs:/        { for (i = 2; i <= NF; i++) if ($i ~ /\/debian\/?$/) u = $i }
            /^Suites:/      { s = $2 }
            /^Signed-By:/   { k = $2 }
            END             { if (u != "") print u, s, (k == "" ? "-" : k) }' "$f")
        [[ -n "$uri" ]] && { echo "$uri $suite $key"; return 0; }
    done
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
        [[ -e "$f" ]] || continue
        read -r uri suite < <(awk '$1 == "deb" {
                i = 2; if ($2 ~ /^\[/) while ($i !~ /\]$/) i++; if ($2 ~ /^\[/) i++
                if ($i ~ /\/debian\/?$/) { print $i, $(i+1); exit } }' "$f")
        [[ -n "$uri" ]] && { echo "$uri $suite -"; return 0; }
    done
    return 1
}

nonfree_enabled() {
    grep -hEqs '^(Components:.*[[:space:]]non-free([[:space:]]|$)|deb[[:space:]].*[[:space:]]non-free([[:space:]]|$))' \
        /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources
}

installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }

install_peers() {
    [[ "$(id -u)" -eq 0 ]] || die "--install needs root (apt-get)"
    export DEBIAN_FRONTEND=noninteractive
    local main_pkgs=(iperf3 iperf nuttcp sockperf iproute2 procps) need=() p
    for p in "${main_pkgs[@]}"; do installed "$p" || need+=("$p"); done
    if ((${#need[@]} == 0)) && installed netperf; then
        log "install: every peer is already installed"
        return 0
    fi
    log "install: apt-get update"
    timeout 300 apt-get update -qq || die "apt-get update failed"
    if ((${#need[@]})); then
        log "install: ${need[*]}"
        timeout 600 apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null \
            || die "apt-get install ${need[*]} failed"
    fi
    if ! installed netperf; then
        if nonfree_enabled; then
            log "install: non-free is already enabled in the apt sources"
        else
            local uri suite key
            read -r uri suite key < <(debian_mirror) || die "no Debian archive found in the apt sources"
            [[ -n "$uri" && -n "$suite" ]] || die "no Debian archive found in the apt sources"
            trap remove_nonfree EXIT
            if compgen -G '/etc/apt/sources.list.d/*.sources' >/dev/null; then
                # deb822, as Debian 12 installs it
                NONFREE_FILE=/etc/apt/sources.list.d/lrb-nonfree.sources
                {
                    echo "Types: deb"
                    echo "URIs: $uri"
                    echo "Suites: $suite"
                    echo "Components: non-free"
                    [[ "$key" != "-" ]] && echo "Signed-By: $key"
                } >"$NONFREE_FILE"
            else
                # one-line format of /etc/apt/sources.list
                NONFREE_FILE=/etc/apt/sources.list.d/lrb-nonfree.list
                echo "deb $uri $suite non-free" >"$NONFREE_FILE"
            fi
            log "install: added the non-free component ($NONFREE_FILE: $uri $suite); apt-get update"
            timeout 300 apt-get update -qq || { remove_nonfree; die "apt-get update with non-free failed"; }
        fi
        log "install: netperf"
        timeout 600 apt-get install -y -qq --no-install-recommends netperf >/dev/null
        local rc=$?
        remove_nonfree
        trap - EXIT
        ((rc == 0)) || die "apt-get install netperf failed"
        # The package may start a system netserver on 12865; ours run on their own, so stop it.
        if command -v systemctl >/dev/null && systemctl is-active --quiet netperf 2>/dev/null; then
            log "install: note: a system netserver (netperf.service) is running on port 12865"
        fi
    fi
    for p in iperf3 iperf nuttcp sockperf netperf netserver; do
        command -v "$p" >/dev/null || die "install: $p still missing"
    done
    log "install: done: $(peer_versions | tr '\n' ';')"
}

peer_versions() {
    local p
    for p in iperf3 iperf nuttcp sockperf netperf; do
        printf '%s %s\n' "$p" "$(dpkg-query -W -f='${Version}' "$p" 2>/dev/null || echo missing)"
    done
}

# ---------------------------------------------------------------------------------------------------
# Execution helpers. Everything that runs goes through run_cmd (so --dry-run can print it), and every
# client through timeout.
# ---------------------------------------------------------------------------------------------------
SRV_PREFIX=()   # command prefix that puts a process in the server namespace ("" on lo)
CLI_PREFIX=()   # the same for clients
HOST=""         # address the clients connect to
BIND=""         # address the servers bind to (127.0.0.1 on lo, so they never listen on eth0)
CUR_PATH=""
NS_CREATED=0
declare -A SERVER_PID=()   # tool -> pid of the timeout wrapping its server
declare -A SERVER_ERR=()   # tool -> why its server is not running ("" = running)
declare -A TIMED_OUT=()    # path:test:tool -> round in which its client timed out
START_TS=$SECONDS
CLIENT_PID=""              # pid of the timeout wrapping the client now running

run_cmd() {
    if ((DRY_RUN)); then
        printf '+ %s\n' "$*"
        return 0
    fi
    "$@"
}

# ---------------------------------------------------------------------------------------------------
# veth path: two namespaces and a veth pair created inside them (the host's interfaces are untouched).
# ---------------------------------------------------------------------------------------------------
ns_exists() { ip netns list 2>/dev/null | awk '{print $1}' | grep -qx "$1"; }

setup_veth() {
    if ((!DRY_RUN)) && { ns_exists "$NS_A" || ns_exists "$NS_B"; }; then
        log "veth: namespace $NS_A or $NS_B exists already"
        return 1
    fi
    log "veth: namespaces $NS_A ($ADDR_A) <-> $NS_B ($ADDR_B), MTU $MTU${SHAPE:+, tbf $SHAPE on $VETH_A}"
    NS_CREATED=1
    run_cmd ip netns add "$NS_A" || return 1
    run_cmd ip netns add "$NS_B" || return 1
    # Created inside lrb-a, peer end moved straight into lrb-b: never exists in the host namespace.
    run_cmd ip -n "$NS_A" link add "$VETH_A" mtu "$MTU" type veth peer name "$VETH_B" netns "$NS_B" mtu "$MTU" || return 1
    run_cmd ip -n "$NS_A" addr add "$ADDR_A/24" dev "$VETH_A" || return 1
    run_cmd ip -n "$NS_B" addr add "$ADDR_B/24" dev "$VETH_B" || return 1
    run_cmd ip -n "$NS_A" link set lo up || return 1
    run_cmd ip -n "$NS_B" link set lo up || return 1
    run_cmd ip -n "$NS_A" link set "$VETH_A" up || return 1
    run_cmd ip -n "$NS_B" link set "$VETH_B" up || return 1
    if [[ -n "$SHAPE" ]]; then
        # burst: at least 4 ms of the rate (one tick at HZ=250) and two frames (tbf splits GSO
        # packets larger than the burst), so the bucket is not what limits; latency bounds the queue.
        local burst
        burst=$("${PY[@]}" tbf-burst "$SHAPE" "$MTU") || return 1
        run_cmd ip netns exec "$NS_A" tc qdisc add dev "$VETH_A" root tbf rate "$SHAPE" burst "$burst" latency 20ms || return 1
    fi
    if ((!DRY_RUN)); then
        # Bounded wait until both ends report carrier (a veth pair is up at once, normally).
        local i
        for ((i = 0; i < 20; i++)); do
            ip -n "$NS_A" link show "$VETH_A" | grep -q LOWER_UP && ip -n "$NS_B" link show "$VETH_B" | grep -q LOWER_UP && break
            sleep 0.1
        done
        ((i < 20)) || { log "veth: $VETH_A/$VETH_B did not come up"; return 1; }
    fi
}

teardown_veth() {
    ((NS_CREATED)) || return 0
    local ns
    for ns in "$NS_A" "$NS_B"; do
        if ((DRY_RUN)); then run_cmd ip netns del "$ns"; continue; fi
        ns_exists "$ns" && ip netns del "$ns"
    done
    NS_CREATED=0
}

use_path() {
    CUR_PATH=$1
    case "$1" in
        lo)   SRV_PREFIX=(); CLI_PREFIX=(); HOST=127.0.0.1; BIND=127.0.0.1 ;;
        veth) SRV_PREFIX=(ip netns exec "$NS_B"); CLI_PREFIX=(ip netns exec "$NS_A"); HOST=$ADDR_B; BIND=$ADDR_B ;;
    esac
}

# ---------------------------------------------------------------------------------------------------
# Servers: one per tool and path, wrapped in timeout (so none outlives the script even if it is
# killed with SIGKILL), killed by pid when the path is done and on exit.
# ---------------------------------------------------------------------------------------------------
server_cmd() {
    case "$1" in
        linerate) echo "$LINERATE serve -p $PORT_LINERATE" ;;
        iperf3)   echo "iperf3 -s -p $PORT_IPERF3 -B $BIND" ;;
        iperf2)   echo "iperf -s -p $PORT_IPERF2 -B $BIND" ;;
        netperf)  echo "netserver -D -p $PORT_NETPERF -L $BIND" ;;
        sockperf) echo "sockperf server --tcp -i $BIND -p $PORT_SOCKPERF" ;;
        nuttcp)   echo "nuttcp -S --nofork -P $PORT_NUTTCP" ;;
    esac
}

server_port() {
    case "$1" in
        linerate) echo $PORT_LINERATE ;; iperf3) echo $PORT_IPERF3 ;; iperf2) echo $PORT_IPERF2 ;;
        netperf) echo $PORT_NETPERF ;; sockperf) echo $PORT_SOCKPERF ;; nuttcp) echo $PORT_NUTTCP ;;
    esac
}

port_listening() {  # port: is a TCP listener on it in the server namespace?
    "${SRV_PREFIX[@]}" ss -Hltn "sport = :$1" 2>/dev/null | grep -q .
}

start_server() {
    local tool=$1 port cmd life
    port=$(server_port "$tool")
    read -r -a cmd <<<"$(server_cmd "$tool")"
    # Lifetime cap: the whole budget plus the longest run plus slack.
    life=$((BUDGET + 2 * TIME + 120))
    SERVER_ERR[$tool]=""
    if ((DRY_RUN)); then
        run_cmd timeout -k 3 "$life" "${SRV_PREFIX[@]}" "${cmd[@]}" "&"
        SERVER_PID[$tool]=dry
        return 0
    fi
    if ! command -v "${cmd[0]}" >/dev/null 2>&1 && [[ ! -x "${cmd[0]}" ]]; then
        SERVER_ERR[$tool]="${cmd[0]} not installed (bench/compare.sh --install)"
        log "server $tool: ${SERVER_ERR[$tool]}"
        return 1
    fi
    if port_listening "$port"; then
        SERVER_ERR[$tool]="port $port already in use on path $CUR_PATH (another server? try --port-offset N)"
        log "server $tool: ${SERVER_ERR[$tool]}"
        return 1
    fi
    local errf="$RAW_DIR/server-$CUR_PATH-$tool.err"
    timeout -k 3 "$life" "${SRV_PREFIX[@]}" "${cmd[@]}" >"$RAW_DIR/server-$CUR_PATH-$tool.out" 2>"$errf" </dev/null &
    SERVER_PID[$tool]=$!
    local i
    for ((i = 0; i < 50; i++)); do          # up to 5 s for it to listen
        port_listening "$port" && break
        if ! kill -0 "${SERVER_PID[$tool]}" 2>/dev/null; then break; fi
        sleep 0.1
    done
    if ! port_listening "$port"; then
        # Reason: its first "error" line, else its last line.
        local why
        why=$(grep -i -m1 error "$errf" 2>/dev/null || tail -n 1 "$errf" 2>/dev/null)
        why=$(printf '%s' "$why" | tr -d '\r' | cut -c1-120)
        stop_server "$tool"
        SERVER_ERR[$tool]="'${cmd[*]##*/}' did not start: ${why:-not listening on port $port after 5 s}"
        log "server $tool: ${SERVER_ERR[$tool]}"
        return 1
    fi
    log "server $tool: pid ${SERVER_PID[$tool]}: ${SRV_PREFIX[*]} ${cmd[*]}"
}

stop_server() {
    local tool=$1 pid=${SERVER_PID[$1]:-} i
    [[ -n "$pid" ]] || return 0
    unset 'SERVER_PID[$tool]'
    if [[ "$pid" == dry ]]; then run_cmd kill "<pid of $tool server>"; return 0; fi
    # timeout passes TERM on to the server and, 3 s later (-k 3), KILLs it if still there; the
    # KILL below is for timeout itself only if it has not gone after 5 s.
    kill -TERM "$pid" 2>/dev/null
    for ((i = 0; i < 50; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    SERVER_ERR[$tool]="stopped"
}

restart_server() { stop_server "$1"; start_server "$1"; }

stop_all_servers() {
    local t
    for t in "${!SERVER_PID[@]}"; do stop_server "$t"; done
}

cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    if [[ -n "$CLIENT_PID" ]]; then
        kill -TERM "$CLIENT_PID" 2>/dev/null
        wait "$CLIENT_PID" 2>/dev/null
    fi
    stop_all_servers
    teardown_veth
    if [[ -n "${RAW_DIR:-}" && -d "$RAW_DIR" && $KEEP_RAW -eq 0 ]]; then rm -rf "$RAW_DIR"; fi
    exit "$rc"
}

# ---------------------------------------------------------------------------------------------------
# Client commands. Each prints the argv of one run of TOOL for TEST on the current path.
# ---------------------------------------------------------------------------------------------------
client_cmd() {
    local tool=$1 test=$2 T=$TIME
    case "$tool:$test" in
        linerate:tcp1)    echo "$LINERATE bench $HOST -p $PORT_LINERATE -t $T -J" ;;
        linerate:tcp1_1m) echo "$LINERATE bench $HOST -p $PORT_LINERATE -t $T -l 1M -J" ;;
        linerate:tcp2)    echo "$LINERATE bench $HOST -p $PORT_LINERATE -t $T -P 2 -J" ;;
        linerate:tcp_rev) echo "$LINERATE bench $HOST -p $PORT_LINERATE -R -t $T -J" ;;
        linerate:lat)     echo "$LINERATE bench $HOST -p $PORT_LINERATE --latency -t $T -J" ;;
        linerate:udp)     echo "$LINERATE bench $HOST -p $PORT_LINERATE -u -b $UDP_RATE -t $T -J" ;;
        iperf3:tcp1)      echo "iperf3 -c $HOST -p $PORT_IPERF3 -t $T -J" ;;
        iperf3:tcp1_1m)   echo "iperf3 -c $HOST -p $PORT_IPERF3 -t $T -l 1M -J" ;;
        iperf3:tcp2)      echo "iperf3 -c $HOST -p $PORT_IPERF3 -t $T -P 2 -J" ;;
        iperf3:tcp_rev)   echo "iperf3 -c $HOST -p $PORT_IPERF3 -t $T -R -J" ;;
        iperf3:udp)       echo "iperf3 -c $HOST -p $PORT_IPERF3 -u -b $UDP_RATE -t $T -J" ;;
        iperf2:tcp2)      echo "iperf -c $HOST -p $PORT_IPERF2 -t $T -P 2 -y C" ;;
        nuttcp:tcp1)      echo "nuttcp -P $PORT_NUTTCP -p $((PORT_NUTTCP + 1)) -T $T -fparse $HOST" ;;
        netperf:lat)      echo "netperf -H $HOST -p $PORT_NETPERF -t TCP_RR -l $T -- -o mean_latency,P50_LATENCY,P99_LATENCY,TRANSACTION_RATE" ;;
        sockperf:lat)     echo "sockperf ping-pong -i $HOST -p $PORT_SOCKPERF --tcp -t $T" ;;
    esac
}

# Which tools each test runs, in the order they alternate (linerate first).
test_tools() {
    local lr=linerate
    ((PEERS_ONLY)) && lr=""
    case "$1" in
        tcp1)    echo $lr iperf3 nuttcp ;;
        tcp2)    echo $lr iperf3 iperf2 ;;
        tcp1_1m) echo $lr iperf3 ;;
        tcp_rev) echo $lr iperf3 ;;
        lat)     echo $lr netperf sockperf ;;
        udp)     echo $lr iperf3 ;;
    esac
}

# Tests that actually run: cpu has no runs of its own (it reads tcp1's), so it pulls tcp1 in.
run_tests() {
    local t sel=()
    for t in tcp1 tcp1_1m tcp2 tcp_rev lat udp; do
        if want "$t" || { [[ $t == tcp1 ]] && want cpu; }; then sel+=("$t"); fi
    done
    echo "${sel[*]}"
}

client_timeout() { echo $((TIME + 20)); }   # setup + run + teardown; sockperf warms up ~1-2 s

# One run: executes the client, records it in the manifest, prints a one-line summary.
RUN_NO=0
run_one() {
    local path=$1 test=$2 tool=$3 round=$4 cmd to
    read -r -a cmd <<<"$(client_cmd "$tool" "$test")"
    to=$(client_timeout)
    if ((DRY_RUN)); then
        run_cmd timeout -k 3 "$to" "${CLI_PREFIX[@]}" "${cmd[@]}"
        return 0
    fi
    RUN_NO=$((RUN_NO + 1))
    local base
    base="$RAW_DIR/$(printf '%03d' $RUN_NO)-$path-$test-$tool-r$round"
    local out="$base.out" err="$base.err" rc t0 t1 note=""
    local elapsed=$((SECONDS - START_TS))
    if ((elapsed + TIME > BUDGET)); then
        note="skipped: time budget of ${BUDGET}s used up"
        rc=-1; : >"$out"; : >"$err"; t0=$SECONDS; t1=$SECONDS
    elif [[ -n "${TIMED_OUT[$path:$test:$tool]:-}" ]]; then
        note="skipped: timed out in round ${TIMED_OUT[$path:$test:$tool]}"
        rc=-1; : >"$out"; : >"$err"; t0=$SECONDS; t1=$SECONDS
    elif [[ -n "${SERVER_ERR[$tool]:-}" ]]; then
        note="${SERVER_ERR[$tool]}"
        rc=-1; : >"$out"; : >"$err"; t0=$SECONDS; t1=$SECONDS
    else
        t0=$(date +%s.%N)
        # In the background + wait, so that a signal runs the cleanup trap at once (bash defers
        # traps until a foreground child returns) and the cleanup can kill this client.
        timeout -k 3 "$to" "${CLI_PREFIX[@]}" "${cmd[@]}" >"$out" 2>"$err" </dev/null &
        CLIENT_PID=$!
        wait "$CLIENT_PID"
        rc=$?
        CLIENT_PID=""
        t1=$(date +%s.%N)
        # A hung tool would cost T+20 s in every round: run it no more in this test.
        ((rc == 124 || rc == 137)) && TIMED_OUT[$path:$test:$tool]=$round
    fi
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$path" "$test" "$tool" "$round" "$rc" \
        "$t0" "$t1" "$out" "$err" "${note:-${cmd[*]}}" >>"$MANIFEST"
    local summary
    summary=$("${PY[@]}" one "$tool" "$test" "$out" "$err" "$rc" "$note" 2>&1)
    log "$path $test round $round $tool: $summary"
    # A failed run can leave a server wedged (iperf3 serves one test at a time): restart it.
    if [[ "$summary" == failed* && -z "$note" && -n "${SERVER_PID[$tool]:-}" ]]; then
        log "restarting the $tool server after a failed run"
        restart_server "$tool"
    fi
}

# ---------------------------------------------------------------------------------------------------
# One path: set it up, start the servers the selected tests need, alternate the runs, tear down.
# ---------------------------------------------------------------------------------------------------
run_path() {
    local path=$1 tests tools=() t tool r
    use_path "$path"
    if [[ "$path" == veth ]]; then
        if ! setup_veth; then
            log "veth: setup failed; skipping the veth path"
            teardown_veth
            echo -e "$path\t-\t-\t0\t-1\t0\t0\t-\t-\tveth setup failed" >>"$MANIFEST"
            return 1
        fi
    fi
    tests=$(run_tests)
    # Servers needed: the union of the tools of the tests that run.
    for t in $tests; do
        for tool in $(test_tools "$t"); do
            [[ " ${tools[*]} " == *" $tool "* ]] || tools+=("$tool")
        done
    done
    for tool in "${tools[@]}"; do start_server "$tool"; done
    for t in $tests; do
        for ((r = 1; r <= ROUNDS; r++)); do
            for tool in $(test_tools "$t"); do
                run_one "$path" "$t" "$tool" "$r"
            done
        done
    done
    stop_all_servers
    [[ "$path" == veth ]] && teardown_veth
    return 0
}

ensure_linerate() {
    ((PEERS_ONLY)) && return 0
    [[ -x "$LINERATE" ]] && return 0
    if [[ "$LINERATE" == "$REPO_DIR/target/release/linerate" ]]; then
        log "building linerate: cargo build --release (bounded to 15 min)"
        if ((DRY_RUN)); then run_cmd cargo build --release; return 0; fi
        (cd "$REPO_DIR" && timeout 900 cargo build --release --locked) || die "cargo build --release failed"
    else
        ((DRY_RUN)) || die "--linerate $LINERATE: not an executable"
    fi
}

main() {
    parse_args "$@"
    if ((DO_INSTALL)); then install_peers; exit $?; fi
    if ((DO_CLEANUP)); then
        local ns
        for ns in "$NS_A" "$NS_B"; do
            ns_exists "$ns" || continue
            # Processes a killed run left inside our namespaces (servers are capped by timeout anyway).
            local pids
            pids=$(ip netns pids "$ns" 2>/dev/null | tr '\n' ' ')
            [[ -n "${pids// /}" ]] && { log "killing pids $pids in $ns"; kill $pids 2>/dev/null; sleep 0.5; }
            ip netns del "$ns" && log "deleted namespace $ns"
        done
        exit 0
    fi
    if [[ " $PATHS " == *" veth "* && $DRY_RUN -eq 0 ]]; then
        [[ $(id -u) -eq 0 ]] || die "--path veth needs root (ip netns)"
        # Checked before anything runs: a namespace of ours that exists already is a killed run's.
        if ns_exists "$NS_A" || ns_exists "$NS_B"; then
            die "namespace $NS_A or $NS_B exists already (left by a killed run?): bench/compare.sh --cleanup"
        fi
    fi
    ensure_linerate

    local stamp
    stamp=$(date +%Y%m%dT%H%M%S)
    RESULTS_DIR="$BENCH_DIR/results"
    if ((DRY_RUN)); then
        RAW_DIR=""
    else
        mkdir -p "$RESULTS_DIR"
        if ((KEEP_RAW)); then RAW_DIR="$RESULTS_DIR/$stamp.raw"; mkdir -p "$RAW_DIR"; else RAW_DIR=$(mktemp -d); fi
        MANIFEST="$RAW_DIR/manifest.tsv"
        : >"$MANIFEST"
    fi
    trap cleanup EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM

    local n_runs=0 t
    for t in $(run_tests); do n_runs=$((n_runs + ROUNDS * $(test_tools "$t" | wc -w))); done
    local n_paths
    n_paths=$(wc -w <<<"$PATHS")
    log "paths: $PATHS; tests: $ONLY; $ROUNDS rounds of ${TIME}s; $((n_runs * n_paths)) runs," \
        "about $((n_runs * n_paths * (TIME + 1) / 60 + 1)) min (hard stop for new runs after ${BUDGET}s)"

    local p
    for p in $PATHS; do run_path "$p"; done
    ((DRY_RUN)) && return 0

    # Environment facts for the results file.
    local meta="$RAW_DIR/meta.json"
    {
        peer_versions | awk 'BEGIN { printf "{\"peers\": {" } { printf "%s\"%s\": \"%s\"", (NR > 1 ? ", " : ""), $1, $2 } END { printf "}, " }'
        printf '"linerate": "%s", ' "$( ((PEERS_ONLY)) && echo skipped || { "$LINERATE" --version 2>/dev/null | head -1 || echo unknown; })"
        printf '"linerate_path": "%s", "kernel": "%s", "cpus": %s, ' "$LINERATE" "$(uname -r)" "$(nproc)"
        printf '"paths": "%s", "mtu": %s, "shape": "%s", "rounds": %s, "time_s": %s, ' "$PATHS" "$MTU" "$SHAPE" "$ROUNDS" "$TIME"
        printf '"udp_rate": "%s", "only": "%s", "peers_only": %s, "timestamp": "%s"}\n' "$UDP_RATE" "$ONLY" "$PEERS_ONLY" "$stamp"
    } >"$meta"
    "${PY[@]}" report "$MANIFEST" "$meta" "$RESULTS_DIR/$stamp.json" "$ONLY"
}

main "$@"; exit $?   # one line: bash stops reading here even if the file is edited mid-run
