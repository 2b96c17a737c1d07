#!/usr/bin/env bash
# Fuzz linerate's control-protocol decoder, its iperf3 protocol and the decoders below the port
# (module EEPROMs, ethtool and rtnetlink replies; see fuzz/README.md).
#
#   scripts/fuzz.sh                    # every target, 60 s each
#   FUZZ_SECONDS=600 scripts/fuzz.sh   # longer
#   scripts/fuzz.sh decode_frame       # one target
#
# Each target starts from its committed seeds (fuzz/seeds/TARGET, read only) and keeps what it finds
# in fuzz/corpus/TARGET (git-ignored). A target stops at its first crash (input in
# fuzz/artifacts/TARGET/); the others still run, and the script then exits 1. Needs the nightly
# toolchain; installs cargo-fuzz when it is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${FUZZ_SECONDS:-60}
case $seconds in '' | *[!0-9]*)
    echo "fuzz.sh: FUZZ_SECONDS must be a whole number of seconds, not '$seconds'" >&2
    exit 2
    ;;
esac
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(decode_frame validate_params client_session server_session iperf3_frames iperf3_params iperf3_results phy_decoders)

if ! rustup run nightly rustc --version >/dev/null 2>&1; then
    echo "fuzz.sh: the nightly toolchain is needed: rustup toolchain install nightly" >&2
    exit 2
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "== installing cargo-fuzz" >&2
    cargo install cargo-fuzz --locked
fi

failed=()
for t in "${targets[@]}"; do
    if [ ! -d "fuzz/seeds/$t" ]; then
        echo "fuzz.sh: no target '$t' (no fuzz/seeds/$t)" >&2
        exit 2
    fi
    mkdir -p "fuzz/corpus/$t"
    echo "== fuzzing $t for ${seconds}s" >&2
    # The first corpus directory receives new inputs; the seeds are only read.
    if ! cargo +nightly fuzz run "$t" "fuzz/corpus/$t" "fuzz/seeds/$t" -- \
        -max_total_time="$seconds" -print_final_stats=1; then
        echo "fuzz.sh: $t crashed; the input is in fuzz/artifacts/$t/" >&2
        echo "  reproduce: cargo +nightly fuzz run $t fuzz/artifacts/$t/<file>" >&2
        echo "  minimise:  cargo +nightly fuzz tmin $t fuzz/artifacts/$t/<file>" >&2
        failed+=("$t")
    fi
done
if [ ${#failed[@]} -gt 0 ]; then
    echo "== fuzz.sh: CRASH in ${failed[*]} (see fuzz/README.md)" >&2
    exit 1
fi
echo "== fuzz.sh: no crash in ${targets[*]} (${seconds}s each)" >&2
