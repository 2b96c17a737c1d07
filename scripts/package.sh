#!/usr/bin/env bash
# Build the Debian package: target/debian/linerate_<version>-1_<arch>.deb (its path, the last
# line on stdout) and its debug symbols, target/debian/linerate-dbgsym_<version>-1_<arch>.ddeb.
#   scripts/package.sh          build both with `cargo deb` (scripts/setup-tests.sh installs
#                               cargo-deb and cargo-about)
#   scripts/package.sh --regen  rewrite packaging/man and packaging/completions from the clap
#                               definitions (after changing a subcommand, a flag or a help text;
#                               crates/linerate-cli/tests/generated.rs fails until you do)
#
# Reproducible: two builds of one commit give byte-identical packages, in any directory, on any
# machine with the same toolchain (scripts/package-test.sh checks it). File dates are
# SOURCE_DATE_EPOCH (default: the last commit's date), and the binary names no path of the build
# machine: rustc maps the source tree, the target directory and cargo's registry away
# (--remap-path-prefix). docs/packaging.md has the details.
set -euo pipefail
cd "$(dirname "$0")/.."

# The completion files' names; the .deb's assets (crates/linerate-cli/Cargo.toml) and
# crates/linerate-cli/tests/generated.rs name the same files.
# release_env: the flags that make the build independent of where it happens.
. scripts/lib/release-env.sh

COMPLETIONS=(bash:linerate.bash zsh:_linerate fish:linerate.fish elvish:linerate.elv powershell:_linerate.ps1)
# Generated at package time, named by the .deb's assets and `changelog` in Cargo.toml.
DOC=packaging/generated

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

# The Debian changelog from CHANGELOG.md, and the licences of every crate the binary links.
docs() {
    local version="$1" maintainer
    maintainer=$(sed -n 's/^maintainer = "\(.*\)"$/\1/p' crates/linerate-cli/Cargo.toml)
    rm -rf "$DOC"
    mkdir -p "$DOC"
    cargo run --locked -q -p linerate-dist -- changelog --input CHANGELOG.md --package linerate \
        --version "$version-1" --maintainer "$maintainer" --date "$SOURCE_DATE_EPOCH" >"$DOC/changelog"
    # The crates `linerate` (the binary) depends on for Linux, build and dev dependencies aside
    # (packaging/debian/about.toml); their licence files as the crates ship them.
    cargo about generate --locked --offline --fail \
        --config packaging/debian/about.toml --manifest-path crates/linerate-cli/Cargo.toml \
        packaging/debian/third-party-licenses.hbs >"$DOC/third-party-licenses.txt"
    # -n: no name or date in the gzip header, so the file is the same whenever it is made.
    gzip -9n "$DOC/third-party-licenses.txt"
}

package() {
    local missing=()
    cargo deb --version >/dev/null 2>&1 || missing+=("cargo-deb (cargo install cargo-deb --version '~3.8' --locked)")
    cargo about --version >/dev/null 2>&1 || missing+=("cargo-about (cargo install cargo-about --version '~0.9' --locked --features cli)")
    if ((${#missing[@]})); then
        printf 'package: missing %s: run scripts/setup-tests.sh\n' "${missing[@]}" >&2
        exit 1
    fi
    if [ -z "${SOURCE_DATE_EPOCH:-}" ]; then
        # The last commit's date: the same for every build of a commit. Outside git (a tarball),
        # the changelog's modification time.
        SOURCE_DATE_EPOCH=$(git log -1 --format=%ct 2>/dev/null || stat -c %Y CHANGELOG.md)
    fi
    export SOURCE_DATE_EPOCH
    local version
    version=$(cargo pkgid --locked -p linerate | sed 's/.*[#@]//')
    docs "$version"
    release_env
    # --locked: the same dependency versions as every other build of this tree. cargo-deb
    # strips the binary and writes the .ddeb ([package.metadata.deb] dbgsym).
    cargo deb -p linerate --locked
}

case "${1:-}" in
--regen)
    regen
    ;;
"")
    package
    ;;
*)
    echo "usage: scripts/package.sh [--regen]" >&2
    exit 2
    ;;
esac
