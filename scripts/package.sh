#!/usr/bin/env bash
# Build the Debian package: target/debian/linerate_<version>-1_<arch>.deb (its path on stdout).
#   scripts/package.sh          build the .deb with `cargo deb` (scripts/setup-tests.sh installs it)
#   scripts/package.sh --regen  rewrite packaging/man and packaging/completions from the clap
#                               definitions (after changing a subcommand, a flag or a help text;
#                               crates/linerate-cli/tests/generated.rs fails until you do)
set -euo pipefail
cd "$(dirname "$0")/.."

# The completion files' names; the .deb's assets (crates/linerate-cli/Cargo.toml) and
# crates/linerate-cli/tests/generated.rs name the same files.
COMPLETIONS=(bash:linerate.bash zsh:_linerate fish:linerate.fish elvish:linerate.elv powershell:_linerate.ps1)

regen() {
    cargo build --locked -q -p linerate --bin linerate
    local bin="${CARGO_TARGET_DIR:-target}/debug/linerate"
    rm -f packaging/man/*.1
    "$bin" generate man packaging/man >/dev/null
    mkdir -p packaging/completions
    local sf
    for sf in "${COMPLETIONS[@]}"; do
        "$bin" generate completions "${sf%%:*}" >"packaging/completions/${sf#*:}"
    done
    echo "package: regenerated packaging/man ($(ls packaging/man | wc -l) pages) and packaging/completions" >&2
}

case "${1:-}" in
--regen)
    regen
    ;;
"")
    if ! cargo deb --version >/dev/null 2>&1; then
        echo "package: cargo-deb is missing: run scripts/setup-tests.sh (or cargo install cargo-deb --locked)" >&2
        exit 1
    fi
    # --locked: the same dependency versions as every other build of this tree.
    # --strip: the release profile keeps line tables for perf; the package ships without them.
    cargo deb -p linerate --locked --strip
    ;;
*)
    echo "usage: scripts/package.sh [--regen]" >&2
    exit 2
    ;;
esac
