#!/usr/bin/env bash
# Re-capture every golden transcript in this directory from real iperf3 binaries (by hand; the
# tests only read the files). Builds: /work/wt/iperf3-builds/VERSION/src/iperf3 (see the README
# there) or IPERF3_BUILDS; Debian's 3.12 is /usr/bin/iperf3.
#
#   crates/linerate-iperf3/tests/transcripts/capture_all.sh            # everything
#   crates/linerate-iperf3/tests/transcripts/capture_all.sh 3.21       # one version's own pairs
set -euo pipefail
cd "$(dirname "$0")"
builds=${IPERF3_BUILDS:-/work/wt/iperf3-builds}

bin() {
    if [ "$1" = 3.12 ]; then echo /usr/bin/iperf3; else echo "$builds/$1/src/iperf3"; fi
}

# capture DIR NAME CLIENT_VERSION SERVER_VERSION CLIENT_ARGS [SERVER_ARGS] [--busy]
capture() {
    local dir=$1 name=$2 cv=$3 sv=$4 cargs=$5 sargs=${6:-} extra=${7:-}
    mkdir -p "$dir"
    echo "== $dir/$name.txt: $cv client ($cargs) -> $sv server ($sargs)" >&2
    # shellcheck disable=SC2086
    timeout 120 python3 capture.py --server "$(bin "$sv")" --client "$(bin "$cv")" \
        --client-args="$cargs" --server-args="$sargs" $extra --out "$dir/$name.txt" >/dev/null
}

# Ages of the features: --bidir 3.7, --server-bitrate-limit 3.9, --server-max-duration 3.20.
version_ge() { [ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -1)" = "$2" ]; }

same_version() {
    local v=$1
    capture "$v" tcp "$v" "$v" "-t 1"
    capture "$v" reverse "$v" "$v" "-t 1 -R"
    capture "$v" parallel "$v" "$v" "-t 1 -P 2"
    version_ge "$v" 3.7 && capture "$v" bidir "$v" "$v" "-t 1 --bidir"
    capture "$v" udp64 "$v" "$v" "-t 1 -u -b 10M -l 1400 --udp-counters-64bit"
    capture "$v" udp-reverse "$v" "$v" "-t 1 -u -b 10M -l 1400 -R"
    capture "$v" omit "$v" "$v" "-t 2 -O 1 -u -b 10M -l 1400"
    capture "$v" server-output-text "$v" "$v" "-t 1 --get-server-output"
    capture "$v" server-output-json "$v" "$v" "-t 1 --get-server-output" "-J"
    capture "$v" busy "$v" "$v" "-t 1" "" --busy
    capture "$v" udp-impaired "$v" "$v" "-t 2 -u -b 1M -l 1400 --get-server-output" "-J" --udp-impair
    capture "$v" udp64-impaired "$v" "$v" "-t 2 -u -b 1M -l 1400 --udp-counters-64bit --get-server-output" "-J" --udp-impair
    version_ge "$v" 3.9 && capture "$v" error-bitrate-limit "$v" "$v" "-t 1 -b 100M" "--server-bitrate-limit 10M"
    version_ge "$v" 3.20 && capture "$v" error-max-duration "$v" "$v" "-t 5" "--server-max-duration 2"
    true
}

versions=("$@")
[ ${#versions[@]} -gt 0 ] || versions=(3.1.3 3.7 3.9 3.12 3.16 3.18 3.21)
for v in "${versions[@]}"; do same_version "$v"; done

if [ $# -eq 0 ]; then
    # Across the ages: a new client and an old server, and the other way round.
    capture 3.21-to-3.1.3 udp 3.21 3.1.3 "-t 1 -u -b 10M -l 1400"
    capture 3.21-to-3.1.3 tcp 3.21 3.1.3 "-t 1"
    capture 3.21-to-3.1.3 bidir 3.21 3.1.3 "-t 1 --bidir"
    capture 3.1.3-to-3.21 udp 3.1.3 3.21 "-t 1 -u -b 10M -l 1400"
    capture 3.1.3-to-3.21 tcp 3.1.3 3.21 "-t 1 -P 2"
    capture 3.12-to-3.21 udp-reverse 3.12 3.21 "-t 1 -u -b 10M -l 1400 -R"
fi
