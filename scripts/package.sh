#!/usr/bin/env bash
# Build linerate's packages from one portable binary (x86_64, glibc 2.28 or newer: RHEL 8,
# Debian 11, Ubuntu 20.04 and later), one path per line on stdout:
#   target/debian/linerate_<version>-1_<arch>.deb and its debug symbols, linerate-dbgsym_....ddeb
#   target/rpm/linerate-<version>-1.<arch>.rpm, the same files laid out for rpm
#   target/dist/linerate-<version>-<triple>.tar.gz, ripgrep's layout, and its .sha256
#   scripts/package.sh          build all three (scripts/setup-tests.sh installs cargo-deb,
#                               cargo-about, cargo-zigbuild and zig, rpm)
#   scripts/package.sh --regen  rewrite packaging/man and packaging/completions from the clap
#                               definitions (after changing a subcommand, a flag or a help text;
#                               crates/linerate-cli/tests/generated.rs fails until you do)
#
# The binary is linked by zig (cargo-zigbuild) against glibc GLIBC_FLOOR's symbols, with the
# stable toolchain: it runs on every glibc from that one on, whatever this machine has.
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
# The oldest glibc the binary runs on: cargo-zigbuild links against this release's symbols.
# scripts/package-test.sh checks the binary needs nothing newer (`objdump -T`).
GLIBC_FLOOR=2.28
TRIPLE="$(uname -m)-unknown-linux-gnu"
# cargo-zigbuild and zig, from PyPI in a virtual environment of their own (scripts/setup-tests.sh);
# LINERATE_ZIG_VENV names another.
ZIG_VENV=${LINERATE_ZIG_VENV:-/opt/linerate-zig/venv}

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
    export PATH="$ZIG_VENV/bin:$PATH"
    cargo deb --version >/dev/null 2>&1 || missing+=("cargo-deb (cargo install cargo-deb --version '~3.8' --locked)")
    cargo about --version >/dev/null 2>&1 || missing+=("cargo-about (cargo install cargo-about --version '~0.9' --locked --features cli)")
    cargo-zigbuild --version >/dev/null 2>&1 || missing+=("cargo-zigbuild and zig (pip install cargo-zigbuild ziglang in $ZIG_VENV)")
    rpmbuild --version >/dev/null 2>&1 || missing+=("rpmbuild (apt install rpm)")
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
    # --locked: the same dependency versions as every other build of this tree.
    cargo zigbuild --release --locked -p linerate --bin linerate --target "$TRIPLE.$GLIBC_FLOOR" >&2
    # cargo-deb strips the binary and writes the .ddeb ([package.metadata.deb] dbgsym).
    local deb
    deb=$(cargo deb -p linerate --locked --no-build --target "$TRIPLE" | tail -n 1)
    echo "$deb"
    ls "$(dirname "$deb")"/linerate-dbgsym_"$version"-1_*.ddeb
    local stage
    stage=$(mktemp -d)
    # shellcheck disable=SC2064
    trap "rm -rf '$stage'" EXIT
    # The .deb's files, its stripped binary among them: the .rpm and the tarball hold the same.
    dpkg-deb -x "$deb" "$stage/deb"
    rpm_package "$version" "$stage"
    tarball "$version" "$stage"
}

# The .rpm: the .deb's files in rpm's places (licences in /usr/share/licenses, zsh's functions in
# site-functions), the Debian-only ones left out (lintian's overrides, the Debian changelog).
rpm_package() {
    local version="$1" stage="$2" root="$2/rpm-root" d=usr/share/doc/linerate arch
    arch=$(uname -m)
    mkdir -p "$root"
    cp -a "$stage/deb/." "$root/"
    rm -rf "$root/usr/share/lintian" "$root/$d/changelog.Debian.gz"
    mkdir -p "$root/usr/share/licenses/linerate" "$root/usr/share/zsh/site-functions"
    mv "$root/$d/copyright" "$root/$d/third-party-licenses.txt.gz" "$root/usr/share/licenses/linerate/"
    cp LICENSE-APACHE LICENSE-MIT "$root/usr/share/licenses/linerate/"
    cp README.md CHANGELOG.md "$root/$d/"
    mv "$root/usr/share/zsh/vendor-completions/_linerate" "$root/usr/share/zsh/site-functions/"
    rmdir "$root/usr/share/zsh/vendor-completions"
    # Dates from the commit, as in the .deb.
    find "$root" -newermt "@$SOURCE_DATE_EPOCH" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +
    local out="${CARGO_TARGET_DIR:-target}/rpm" summary description maintainer
    summary=$(sed -n 's/^description = "\(.*\)"$/\1/p' crates/linerate-cli/Cargo.toml | head -n 1)
    # The .deb's long description, one paragraph in lines of at most 79 columns.
    description="$stage/description"
    dpkg-deb -f "$(ls "${CARGO_TARGET_DIR:-target}"/debian/linerate_"$version"-1_*.deb | head -n 1)" Description |
        tail -n +2 | sed 's/^ //' | tr '\n' ' ' | fold -s -w 79 | sed 's/ *$//' >"$description"
    # rpm's summaries start with a capital.
    summary="${summary^}"
    maintainer=$(sed -n 's/^maintainer = "\(.*\)"$/\1/p' crates/linerate-cli/Cargo.toml)
    mkdir -p "$out" "$stage/rpmbuild"
    rpmbuild -bb --quiet packaging/rpm/linerate.spec \
        --define "_topdir $stage/rpmbuild" --define "_rpmdir $(cd "$out" && pwd)" \
        --define "_build_name_fmt %%{NAME}-%%{VERSION}-%%{RELEASE}.%%{ARCH}.rpm" \
        --define "_dbpath $stage/rpmdb" \
        --define "staging $root" --define "version $version" --define "arch $arch" \
        --define "linerate_summary $summary" \
        --define "linerate_description_file $description" --define "packager $maintainer" \
        --define "changelog_date $(LC_ALL=C date -u -d "@$SOURCE_DATE_EPOCH" '+%a %b %d %Y')" >&2
    ls "$out/linerate-$version-1.$arch.rpm"
}

# The release tarball in ripgrep's layout: linerate-<version>-<triple>/ holding the binary,
# doc/ (the man pages, the changelog, the unit), complete/ (every shell's completion), the
# licences and the README; and its SHA-256 in <tarball>.sha256 (`sha256sum -c` reads it).
tarball() {
    local version="$1" stage="$2" name="linerate-$1-$TRIPLE" out="${CARGO_TARGET_DIR:-target}/dist"
    local t="$stage/tar/$name" sf
    mkdir -p "$t/doc" "$t/complete" "$out"
    cp "$stage/deb/usr/bin/linerate" "$t/"
    cp packaging/man/*.1 CHANGELOG.md packaging/systemd/linerate-serve.service "$t/doc/"
    for sf in "${COMPLETIONS[@]}"; do
        cp "packaging/completions/${sf#*:}" "$t/complete/"
    done
    cp README.md LICENSE-APACHE LICENSE-MIT "$t/"
    cp "$DOC/third-party-licenses.txt.gz" "$t/"
    # Reproducible: names sorted, dates from the commit, no owner, gzip without name or date.
    tar --sort=name --mtime="@$SOURCE_DATE_EPOCH" --owner=0 --group=0 --numeric-owner \
        --mode='u+rwX,go+rX,go-w' -C "$stage/tar" -cf - "$name" | gzip -9n >"$out/$name.tar.gz"
    (cd "$out" && sha256sum "$name.tar.gz" >"$name.tar.gz.sha256")
    ls "$out/$name.tar.gz" "$out/$name.tar.gz.sha256"
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
