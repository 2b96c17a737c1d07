# shellcheck shell=bash
# Sourced by scripts/package.sh and scripts/package-test.sh (whose `cargo install` check reuses
# the package's build only with the same flags).
#
# Flags for a build that does not depend on where it happens (CARGO_ENCODED_RUSTFLAGS, which
# keeps paths with spaces whole). rustc applies the last matching --remap-path-prefix, so the
# more specific come later: the tree becomes `.`, the target directory (inside it or not)
# `target`, the registry's crates `serde-1.0.229/src/...`.
release_env() {
    local flags=() home target d src
    if [ -n "${CARGO_ENCODED_RUSTFLAGS:-}" ]; then
        IFS=$'\x1f' read -ra flags <<<"$CARGO_ENCODED_RUSTFLAGS"
    elif [ -n "${RUSTFLAGS:-}" ]; then
        read -ra flags <<<"$RUSTFLAGS"
    fi
    # Each directory as given and with its links resolved, when they differ.
    both() { printf '%s\n' "$1" "$(cd "$1" && pwd -P)" | awk '!seen[$0]++'; }
    while read -r d; do
        flags+=("--remap-path-prefix=$d=.")
    done < <(both "$PWD")
    target="${CARGO_TARGET_DIR:-target}"
    mkdir -p "$target"
    while read -r d; do
        flags+=("--remap-path-prefix=$d=target")
    done < <(both "$(cd "$target" && pwd)")
    home="${CARGO_HOME:-$HOME/.cargo}"
    while read -r d; do
        for src in "$d"/registry/src/*/ "$d"/git/checkouts/; do
            flags+=("--remap-path-prefix=$src=")
        done
    done < <(both "$home")
    # A build id, for the .ddeb's /usr/lib/debug/.build-id/ path: zig's linker (the portable
    # build's) adds none unasked.
    flags+=("-Clink-arg=-Wl,--build-id=sha1")
    CARGO_ENCODED_RUSTFLAGS=$(IFS=$'\x1f' && echo "${flags[*]}")
    export CARGO_ENCODED_RUSTFLAGS
    unset RUSTFLAGS
}
